"""``gradflow critical``: the critical sets of a reduced model, classified.

With ``--fixed NAME=VALUE …`` only the critical points on that slice of parameter space are
found (their kinds still come from the Hessian in the whole space); ``--box`` bounds the plane.
"""

from __future__ import annotations

import argparse
import math

from .. import BoundModel, GradflowError, critical_sets
from ._options import (
    add_box_arguments,
    add_json_argument,
    add_model_arguments,
    bound_model,
    critical_table,
    fixed_of,
    print_json,
    print_notes,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    add_box_arguments(parser)
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    model = bound_model(args)
    fixed = _slice(model, args)
    bounds = None
    if args.box is not None:
        plane = tuple(args.plane or model.model.plane)
        bounds = {plane[0]: tuple(args.box[:2]), plane[1]: tuple(args.box[2:])}
        for name in fixed:
            if name in bounds:
                raise GradflowError(
                    f"--fixed {name}: {name} is an axis of the --box plane ({', '.join(plane)})"
                )
    sets = critical_sets(model, bounds=bounds, fixed=fixed or None)
    notes = model.notes
    if args.json:
        print_json(
            {
                "model": model.model.name,
                "hyperparameters": dict(model.values),
                **model.references,
                "critical_sets": [s.to_dict() for s in sets],
                "fixed": fixed,
                "note": notes[0] if notes else None,
            }
        )
        return 0
    where = f" on the slice {', '.join(f'{k} = {v:g}' for k, v in fixed.items())}" if fixed else ""
    print(f"{model!r}: critical sets{where} (losses in nats)")
    for name, value in model.references.items():
        print(f"  {name} = {value:.6f}")
    print(critical_table(sets))
    print_notes(notes)
    return 0


def _slice(model: BoundModel, args: argparse.Namespace) -> dict[str, float]:
    """The ``--fixed`` values, each naming a parameter of the model and finite.

    Raises:
        GradflowError: an entry that is not ``NAME=NUMBER``, an unknown name, a non-finite value.
    """
    fixed = fixed_of(args)
    for name, value in fixed.items():
        model.model.index(name)
        if not math.isfinite(value):
            raise GradflowError(f"--fixed {name}={value!r} must be a finite number")
    return fixed
