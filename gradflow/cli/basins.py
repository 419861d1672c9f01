"""``gradflow basins``: the basin map of the gradient flow on an N × N grid, as NPZ."""

from __future__ import annotations

import argparse

from .. import LABELS, basins
from ._options import (
    add_box_arguments,
    add_model_arguments,
    add_output_arguments,
    bound_model,
    check_out,
    fractions_table,
    plane_options,
    save_and_report,
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
    add_output_arguments(
        parser, "basins.npz", json_help="grid, box and fractions as one JSON object on stdout"
    )


def run(args: argparse.Namespace) -> int:
    check_out(args, "the basin map")
    model = bound_model(args)
    bm = basins(model, grid=args.grid, **plane_options(args))
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
        "solver": [o.to_dict() for o in bm.options],
    }
    text = (
        f"{model!r}: basins on a {args.grid} × {args.grid} grid of the ({bm.plane[0]}, {bm.plane[1]}) plane, box {box}\n"
        + fractions_table(fractions)
    )
    save_and_report(
        args,
        arrays,
        metadata,
        record={"grid": args.grid, "box": box, "fractions": fractions},
        text=text,
    )
    return 0
