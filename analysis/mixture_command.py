"""``gradflow mixture``: train the two-headed transformer on the two-mixture task, detect the stages.

    gradflow mixture --k 2 --d 8 --m 256 --omega 0.05 --schedule joint

Trains the full model (or, with ``--reduced``, the exact reduced dynamics) on the exact
population loss, prints the detected stage times (neuron alignment, attention escape, fit) and
the final losses, and writes the recorded run as NPZ + JSON.  Bad input (``K < 2``, ``d < 2K``,
``m < 1``, ``ω ≤ 0``, unknown option values) is a one-line error, exit status 2, nothing written.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gradflow.models.mixture_data import BASES, FILLERS
from gradflow.models.mixture_transformer import COMBINES, READOUTS, MixtureConfig

from gradflow._io import check_output, save_with_data
from gradflow.cli._common import format_table, print_json

from .mixture import (
    METHODS,
    SCHEDULES,
    MixtureRun,
    StageTimes,
    TrainOptions,
    detect_stages,
    train,
    train_reduced,
)

__all__ = [
    "add_arguments",
    "add_config_arguments",
    "add_train_arguments",
    "config_of",
    "options_of",
    "run",
    "run_metadata",
]


def add_config_arguments(parser: argparse.ArgumentParser, *, m: int = 256) -> None:
    """The model's sizes, ``ω``, the reconstruction's named options and the seed."""
    parser.add_argument("--k", type=int, default=2, metavar="K", help="groups K ≥ 2 (default 2)")
    parser.add_argument("--d", type=int, default=8, help="token dimension d ≥ 2K (default 8)")
    parser.add_argument(
        "--m", type=int, default=m, help=f"ReLU neurons per head m ≥ 1 (default {m})"
    )
    parser.add_argument(
        "--omega",
        type=float,
        default=0.05,
        help="initialization scale ω > 0: weights N(0, ω²/m) (default 0.05)",
    )
    parser.add_argument(
        "--combine",
        choices=COMBINES,
        default="difference",
        help="how the heads make the logit: F+ − F− (difference, default), F+ + F− with signed a_r (signed-sum), F+ − F− with W_Q− = −W_Q+, W_K− = W_K+ (tied)",
    )
    parser.add_argument(
        "--readout",
        choices=READOUTS,
        default="sqrt",
        help="neuron sum scale κ = 1/√m (sqrt, default) or 1/m (mean)",
    )
    parser.add_argument("--L", type=int, default=3, help="tokens per sample L ≥ 3 (default 3)")
    parser.add_argument(
        "--filler",
        choices=FILLERS,
        default="zero",
        help="tokens beyond the third: zero vectors (default) or the three tokens cycled",
    )
    parser.add_argument(
        "--d-head", type=int, default=None, help="inner dimension of W_Q, W_K (default m)"
    )
    parser.add_argument(
        "--basis",
        choices=BASES,
        default="standard",
        help="signal frame U: standard basis vectors (default) or a random orthonormal frame",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the initialization and token orders (default 0)",
    )


def add_train_arguments(parser: argparse.ArgumentParser, *, t_max: float = 2000.0) -> None:
    """Schedule, integrator and horizon."""
    parser.add_argument(
        "--schedule",
        choices=SCHEDULES,
        default="joint",
        help="joint (default) or staged: neurons, then attention, then neurons",
    )
    parser.add_argument(
        "--stage-times",
        type=float,
        nargs=2,
        metavar=("T1", "T2"),
        help="ends of the first two stages of --schedule staged (default t_max/10, t_max/2)",
    )
    parser.add_argument(
        "--method",
        choices=METHODS,
        default="gd",
        help="gradient descent (gd, default) or the gradient flow (flow: adaptive Tsit5, slow past ReLU kinks)",
    )
    parser.add_argument(
        "--t-max", type=float, default=t_max, help=f"horizon in flow time units (default {t_max:g})"
    )
    parser.add_argument(
        "--lr",
        type=float,
        default=0.1,
        help="descent step η (default 0.1); t_max/(records·η) must be a whole number",
    )
    parser.add_argument(
        "--records",
        type=int,
        default=200,
        help="recorded states after the initial one (default 200)",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser)
    add_train_arguments(parser)
    parser.add_argument(
        "--reduced",
        action="store_true",
        help="run the reduced dynamics (B, P_Q, P_K, N) instead of the full model",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("mixture.npz"),
        help="NPZ path (default mixture.npz); the .json goes beside it",
    )
    parser.add_argument(
        "--json", action="store_true", help="stage times and losses as one JSON object on stdout"
    )


def config_of(args: argparse.Namespace, **overrides: Any) -> MixtureConfig:
    """The :class:`MixtureConfig` of the parsed arguments.

    Raises:
        GradflowError: a size or ``ω`` out of range.
    """
    values = dict(
        K=args.k,
        d=args.d,
        m=args.m,
        omega=args.omega,
        L=args.L,
        combine=args.combine,
        readout=args.readout,
        d_head=args.d_head,
        filler=args.filler,
        basis=args.basis,
        seed=args.seed,
    )
    return MixtureConfig(**{**values, **overrides})


def options_of(args: argparse.Namespace) -> TrainOptions:
    """The :class:`TrainOptions` of the parsed arguments.

    Raises:
        GradflowError: a horizon, step or stage time out of range.
    """
    return TrainOptions(
        schedule=args.schedule,
        method=args.method,
        t_max=args.t_max,
        lr=args.lr,
        records=args.records,
        stage_times=None if args.stage_times is None else tuple(args.stage_times),
    )


def run_metadata(run: MixtureRun, stages: StageTimes) -> dict[str, Any]:
    """What a run's JSON records: configuration, options, stage times, final losses."""
    return {
        "model": "two-headed transformer on the two-mixture task (reconstruction), gradflow.models.mixture_transformer",
        "kind": run.kind,
        "config": vars(run.config),
        "options": vars(run.options),
        "status": run.status,
        "stages": stages.to_dict(),
        "final": {
            "t": float(run.ts[-1]),
            "loss": float(run.loss[-1]),
            "loss_hard": float(run.loss_hard[-1]),
            "loss_consistent": float(run.loss_consistent[-1]),
            "max_score": float(abs(run.scores[-1]).max()),
        },
        "max_conservation_drift": float(run.conservation.max()) if run.conservation.size else None,
    }


