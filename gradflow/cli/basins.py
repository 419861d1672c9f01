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
    parser.add_argument(
        "--convergence",
        nargs="?",
        const="101,201,401,801",
        metavar="GRIDS",
        help="also the shares over nested grids (default 101,201,401,801: one map at the finest "
        "per tolerance, read at every 2nd, 4th, 8th point) and --tolerances",
    )
    parser.add_argument(
        "--tolerances",
        default="1e-5,1e-6,1e-7",
        metavar="RTOLS",
        help="with --convergence: rtol of the float64 stages, atol = rtol/1000, gtol = rtol/100 "
        "(default 1e-5,1e-6,1e-7)",
    )
    add_json_argument(parser, "grid, box, attractors and fractions as one JSON object on stdout")


def _numbers(text: str, option: str, kind: type) -> list:
    """A comma list of numbers of ``kind``; one line naming ``option`` where it is not."""
    from gradflow import GradflowError

    try:
        values = [kind(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise GradflowError(f"{option} {text!r}: give a comma list of numbers") from None
    if not values:
        raise GradflowError(f"{option} {text!r}: give a comma list of numbers")
    return values


def run(args: argparse.Namespace) -> int:
    precheck_model(args, grid=args.grid)
    from gradflow import GradflowError, check_output
    from gradflow._landscape.region import nested_grids

    from ._sizes import check_grid

    grids = tolerances = None
    if args.convergence is not None:
        grids = nested_grids(_numbers(args.convergence, "--convergence", int))
        tolerances = _numbers(args.tolerances, "--tolerances", float)
        if not all(0 < t < 1 for t in tolerances):
            raise GradflowError(f"--tolerances {args.tolerances}: each must be in (0, 1)")
        check_grid(grids[-1], 2, "--convergence")
    check_output(args.out, (".npz",), "the basin map", "--out")
    from gradflow import basin_convergence, basins

    model = bound_model(args)
    check_grid(args.grid, model.dim, "--grid")
    note_loss_parameters(args, model)
    region = region_of(args, model)
    bm = basins(model, region=region, metric=args.metric)
    metadata = {**model.describe(), **bm.metadata(), "fraction_errors": bm.error_metadata()}
    text = (
        f"{bm.title()}, a {args.grid} × {args.grid} grid\n{bm.table()}\n{bm.evidence_text()}\n\n"
        f"{bm.error_table()}"
    )
    if grids is not None:
        check_grid(grids[-1], model.dim, "--convergence")
        study = basin_convergence(
            model,
            region=region,
            grids=grids,
            tolerances=tolerances,
            critical=bm.critical,
            metric=args.metric,
        )
        metadata["convergence"] = study.metadata()
        text += f"\n\n{study.text()}"
    save_and_report(
        args,
        bm,
        metadata={**metadata, "notes": model.notes},
        text=text,
        notes=model.notes,
    )
    return 0
