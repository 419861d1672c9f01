"""``gradflow portrait``: the phase portrait of a model or a loss, with its data beside it."""

from __future__ import annotations

import argparse
from pathlib import Path

from ._models import note_loss_parameters
from ._options import (
    add_box_arguments,
    add_metric_argument,
    add_model_arguments,
    bound_model,
    precheck_model,
    print_notes,
    region_of,
    wrote,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    add_metric_argument(parser)
    add_box_arguments(parser)
    parser.add_argument(
        "--grid", type=int, default=201, help="basin grid points per axis (default 201)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("portrait.png"),
        help="figure path; .png, .pdf or .svg (default portrait.png); the .npz and .json go beside it",
    )
    parser.add_argument("--no-basins", action="store_true", help="skip the basin map (much faster)")


def run(args: argparse.Namespace) -> int:
    precheck_model(args, grid=args.grid)
    from gradflow import FORMATS, check_output

    check_output(args.out, FORMATS, "the portrait")
    from gradflow import portrait

    from ._sizes import check_grid

    model = bound_model(args)
    check_grid(args.grid, model.dim, "--grid")
    note_loss_parameters(args, model)
    result = portrait(
        model,
        region=region_of(args, model),
        show_basins=not args.no_basins,
        metric=args.metric,
    )
    written = result.save(args.out, notes=model.notes)
    print(f"{result.title()}: critical sets")
    print(result.shown().table())
    print_notes(model.notes)
    if result.basin_map is not None:
        print(f"\nbasins on a {args.grid} × {args.grid} grid:")
        print(result.basin_map.table())
    print("\n" + wrote(written))
    return 0
