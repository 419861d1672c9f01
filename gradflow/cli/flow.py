"""``gradflow flow``: one trajectory of the gradient flow, integrated to its end, written as
``flow.npz`` (times, path, losses) with its ``.json`` and its picture (``flow.png``: the path in
the plane of the first two parameters, and ``L(t)``) beside it."""

from __future__ import annotations

import argparse
import dataclasses

from ._models import note_loss_parameters
from ._options import (
    add_metric_argument,
    add_model_arguments,
    add_output_arguments,
    bound_model,
    check_init,
    check_out,
    precheck_model,
    save_and_report,
)

BUDGET = {
    "solver": (str, "Rodas4", "the solver: Rodas4 (stiff flows) or diffrax's (Tsit5, Kvaerno5, …)"),
    "rtol": (float, 1e-7, "relative tolerance of the step-size controller"),
    "atol": (float, 1e-9, "absolute tolerance of the step-size controller"),
    "gtol": (float, 1e-8, "steady state: ‖∇L‖₂ ≤ gtol, in units of the loss's gradient scale g"),
    "t_max": (float, 1e8, "flow-time budget, in units of the loss's time scale ℓ/g"),
    "max_steps": (int, 20_000, "solver-step budget"),
}
"""The solver, the step-size controller's tolerances and the stop rule, with the defaults of
:class:`gradflow.FlowOptions`, :class:`gradflow.PID` and :class:`gradflow.StopRule` (a bad value
is refused by them in one line)."""

STOP = ("gtol", "t_max", "max_steps")
"""The options of :data:`BUDGET` that make the :class:`gradflow.StopRule`."""


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
    for name, (kind, default, text) in BUDGET.items():
        shown = default if isinstance(default, str) else f"{default:g}"
        parser.add_argument(
            "--" + name.replace("_", "-"),
            type=kind,
            default=default,
            help=f"{text} (default {shown})",
        )
    add_output_arguments(parser, "flow.npz", picture=True)


def run(args: argparse.Namespace) -> int:
    precheck_model(args, init=args.init)
    check_out(args, "the trajectory")
    from gradflow import PID, FlowOptions, StopRule, critical_sets, flow
    from gradflow._landscape.region import REACH

    options = FlowOptions(
        solver=args.solver,
        controller=PID(rtol=args.rtol, atol=args.atol),
        stop=StopRule(**{name: getattr(args, name) for name in STOP}),
    )
    model = bound_model(args)
    names = model.param_names
    check_init(args.init, names)
    note_loss_parameters(args, model)
    critical = critical_sets(model, box=model.search_box(widen=REACH))
    trajectory = flow(model, args.init, options, critical=critical, metric=args.metric)
    metric = "" if args.metric == "euclidean" else f", {args.metric} metric"
    trajectory = dataclasses.replace(trajectory, title=f"{model.title}{metric}")
    start = ", ".join(f"{n} = {v:g}" for n, v in zip(names, args.init))
    save_and_report(
        args,
        trajectory,
        metadata={
            **model.describe(),
            **trajectory.metadata(),
            "metric": args.metric,
            "solver": options.metadata(),
        },
        text=f"{model.title}: flow from ({start})\n{trajectory.text()}",
        notes=model.notes,
    )
    return 0
