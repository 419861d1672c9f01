"""What the commands share: the model and its plane, the ``--out``/``--json`` report, tables.

Model commands (``portrait``, ``critical``, ``basins``, ``flow``) pick a registered model by name
with its hyperparameters; commands that write a record take ``--out PATH.npz`` (its ``.json``
beside it) and ``--json``, check the path before any work and report in one way
(:func:`save_and_report`).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gradflow.analysis.tables import format_table

from .. import BoundModel, CriticalSet, GradflowError, check_output, save_with_data, to_jsonable
from .._model import show_domain
from ._registry import MODELS

__all__ = [
    "add_box_arguments",
    "add_json_argument",
    "add_model_arguments",
    "add_output_arguments",
    "bound_model",
    "check_out",
    "critical_table",
    "fixed_of",
    "fractions_table",
    "plane_options",
    "print_json",
    "print_notes",
    "print_report",
    "save_and_report",
    "wrote",
]


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """``--model NAME`` (default ``canonical``) and one option per hyperparameter name."""
    parser.add_argument(
        "--model",
        default="canonical",
        choices=sorted(MODELS),
        help="reduced model (default: canonical)",
    )
    names = sorted({h for entry in MODELS.values() for h in entry.hyperparams})
    for name in names:
        users = ", ".join(n for n, e in MODELS.items() if name in e.hyperparams)
        parser.add_argument(
            f"--{name}", metavar=name.upper(), help=f"hyperparameter {name} (models: {users})"
        )


def bound_model(args: argparse.Namespace) -> BoundModel:
    """The selected model at the given hyperparameters.

    Raises:
        GradflowError: a hyperparameter is missing, not a number, or out of range.
    """
    module, _, attr = MODELS[args.model].factory.partition(":")
    model = getattr(importlib.import_module(module), attr)()
    values = {}
    for symbol in model.hyperparams:
        raw = getattr(args, symbol.name, None)
        if raw is None:
            domain = model.domains[symbol]
            raise GradflowError(
                f"--{symbol.name} is required for model {args.model!r} (a number in {show_domain(domain)})"
            )
        values[symbol.name] = raw
    return model.bind(**values)


def add_box_arguments(parser: argparse.ArgumentParser) -> None:
    """``--box XMIN XMAX YMIN YMAX``, ``--plane X Y`` and ``--fixed NAME=VALUE …``."""
    parser.add_argument(
        "--box",
        nargs=4,
        type=float,
        metavar=("XMIN", "XMAX", "YMIN", "YMAX"),
        help="plane box; for the canonical model WMIN WMAX EMIN EMAX (default: the model's bounds)",
    )
    parser.add_argument(
        "--plane",
        nargs=2,
        metavar=("X", "Y"),
        help="parameters on the axes (default: the model's plane, (w, e) for canonical)",
    )
    parser.add_argument(
        "--fixed",
        nargs="*",
        default=[],
        metavar="NAME=VALUE",
        help="values of parameters off the plane (default 0)",
    )


def plane_options(args: argparse.Namespace) -> dict[str, Any]:
    """``box``, ``fixed`` and ``plane`` keyword arguments for the engine's grid functions."""
    return {
        "box": None if args.box is None else tuple(args.box),
        "fixed": fixed_of(args),
        "plane": tuple(args.plane) if args.plane else None,
    }


def fixed_of(args: argparse.Namespace) -> dict[str, float]:
    """``--fixed b=0.5`` as ``{"b": 0.5}``.

    Raises:
        GradflowError: an entry is not ``NAME=NUMBER``.
    """
    out = {}
    for item in args.fixed:
        name, sep, value = item.partition("=")
        try:
            out[name] = float(value)
        except ValueError:
            sep = ""
        if not sep:
            raise GradflowError(f"--fixed {item!r}: expected NAME=NUMBER, e.g. b=0.5")
    return out


def print_json(data: Any) -> None:
    """One JSON object on stdout (NumPy values converted, non-finite numbers as null)."""
    json.dump(to_jsonable(data), sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")


def print_notes(notes: Sequence[str]) -> None:
    """The model's notes at its hyperparameters, one ``note: …`` line each."""
    for note in notes:
        print(f"note: {note}")


def critical_table(sets: Sequence[CriticalSet]) -> str:
    """The critical sets as a table: kind, dimension, loss, Morse index, equation, a point."""
    if not sets:
        return "no critical points in the box (on this slice, if it is one)"
    rows = [
        [
            s.kind,
            s.dimension,
            f"{s.loss:.6f}",
            _morse_index(s),
            s.equation or s.name,
            f"({', '.join(f'{x:.4g}' for x in s.points[len(s.points) // 2])})",
        ]
        for s in sets
    ]
    return format_table(["kind", "dim", "loss (nats)", "Morse index", "set", "sample point"], rows)


def _morse_index(s: CriticalSet) -> str:
    """The Morse index, marked ``degenerate`` where the Hessian has more zero eigenvalues than
    the set has dimensions (the index then does not decide the kind; probing the loss did)."""
    return f"{s.morse_index} (degenerate)" if s.nullity > s.dimension else str(s.morse_index)


def fractions_table(fractions: Mapping[str, float]) -> str:
    """The non-zero basin fractions as a table, largest first."""
    rows = [[k, f"{v:.4f}"] for k, v in sorted(fractions.items(), key=lambda kv: -kv[1]) if v > 0]
    return format_table(["basin label", "fraction"], rows)


def print_report(args: argparse.Namespace, report: Any) -> None:
    """``report.to_dict()`` as one JSON object with ``--json``, else ``report.text()``."""
    if args.json:
        print_json(report.to_dict())
    else:
        print(report.text())


def add_json_argument(
    parser: argparse.ArgumentParser, text: str = "one JSON object on stdout"
) -> None:
    """``--json``: print the report as JSON (``text`` says what)."""
    parser.add_argument("--json", action="store_true", help=text)


def add_output_arguments(
    parser: argparse.ArgumentParser, default: str, json_help: str = "one JSON object on stdout"
) -> None:
    """``--out PATH`` (an NPZ, its ``.json`` beside it; default ``default``) and ``--json``."""
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(default),
        help=f"NPZ path (default {default}); the .json goes beside it",
    )
    add_json_argument(parser, json_help)


def check_out(args: argparse.Namespace, what: str) -> None:
    """Check ``--out`` before any work: an ``.npz`` in an existing folder.

    Raises:
        GradflowError: another suffix or a missing folder (``what`` names the record).
    """
    check_output(args.out, (".npz",), what)


def wrote(paths: Sequence[Path]) -> str:
    """``wrote a.npz, a.json``."""
    return "wrote " + ", ".join(str(p) for p in paths)


def save_and_report(
    args: argparse.Namespace,
    arrays: Mapping[str, Any],
    metadata: Mapping[str, Any],
    *,
    record: Mapping[str, Any],
    text: str,
    list_written: bool = False,
) -> list[Path]:
    """Write ``--out`` and its JSON atomically, then report on stdout.

    With ``--json``: ``record`` as one JSON object (plus ``"written"``, the paths, if
    ``list_written``); else ``text`` and the ``wrote …`` line.

    Returns:
        The paths written.
    """
    written = save_with_data(args.out, None, arrays, metadata)
    if args.json:
        paths = {"written": [str(p) for p in written]} if list_written else {}
        print_json({**record, **paths})
    else:
        print(text)
        print(wrote(written))
    return written
