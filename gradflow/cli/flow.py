"""``gradflow flow``: one trajectory of the gradient flow, integrated to convergence."""

from __future__ import annotations

import argparse

from .. import BoundModel, GradflowError, Status, Trajectory, classify_points, critical_sets, flow
from .._critical import global_min_level
from ._options import add_json_argument, add_model_arguments, bound_model, print_json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    parser.add_argument(
        "--init",
        nargs="+",
        type=float,
        required=True,
        metavar="X",
        help="initial point in parameter order (canonical: E W)",
    )
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    model = bound_model(args)
    names = model.model.param_names
    if len(args.init) != len(names):
        raise GradflowError(
            f"--init needs {len(names)} numbers ({' '.join(names)}), got {len(args.init)}"
        )
    trajectory = flow(model, args.init)
    reached = _reached(model, trajectory)
    record = {
        "init": list(args.init),
        "endpoint": trajectory.endpoint.tolist(),
        "loss": float(trajectory.losses[-1]),
        "time": trajectory.time,
        "converged": trajectory.converged,
        "reached": reached,
    }
    if args.json:
        print_json(record)
        return 0
    print(f"{model!r}: flow from ({', '.join(f'{n} = {v:g}' for n, v in zip(names, args.init))})")
    print(
        f"  endpoint  ({', '.join(f'{n} = {v:.6g}' for n, v in zip(names, trajectory.endpoint))})"
    )
    print(f"  loss      {record['loss']:.6f} nats")
    print(
        f"  time      {record['time']:.4g} (flow time units), {len(trajectory.ts) - 1} solver steps"
    )
    print(f"  reached   {reached}")
    return 0


def _reached(model: BoundModel, trajectory: Trajectory) -> str:
    """The kind of critical set reached, or ``diverged`` / ``not_converged``."""
    if trajectory.status is Status.DIVERGED:
        return "diverged"
    if trajectory.status is not Status.CONVERGED:
        return "not_converged"
    global_loss = model.global_min_loss
    if global_loss is None:
        global_loss = global_min_level(critical_sets(model))
    return str(classify_points(model, trajectory.endpoint[None], global_loss).kinds[0])
