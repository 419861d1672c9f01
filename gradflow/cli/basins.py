"""``gradflow basins``: the basin map of the gradient flow on an N × N grid, as NPZ."""

from __future__ import annotations

import argparse
from pathlib import Path

from .._basins import LABELS, basins
from .._io import check_output, save_with_data
from .._portrait import describe_options
from ._common import (
    add_box_arguments,
    add_model_arguments,
    bound_model,
    fractions_table,
    plane_options,
    print_json,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
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
        help="NPZ path (default basins.npz); the .json goes beside it",
    )
    parser.add_argument(
        "--json", action="store_true", help="grid, box and fractions as one JSON object on stdout"
    )


def run(args: argparse.Namespace) -> int:
    check_output(args.out, (".npz",), "the basin map")
    model = bound_model(args)
    bm = basins(
        model,
        grid=args.grid,
        **plane_options(args),
    )
    box = [float(bm.xs[0]), float(bm.xs[-1]), float(bm.ys[0]), float(bm.ys[-1])]
    fractions = bm.fractions()
    arrays = {
        "x": bm.xs,
        "y": bm.ys,
        "labels": bm.labels,
        "label_names": list(LABELS),
        "times": bm.times,
        "steps": bm.steps,
        "endpoints": bm.endpoints,
    }
    metadata = {
        "model": model.model.name,
        "hyperparameters": dict(model.values),
        "plane": list(bm.plane),
        "grid": args.grid,
        "box": box,
        "fixed": bm.fixed,
        "fractions": fractions,
        "solver": [describe_options(o) for o in bm.options],
    }
    written = save_with_data(args.out, None, arrays, metadata)
    if args.json:
        print_json({"grid": args.grid, "box": box, "fractions": fractions})
    else:
        print(
            f"{model!r}: basins on a {args.grid} × {args.grid} grid of the ({bm.plane[0]}, {bm.plane[1]}) plane, box {box}"
        )
        print(fractions_table(fractions))
        print("wrote " + ", ".join(str(p) for p in written))
    return 0
