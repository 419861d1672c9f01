"""Arguments shared by the model commands: the model, its hyperparameters, the box, the output."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Any

from .. import BoundModel, GradflowError
from .._io import to_jsonable
from .._model import show_domain

__all__ = [
    "add_model_arguments",
    "add_box_arguments",
    "bound_model",
    "box_of",
    "plane_options",
    "fixed_of",
    "print_json",
    "format_table",
    "critical_table",
    "fractions_table",
    "all_global_note",
]


def _models() -> dict[str, Any]:
    from ..models import MODELS

    return MODELS


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """``--model NAME`` (default ``canonical``) and one option per hyperparameter name."""
    models = _models()
    parser.add_argument(
        "--model",
        default="canonical",
        choices=sorted(models),
        help="reduced model (default: canonical)",
    )
    names = sorted({h for entry in models.values() for h in entry.hyperparams})
    for name in names:
        users = ", ".join(n for n, e in models.items() if name in e.hyperparams)
        parser.add_argument(
            f"--{name}", metavar=name.upper(), help=f"hyperparameter {name} (models: {users})"
        )


def bound_model(args: argparse.Namespace) -> BoundModel:
    """The selected model at the given hyperparameters.

    Raises:
        GradflowError: a hyperparameter is missing, not a number, or out of range.
    """
    entry = _models()[args.model]
    module, _, attr = entry.factory.partition(":")
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


def box_of(args: argparse.Namespace) -> tuple[float, ...] | None:
    """The ``--box`` values, checked by the engine."""
    return None if args.box is None else tuple(args.box)


def plane_options(args: argparse.Namespace) -> dict[str, Any]:
    """``box``, ``fixed`` and ``plane`` keyword arguments for the engine's grid functions."""
    return {
        "box": box_of(args),
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
    """One JSON object on stdout."""
    json.dump(to_jsonable(data), sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")


def format_table(header: list[str], rows: list[list[Any]]) -> str:
    """A plain-text table with aligned columns."""
    cells = [header] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def critical_table(sets: list[Any]) -> str:
    """The critical sets as a table: kind, dimension, loss, Morse index, equation."""
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


def _morse_index(s: Any) -> str:
    """The Morse index, marked ``degenerate`` where the Hessian has more zero eigenvalues than
    the set has dimensions (the index then does not decide the kind; probing the loss did)."""
    return f"{s.morse_index} (degenerate)" if s.nullity > s.dimension else str(s.morse_index)


def fractions_table(fractions: dict[str, float]) -> str:
    """The non-zero basin fractions as a table, largest first."""
    rows = [[k, f"{v:.4f}"] for k, v in sorted(fractions.items(), key=lambda kv: -kv[1]) if v > 0]
    return format_table(["basin label", "fraction"], rows)


def all_global_note(sets: list[Any]) -> str | None:
    """A note when every critical set is a global minimum (e.g. canonical model at p + q = 1)."""
    if sets and all(s.kind == "global_min" for s in sets):
        return "every critical point is a global minimum (for the Markov models: p + q = 1, the chain is i.i.d.)"
    return None
