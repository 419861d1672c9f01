"""``gradflow sweep``: critical sets and basin fractions over a grid of hyperparameter values.

    gradflow sweep --model canonical --p 0.05:0.95:19 --q 0.05:0.95:19 --grid 101

Each hyperparameter is a value, a comma list (``0.1,0.5``) or ``start:stop:count`` (both ends
included).  Finished cells are checkpointed in ``--out``'s ``.cells`` folder; a sweep
interrupted and run again with the same arguments continues where it stopped, and writes the
same files as an uninterrupted run.  ``--workers N`` computes the cells on a local Dask cluster
of ``N`` processes, ``--scheduler ADDRESS`` on a running one; the files are the same.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._cluster import add_cluster_arguments, check_cluster, cluster_client
from ._options import (
    add_box_arguments,
    add_json_argument,
    add_model_arguments,
    precheck_model,
    region_of,
    save_and_report,
)

SECONDS_PER_CELL = 0.4
"""The fixed work of one cell (critical sets, attractor index), seconds: 0.3–0.6 s measured for
the canonical model on a 2-core machine (docs/performance.md)."""
COMPILE_S = 15.0
"""Start-up and compilation, seconds, paid once per process: the canonical model's 7 × 7 sweep
spends about 11 s compiling and tracing and 3 s importing on a quiet 2-core machine
(docs/performance.md), several times that under load; the hyperparameters are arguments of the
compiled programs, so later cells reuse them."""
SECONDS_PER_FLOW = 1e-5
"""One trajectory of a basin map, seconds: 7–12 µs measured for the canonical model's
1000 × 1000 map on a 2-core machine (docs/performance.md)."""


LONG_S = 24 * 3600.0
"""A sweep estimated to take longer than this (seconds) is refused unless ``--allow-long``
asks for it: a typo in a count (``0.05:0.95:1000``) should not start days of work."""


def seconds(cells: int, grid: int) -> float:
    """A sweep's rough duration on 2 CPU cores at the canonical model's rates."""
    return cells * (SECONDS_PER_CELL + grid * grid * SECONDS_PER_FLOW)


def check_size(cells: int, grid: int, dim: int, allow_long: bool) -> None:
    """Refuse, before any cell is bound, a sweep whose results cannot fit in memory, or whose
    estimate passes :data:`LONG_S` without ``allow_long``.

    Raises:
        GradflowError: one line with the sizes and the estimate.
    """
    from gradflow import GradflowError, sweep_memory

    from ._sizes import refuse_beyond_memory

    refuse_beyond_memory(f"{cells} cells at --grid", grid, sweep_memory(cells, grid, dim))
    needed = seconds(cells, grid)
    if needed > LONG_S and not allow_long:
        raise GradflowError(
            f"{cells} cells at --grid {grid} would take about {duration(needed)} on 2 CPU cores, "
            f"past the {duration(LONG_S)} a sweep runs without --allow-long; choose fewer "
            "cells or a smaller --grid, or add --allow-long"
        )


def estimate(cells: int, grid: int) -> str:
    """One line announcing a sweep's size and its rough duration, before it starts."""
    flows = cells * grid * grid
    seconds_ = seconds(cells, grid)
    return (
        f"{cells} cells × {grid}² = {flows:.3g} flows: about {duration(seconds_)} on 2 CPU cores "
        f"after start-up and compilation (about {duration(COMPILE_S)} on a quiet machine), at the canonical model's rates of "
        f"{SECONDS_PER_CELL:g} s + {SECONDS_PER_FLOW * 1e6:g} µs per flow per cell; Ctrl-C keeps "
        "the finished cells, the same command resumes"
    )


def duration(seconds: float) -> str:
    """``40 s``, ``3.2 min``, ``4.5 h``, ``2.1 days``."""
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= 2 * size:
            return f"{seconds / size:.2g} {unit}"
    return f"{seconds:.2g} s"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    add_box_arguments(parser)
    parser.add_argument(
        "--grid",
        type=int,
        default=101,
        help="basin grid points per axis in every cell (default 101)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("sweep.npz"),
        help="data path (default sweep.npz); the .json and the picture (.png) go beside it, finished cells in sweep.cells/",
    )
    parser.add_argument(
        "--allow-long",
        action="store_true",
        help=f"run a sweep estimated to take longer than {duration(LONG_S)} (refused otherwise)",
    )
    add_json_argument(parser, "model, grid, box and every cell as one JSON object on stdout")
    add_cluster_arguments(parser)
    parser.set_defaults(_interrupted=interrupted)


