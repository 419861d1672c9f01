"""``gradflow flow``: one trajectory of the gradient flow, integrated to its end."""

from __future__ import annotations

import argparse

from ._models import note_loss_parameters
from ._options import (
    add_json_argument,
    add_metric_argument,
    add_model_arguments,
    bound_model,
    check_init,
    precheck_model,
    print_json,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    add_metric_argument(parser)
    parser.add_argument(
        "--init",
        nargs="+",
        type=float,
        required=True,
        metavar="X",
        help="the initial point θ0: one number per parameter, in the model's order "
        "(canonical: e w; a --loss: the --params order)",
    )
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    precheck_model(args, init=args.init)
    from gradflow import critical_sets, flow, format_point, widened_bounds

    model = bound_model(args)
    names = model.param_names
    check_init(args.init, names)
    note_loss_parameters(args, model)
    critical = critical_sets(model, bounds=widened_bounds(model, {}))
    trajectory = flow(model, args.init, critical=critical, metric=args.metric)
    attractor = None if trajectory.attractor is None else _attractor(model, critical, trajectory)
    record = {
        **model.describe(),
        "init": list(args.init),
        "endpoint": trajectory.endpoint.tolist(),
        "loss": float(trajectory.losses[-1]),
        "time": trajectory.time,
        "status": str(trajectory.status),
        "converged": trajectory.converged,
        "reached": trajectory.reached,
        "attractor": attractor,
        "kink": trajectory.kink,
        "metric": args.metric,
    }
    if args.json:
        print_json(record)
        return 0
    unit = f" {model.loss_unit}" if model.loss_unit else ""
    print(
        f"{model.title}: flow from ({', '.join(f'{n} = {v:g}' for n, v in zip(names, args.init))})"
    )
    print(
        f"  endpoint  ({', '.join(f'{n} = {v:.6g}' for n, v in zip(names, trajectory.endpoint))})"
    )
    print(f"  loss      {record['loss']:.6f}{unit}")
    print(
        f"  time      {trajectory.time:.4g} (flow time units), {len(trajectory.ts) - 1} solver steps"
    )
    reached = trajectory.reached
    if attractor is not None:
        reached += f": attractor #{attractor['id']} {attractor['set']} at {format_point(attractor['point'])}"
    if trajectory.kink:
        reached += f" on the kink of {trajectory.kink}"
    print(f"  reached   {reached}")
    return 0


def _attractor(model, critical, trajectory) -> dict:
    from gradflow import AttractorIndex

    index = AttractorIndex(model, critical, critical.box)
    return index.attractors[trajectory.attractor].to_dict()
