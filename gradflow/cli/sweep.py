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
from ._sizes import add_allow_long_argument, announce


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
    add_allow_long_argument(parser, "a sweep")
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
            f"{option} {text!r}: expected a number, a comma list or START:STOP:COUNT "
            "with an integer COUNT ≥ 1"
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
    from gradflow._output.memory import sweep_estimate

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
    announce("sweep", sweep_estimate(cells, args.grid, model.dim), args.allow_long)
    note_loss_parameters(args, model)
    from gradflow import remove_checkpoint, sweep

    checkpoint = args.out.with_suffix(".cells")
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
