"""``gradflow critical``: the critical sets of a reduced model, classified."""

from __future__ import annotations

import argparse

from .._critical import critical_sets
from ._common import (
    add_box_arguments,
    add_model_arguments,
    all_global_note,
    bound_model,
    box_of,
    critical_table,
    print_json,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    add_box_arguments(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")


def run(args: argparse.Namespace) -> int:
    model = bound_model(args)
    bounds = None
    box = box_of(args)
    if box is not None:
        plane = tuple(args.plane or model.model.plane)
        bounds = {plane[0]: box[:2], plane[1]: box[2:]}
    sets = critical_sets(model, bounds=bounds)
    note = all_global_note(sets)
    if args.json:
        print_json(
            {
                "model": model.model.name,
                "hyperparameters": dict(model.values),
                **model.references,
                "critical_sets": [s.to_dict() for s in sets],
                "note": note,
            }
        )
        return 0
    print(f"{model!r}: critical sets (losses in nats)")
    for name, value in model.references.items():
        print(f"  {name} = {value:.6f}")
    print(critical_table(sets))
    if note:
        print(f"note: {note}")
    return 0
