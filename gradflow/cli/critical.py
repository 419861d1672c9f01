"""``gradflow critical``: the critical sets of a model or a loss, classified.

With ``--fixed NAME=VALUE …`` only the critical points on that slice of parameter space are
found (their kinds still come from the Hessian in the whole space); ``--box`` bounds the plane.
``--certify`` proves by interval arithmetic that no critical point in the box is missing (or
reports the boxes it could not settle).
"""

from __future__ import annotations

import argparse

from ._models import note_loss_parameters
from ._options import (
    add_box_arguments,
    add_json_argument,
    add_model_arguments,
    bound_model,
    fixed_of,
    precheck_model,
    print_json,
    print_notes,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    add_box_arguments(parser)
    add_json_argument(parser)
    parser.add_argument(
        "--certify",
        action="store_true",
        help="prove by interval arithmetic that no critical point in the box is missing "
        "(branch and bound; not with --fixed)",
    )


def run(args: argparse.Namespace) -> int:
    precheck_model(args)
    from gradflow import GradflowError, critical_sets
    from gradflow._landscape.region import check_region

    model = bound_model(args)
    fixed = fixed_of(args)
    bounds = None
    if args.box is not None:
        plane = tuple(args.plane or model.plane)
        check_region(model.param_names, plane, box=args.box, fixed=fixed)
        bounds = {plane[0]: tuple(args.box[:2]), plane[1]: tuple(args.box[2:])}
    if args.certify and fixed:
        raise GradflowError("--certify works on the whole parameter space: drop --fixed")
    note_loss_parameters(args, model)
    box = model.search_box(bounds, fixed)
    sets = critical_sets(model, box=box, certify=args.certify)
    notes = model.notes
    if args.json:
        print_json(
            {
                **model.describe(),
                **model.references,
                **sets.metadata(),
                "fixed": fixed,
                "note": notes[0] if notes else None,
                "notes": notes,
            }
        )
        return 0
    where = f" on the slice {', '.join(f'{k} = {v:g}' for k, v in fixed.items())}" if fixed else ""
    print(f"{model.title}: critical sets{where}")
    for name, value in model.references.items():
        print(f"  {name} = {value:.6f}")
    print(sets.table())
    print_notes(notes)
    return 0
