"""``gradflow compare``: the reduced-vs-full checks of the canonical Markov models as a report.

For each of canonical ``L(e, w)``, canonical-bias ``L(e, w, b)``, canonical-attention
``L(e, w, a)`` and canonical-attention-bias ``L(e, w, a, b)``: the value and pulled-back gradient
errors at random points against the full transformer's exact loss, and the off-manifold share of
the full gradient by parameter group.  Then the dynamics: full-batch gradient descent on the exact
loss from ``embed(θ0)`` against the reduced flow in the induced metric.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
from gradflow.models.markov import canonical_bias_model, canonical_model
from gradflow.models.markov_attention import (
    canonical_attention_bias_model,
    canonical_attention_model,
)
from gradflow.models.markov_data import check_switching

from gradflow import GradflowError
from gradflow.cli._common import format_table, print_json

from .markov_checks import (
    GROUPS,
    DynamicsCheck,
    EmbeddingChecks,
    dynamics_check,
    embedding_checks,
    random_points,
)
from .markov_train_cli import add_switching_arguments

MODELS = (
    canonical_model,
    canonical_bias_model,
    canonical_attention_model,
    canonical_attention_bias_model,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_switching_arguments(parser)
    parser.add_argument(
        "--points", type=int, default=20, help="random reduced points per model (default 20)"
    )
    parser.add_argument(
        "--seq-len",
        type=int,
        default=10,
        dest="length",
        metavar="N",
        help="positions of the full model, exact enumeration of 2^N sequences (default 10, at most 14)",
    )
    parser.add_argument("--d", type=int, default=8, help="embedding width (default 8)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random points (default 0)")
    parser.add_argument(
        "--theta0",
        nargs=4,
        type=float,
        default=(0.5, -1.0, 0.0, 0.0),
        metavar=("E", "W", "A", "B"),
        help="start of the dynamics check (default 0.5 -1 0 0)",
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=2000,
        help="gradient-descent steps of the dynamics check (default 2000)",
    )
    parser.add_argument(
        "--lr",
        type=float,
        default=0.05,
        help="gradient-descent step (flow time per step, default 0.05)",
    )
    parser.add_argument(
        "--dynamics-seq-len",
        type=int,
        default=6,
        dest="dynamics_length",
        metavar="N",
        help="positions in the dynamics check (default 6)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")


def _model_record(checks: EmbeddingChecks) -> dict[str, Any]:
    return {
        "model": checks.model,
        "points": len(checks.thetas),
        "value_error": checks.value_error,
        "gradient_error": checks.gradient_error,
        "off_manifold_median": float(np.median(checks.off_manifold)),
        "off_manifold_max": float(np.max(checks.off_manifold)),
        "off_manifold_share": {k: float(np.mean(v)) for k, v in checks.off_groups.items()},
        "outside_rank_one_family": float(np.max(checks.outside_family)),
    }


def _dynamics_record(
    run: DynamicsCheck, theta0: np.ndarray, references: dict[str, float]
) -> dict[str, Any]:
    return {
        "theta0": theta0,
        "lr": run.lr,
        "flow_time": float(run.times[-1]),
        "max_deviation": run.max_deviation,
        "first_order_rate": run.first_order_rate,
        "metric_diagonal": np.diag(run.metric),
        "full_endpoint": run.full[-1],
        "reduced_endpoint": run.reduced[-1],
        "full_loss": float(run.full_loss[-1]),
        "reduced_loss": float(run.reduced_loss[-1]),
        **references,
    }


def run(args: argparse.Namespace) -> int:
    p, q = check_switching(args.p, args.q)
    if args.points < 1:
        raise GradflowError(f"--points {args.points} must be ≥ 1")
    if args.steps < 1:
        raise GradflowError(f"--steps {args.steps} must be ≥ 1")
    records = []
    for factory in MODELS:
        bound = factory().bind(p=p, q=q)
        points = random_points(bound, args.points, seed=args.seed)
        records.append(_model_record(embedding_checks(bound, points, length=args.length, d=args.d)))
    bound = canonical_attention_bias_model().bind(p=p, q=q)
    every = max(1, args.steps // 50)
    run_ = dynamics_check(
        bound,
        np.asarray(args.theta0),
        length=args.dynamics_length,
        d=args.d,
        lr=args.lr,
        steps=every * max(1, args.steps // every),
        every=every,
    )
    references = {k: bound.references[k] for k in ("unigram_loss", "entropy_rate")}
    dynamics = _dynamics_record(run_, np.asarray(args.theta0), references)
    if args.json:
        print_json(
            {
                "p": p,
                "q": q,
                "seq_len": args.length,
                "d": args.d,
                "models": records,
                "dynamics": dynamics,
            }
        )
        return 0
    print(
        f"reduced vs full, p = {p:g}, q = {q:g}: exact loss of the full transformer over all 2^{args.length} sequences, d = {args.d}, float64"
    )
    rows = [
        [
            r["model"],
            r["points"],
            f"{r['value_error']:.1e}",
            f"{r['gradient_error']:.1e}",
            f"{r['off_manifold_median']:.3f}",
            f"{r['off_manifold_max']:.3f}",
            f"{r['outside_rank_one_family']:.1e}",
            " ".join(f"{k} {v:.2f}" for k, v in r["off_manifold_share"].items()),
        ]
        for r in records
    ]
    print(
        format_table(
            [
                "model",
                "points",
                "max |ΔL| (nats)",
                "max |Δ∇L|",
                "off-ansatz |(I-P)g|/|g| median",
                "max",
                "outside rank-one family",
                "off-ansatz share by group",
            ],
            rows,
        )
    )
    groups = "; ".join(f"{k} = {', '.join(v)}" for k, v in GROUPS.items())
    print(f"  groups: {groups}")
    d = dynamics
    print(
        f"\ndynamics: gradient descent (η = {d['lr']:g}) on the exact loss, N = {args.dynamics_length}, from embed(θ0), "
        f"θ0 = ({', '.join(f'{v:g}' for v in d['theta0'])}), to flow time {d['flow_time']:g}"
    )
    print(
        f"  reduced flow in the induced metric G = diag({', '.join(f'{v:g}' for v in d['metric_diagonal'])})"
    )
    print(
        f"  max deviation |π(Θ(t)) - θ(t)|  {d['max_deviation']:.4g}   (initial rate {d['first_order_rate']:.4g} per unit time)"
    )
    print(
        f"  full endpoint     ({', '.join(f'{v:.4g}' for v in d['full_endpoint'])}), loss {d['full_loss']:.6f} nats"
    )
    print(
        f"  reduced endpoint  ({', '.join(f'{v:.4g}' for v in d['reduced_endpoint'])}), loss {d['reduced_loss']:.6f} nats"
    )
    print(
        f"  H(π) = {references['unigram_loss']:.6f}, entropy rate = {references['entropy_rate']:.6f} nats"
    )
    return 0
