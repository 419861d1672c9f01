"""``gradflow portrait``: the phase portrait of a model or a loss, with its data beside it."""

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
        "--grid", type=int, default=201, help="basin grid points per axis (default 201)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("portrait.png"),
        help="figure path; .png, .pdf or .svg (default portrait.png); the .npz and .json go beside it",
    )
    parser.add_argument("--no-basins", action="store_true", help="skip the basin map (much faster)")
    parser.add_argument(
        "--overlay",
        type=Path,
        nargs="+",
        default=[],
        metavar="RUN.npz",
        help="saved runs to draw on the portrait: NPZ files with 'coords' (T, k) or (n_runs, T, k) "
        "and 'coordinate_names' (k names), as gradflow train writes them (see docs/cli.md)",
    )
    add_json_argument(parser, "the portrait's metadata (its .json) as one JSON object on stdout")


def run(args: argparse.Namespace) -> int:
    precheck_model(args, grid=args.grid)
    from gradflow import FORMATS, check_output

    check_output(args.out, FORMATS, "the portrait", "--out")
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
        overlays=args.overlay,
    )
    notes = {"notes": list(model.notes)} if model.notes else {}
    save_and_report(args, result, metadata=result.metadata() | notes, notes=model.notes, dpi=150)
    return 0
