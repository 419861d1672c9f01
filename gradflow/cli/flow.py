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
    from gradflow import critical_sets, flow, widened_bounds

    model = bound_model(args)
    names = model.param_names
    check_init(args.init, names)
    note_loss_parameters(args, model)
    critical = critical_sets(model, bounds=widened_bounds(model, {}))
    trajectory = flow(model, args.init, critical=critical, metric=args.metric)
    if args.json:
        print_json({**model.describe(), **trajectory.metadata(), "metric": args.metric})
        return 0
    start = ", ".join(f"{n} = {v:g}" for n, v in zip(names, args.init))
    print(f"{model.title}: flow from ({start})")
    print(trajectory.text())
    return 0