def interrupted(args: argparse.Namespace) -> str:
    """What an interrupted sweep leaves: its finished cells, and how to resume."""
    cells = args.out.with_suffix(".cells")
    return (
        f"no output written; the finished cells are kept in {cells}/: "
        "run the same command again to resume"
    )


def axis(option: str, text: str) -> tuple[float, ...]:
    """The values of ``start:stop:count``, of a comma list, or of one number.

    Raises:
        GradflowError: anything else, or a count below 1.
    """
    from gradflow import GradflowError

    try:
        if ":" in text:
            start, stop, count = text.split(":")
            n = int(count)
            if n < 1:
                raise ValueError
            return tuple(
                float(start) + (float(stop) - float(start)) * i / max(n - 1, 1) for i in range(n)
            )
        return tuple(float(v) for v in text.split(","))
    except ValueError:
        raise GradflowError(
            f"{option} {text!r}: expected a number, a comma list or START:STOP:COUNT"
        ) from None


def precheck_axes(args: argparse.Namespace, axes: dict[str, tuple[float, ...]]) -> None:
    """Refuse a bad sweep before the model is imported: what :func:`precheck_model` checks (a
    registered model's hyperparameter ranges, the grid, plane, box and fixed values; a
    ``--loss`` by the grammar alone) for every value of every axis.

    Raises:
        GradflowError: naming the option and the valid range.
    """
    from ._models import MODEL_HYPERPARAMETERS

    cell = argparse.Namespace(**vars(args))
    for name in MODEL_HYPERPARAMETERS:
        setattr(cell, name, None)
    for k in range(max(map(len, axes.values()), default=1)):
        cell.hyper = [
            f"{name}={values[min(k, len(values) - 1)]!r}" for name, values in axes.items()
        ]
        precheck_model(cell, grid=args.grid)


def run(args: argparse.Namespace) -> int:
    from gradflow import GradflowError, check_output

    from ._models import MODEL_HYPERPARAMETERS, _pairs_text, load_model, note_loss_parameters
    from ._sizes import check_grid

    check_output(args.out, (".npz",), "the sweep", "--out")
    check_cluster(args)
    texts = {n: getattr(args, n) for n in MODEL_HYPERPARAMETERS if getattr(args, n) is not None}
    texts |= _pairs_text("--hyper", args.hyper)
    axes = {name: axis(f"--{name}", text) for name, text in texts.items()}
    precheck_axes(args, axes)
    if args.loss is not None:
        from gradflow import loss_model

        params = None if args.params is None else [p.strip() for p in args.params.split(",")]
        model = loss_model(args.loss, params, list(axes), name=f"L = {args.loss.strip()}")
    else:
        model = load_model(args.model or "canonical")
    missing = [h.name for h in model.hyperparams if h.name not in axes]
    if missing:
        raise GradflowError(
            f"sweep: give values of {', '.join(missing)} (--{missing[0]} START:STOP:COUNT)"
        )
    cells = 1
    for values in axes.values():
        cells *= len(values)
    check_grid(args.grid, model.dim, "--grid")
    check_size(cells, args.grid, model.dim, args.allow_long)
    note_loss_parameters(args, model)
    from gradflow import remove_checkpoint, sweep

    checkpoint = args.out.with_suffix(".cells")
    print(f"gradflow sweep: {estimate(cells, args.grid)}", file=sys.stderr, flush=True)
    with cluster_client(args, "sweep") as client:
        result = sweep(
            model,
            {k: v for k, v in axes.items() if len(v) > 1},
            values={k: v[0] for k, v in axes.items() if len(v) == 1},
            region=region_of(args, model),
            checkpoint=checkpoint,
            client=client,
        )
    save_and_report(args, result)
    remove_checkpoint(checkpoint)
    return 0
