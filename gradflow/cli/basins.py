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
    print_json,
    print_notes,
    region_of,
    wrote,
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

    check_output(args.out, (".npz",), "the basin map")
    from gradflow import LABELS, basins, save_with_data

    from ._sizes import check_grid

    model = bound_model(args)
    check_grid(args.grid, model.dim, "--grid")
    note_loss_parameters(args, model)
    bm = basins(model, region=region_of(args, model), metric=args.metric)
    record = {
        **model.describe(),
        "plane": list(bm.plane),
        "grid": args.grid,
        "box": list(bm.box),
        "fixed": bm.fixed,
        "fractions": bm.fractions(),
        "attractors": [a.to_dict() for a in bm.attractors],
        "shortcut": bm.shortcut,
        "metric": bm.metric,
    }
    arrays = {
        "x": bm.xs,
        "y": bm.ys,
        "labels": bm.labels,
        "label_names": list(LABELS),
        "attractor_ids": bm.attractor_ids,
        "times": bm.times,
        "steps": bm.steps,
        "endpoints": bm.endpoints,
    }
    metadata = {**record, "solver": [o.to_dict() for o in bm.options], "notes": model.notes}
    fixed = "".join(f", {k} = {v:g}" for k, v in bm.fixed.items())
    title = f"{model.title}{fixed}: basins in the ({bm.plane[0]}, {bm.plane[1]}) plane"
    picture = args.out.with_suffix(".png")
    written = save_with_data(picture, lambda path: _draw(bm, path, title), arrays, metadata)
    if args.json:
        print_json(record)
        return 0
    print(f"{title}, a {args.grid} × {args.grid} grid")
    print(repr(bm).split("\n", 1)[1])
    print_notes(model.notes)
    print(wrote(written))
    return 0


def _draw(basin_map, path: Path, title: str) -> None:
    basin_map.figure(title).savefig(path, dpi=130)
