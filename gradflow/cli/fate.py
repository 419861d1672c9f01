"""``gradflow fate``: where full-model training ends against the reduced model's prediction, over
a grid of a system's own axes (:mod:`gradflow.systems.fate`).

    gradflow fate --p 0.5 --q 0.8 --grid 12 --sigma 0,0.01,0.1 --seeds 3
    gradflow fate --model NAME --quick --json

``--model`` picks the system (default ``canonical``): one with a fate map of its own, or any
model that declares a full model — registered, an installed plugin's, or ``FILE.py:FACTORY`` —
with the plane fate map of :mod:`gradflow.systems.plane_fate`; the other options are that system's
(``gradflow fate --model NAME --help`` lists them).  Finished cells are checkpointed in
``--out``'s ``.runs`` folder; run again with the same arguments, an interrupted map continues
where it stopped and writes the same files.  ``--workers N`` runs the cells on a local Dask
cluster of ``N`` processes, ``--scheduler ADDRESS`` on a running one; the files are the same.
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Sequence

from gradflow.systems.fate import config_type, fate_system, fate_systems, quick_config

from ._cluster import add_cluster_arguments, check_cluster, cluster_client
from ._config import add_config_arguments, config_from_args
from ._options import add_output_arguments, check_out, save_and_report
from ._sizes import add_allow_long_argument, announce

DEFAULT = "canonical"


def add_arguments_from(parser: argparse.ArgumentParser, words: Sequence[str]) -> None:
    """``--model NAME`` and the options of that system's configuration."""
    systems = fate_systems()
    parser.add_argument(
        "--model",
        metavar="NAME|FILE.py:FACTORY",
        default=DEFAULT,
        help="the system: "
        + "; ".join(f"{k}: {v.help}" for k, v in systems.items())
        + "; or FILE.py:FACTORY, a reduced model that declares its full model"
        + f" (default {DEFAULT})",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a small map (≤ 60 s on 2 cores): the system's quick settings for every option "
        "not given",
    )
    name = _selected(words)
    system = fate_system(name)
    if system is not None:
        add_config_arguments(parser, config_type(name), skip=tuple(system.fixed))
    add_output_arguments(
        parser,
        "fate.npz",
        "agreement, reasons, mismatches as one JSON object on stdout",
        picture=True,
    )
    add_allow_long_argument(parser, "a map")
    add_cluster_arguments(parser)
    parser.set_defaults(_interrupted=interrupted)


def interrupted(args: argparse.Namespace) -> str:
    """What an interrupted fate map leaves: its finished cells, and how to resume."""
    runs = args.out.with_suffix(".runs")
    kept = len(list(runs.glob("*.npz"))) if runs.is_dir() else 0
    if not kept:
        return "no output written; no cell had finished"
    cells = "cell" if kept == 1 else "cells"
    return f"no output written; kept {kept} finished {cells} in {runs}/; the same command resumes"


def _selected(words: Sequence[str]) -> str:
    """The value of ``--model`` among ``words`` (``--model X`` or ``--model=X``), else the
    default; an unknown name is refused when the command runs."""
    for i, word in enumerate(words):
        if word == "--model" and i + 1 < len(words):
            return words[i + 1]
        if word.startswith("--model="):
            return word.partition("=")[2]
    return DEFAULT


def run(args: argparse.Namespace) -> int:
    check_cluster(args)
    check_out(args, "the fate map")
    kind = config_type(args.model)
    fixed = fate_system(args.model).fixed
    config = config_from_args(kind, args, quick_config if args.quick else None, **fixed)
    announce("fate", config.estimate(), args.allow_long)
    if args.quick:
        _note_quick_kept(config)
    from gradflow.systems.fate import run_fate

    runs = args.out.with_suffix(".runs")
    with cluster_client(args, "fate") as client:
        cells = {} if client is None else {"client": client}
        result = run_fate(args.model, config, checkpoint=runs, allow_long=True, **cells)
    save_and_report(args, result)
    shutil.rmtree(runs, ignore_errors=True)
    return 0


def _note_quick_kept(config: object) -> None:
    """Say on stderr, in one line, which options given with ``--quick`` win over its quick
    settings (``--grid 500 --quick`` is a 500-point map, not the quick one): the fields of the
    quick ``config`` that differ from them."""
    import sys

    quick = type(config).QUICK
    kept = [
        f"--{name.replace('_', '-')} {getattr(config, name)}"
        for name in quick
        if getattr(config, name) != quick[name]
    ]
    if kept:
        print(
            f"note: --quick: {', '.join(kept)} as given (an option you give wins over the quick "
            "setting); the other options take their quick settings",
            file=sys.stderr,
        )
