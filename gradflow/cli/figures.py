"""``gradflow figures NAME``: compute a paper figure's data, draw it, write ``NAME.png`` with its
``.npz`` and ``.json`` into ``--out`` (a folder).

Each figure module (``gradflow.systems.figures.*``) provides a frozen ``Config``, whose fields are the
options; see :mod:`gradflow.systems.figures`.
"""

from __future__ import annotations

import argparse
import functools
from pathlib import Path
from types import ModuleType

from gradflow.systems.figures import save

from ._config import add_config_arguments, config_from_args
from ._options import wrote
from ._registry import FIGURES

__all__ = ["METAVAR", "SUBCOMMANDS", "attach", "run"]

METAVAR = "FIGURE"
"""What an entry is called in help and errors."""
SUBCOMMANDS = FIGURES


def attach(parser: argparse.ArgumentParser, figure: ModuleType) -> None:
    """``--out FOLDER`` and the options of ``figure``'s ``Config``; running it is :func:`run`."""
    parser.add_argument("--out", type=Path, default=Path("."), help="output folder (default .)")
    add_config_arguments(parser, figure.Config)
    parser.set_defaults(_run=functools.partial(run, figure))


def run(figure: ModuleType, args: argparse.Namespace) -> int:
    """Check ``--out`` (a folder that can be written, or a missing one inside such a folder,
    created once the options are checked) and the options, compute, save; print the paths
    written."""
    from gradflow import check_folder

    existing = args.out
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    check_folder(existing, "--out" if existing == args.out else f"--out {str(args.out)!r}: its")
    config = config_from_args(figure.Config, args)
    args.out.mkdir(parents=True, exist_ok=True)
    data = figure.compute(config)
    summary = getattr(data, "summary", None)
    if summary is not None:
        print(summary())
    print(wrote(save(figure, data, args.out)))
    return 0
