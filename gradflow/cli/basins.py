"""``gradflow basins``: the basin map of the gradient flow on an N × N grid.

Writes the map as a picture (``basins.png``) with its data beside it (``basins.npz``,
``basins.json``): which attractor every grid point reached, and the share of each.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ._models import note_loss_parameters
from ._options import (
    add_box_arguments,
    add_json_argument,
    add_metric_argument,
    add_model_arguments,
    bound_model,
    precheck_model,
    region_of,
    save_and_report,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    add_metric_argument(parser)
    add_box_arguments(parser)
    parser.add_argument(
        "--grid",
        type=int,
        default=101,
        help="grid points per axis, endpoints included (default 101)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("basins.npz"),
        help="data path (default basins.npz); the picture (.png) and the .json go beside it",
    )
    add_json_argument(parser, "grid, box, attractors and fractions as one JSON object on stdout")


def run(args: argparse.Namespace) -> int:
    precheck_model(args, grid=args.grid)
    from gradflow import check_output

    check_output(args.out, (".npz",), "the basin map", "--out")
    from gradflow import basins

    from ._sizes import check_grid

    model = bound_model(args)
    check_grid(args.grid, model.dim, "--grid")
    note_loss_parameters(args, model)
    bm = basins(model, region=region_of(args, model), metric=args.metric)
    save_and_report(
        args,
        bm,
        metadata={**model.describe(), **bm.metadata(), "notes": model.notes},
        text=f"{bm.title()}, a {args.grid} × {args.grid} grid\n{bm.table()}",
        notes=model.notes,
    )
    return 0