def run(args: argparse.Namespace) -> int:
    check_output(args.out, (".npz",), "the run")
    config, options = config_of(args), options_of(args)
    result = (train_reduced if args.reduced else train)(config, options)
    stages = detect_stages(result)
    metadata = {"command": "mixture", **run_metadata(result, stages)}
    written = save_with_data(args.out, None, result.arrays(), metadata)
    if args.json:
        print_json({**metadata, "written": [str(p) for p in written]})
        return 0
    print(
        f"two-mixture, {result.kind} model: K = {config.K}, d = {config.d}, m = {config.m}, ω = {config.omega:g}, "
        f"{options.schedule} schedule, {options.method} to t = {result.ts[-1]:g} ({result.status})"
    )
    rows = [
        [f"neurons aligned (span cosine ≥ {stages.levels['align_level']:g})", _t(stages.t_align)],
        [f"attention escapes (max |s| ≥ {stages.levels['score_level']:g})", _t(stages.t_attention)],
        [f"fit (loss ≤ {stages.levels['loss_level']:g} nats)", _t(stages.t_fit)],
        ["attention stage duration", _t(stages.attention_duration)],
    ]
    print(format_table(["stage", "time"], rows))
    final = metadata["final"]
    print(
        f"final loss {final['loss']:.6f} nats (hard {final['loss_hard']:.6f}, consistent {final['loss_consistent']:.6f})"
    )
    if metadata["max_conservation_drift"] is not None:
        print(
            f"max drift of W_Q W_Qᵀ − W_K W_Kᵀ (relative): {metadata['max_conservation_drift']:.3g}"
        )
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


def _t(value: float) -> str:
    return "not reached" if value != value else f"{value:g}"
