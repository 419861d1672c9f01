"""``gradflow icl``: train on in-context Markov chains and report the phases of training.

    gradflow icl --k 3 --model minimal|transformer|reduced [--steps S]
                 [--prior dirichlet|doubly-stochastic|unigram|mixture:0.25] [--seeds K] [--json]

Trains ``K`` seeds with a progress bar, prints for each the phase intervals (nearest strategy
over training), the transition step, the plateau length and the final test loss and distances to
each strategy, and writes ``--out`` (NPZ: every seed's history under ``seed{i}_``) with a JSON
beside it.  All arguments are checked before anything runs or is written.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from gradflow.models.icl_data import PRIOR_NAMES, parse_prior
from gradflow.models.icl_minimal import MIXINGS
from gradflow.models.icl_strategies import STRATEGY_NAMES

from gradflow import GradflowError
from gradflow._io import check_output, save_with_data
from gradflow.cli._common import format_table, print_json

from .icl_phases import phases
from .icl_train import MODELS, RunSpec, train


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model", default="minimal", help=f"{' | '.join(MODELS)} (default minimal)"
    )
    parser.add_argument("--k", type=int, default=3, help="number of states, ≥ 2 (default 3)")
    parser.add_argument("--T", type=int, default=100, help="tokens per sequence, ≥ 2 (default 100)")
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help="training steps (default: minimal/reduced 400, transformer 2000)",
    )
    parser.add_argument(
        "--prior",
        default="dirichlet",
        help=f"training prior: {' | '.join(PRIOR_NAMES)} (default dirichlet; RHO = share of doubly-stochastic sequences)",
    )
    parser.add_argument("--seeds", type=int, default=1, help="number of seeds 0 … K-1 (default 1)")
    parser.add_argument(
        "--lr",
        type=float,
        default=None,
        help="step size (default: minimal 4 (SGD), transformer 5e-4 (AdamW), reduced 4 (flow time per step))",
    )
    parser.add_argument(
        "--batch",
        type=int,
        default=None,
        help="sequences per step (default 64); reduced: sequences in its fixed sample before the k! relabellings (default 256)",
    )
    parser.add_argument(
        "--eval-every", type=int, default=None, help="steps between evaluations (default steps/50)"
    )
    parser.add_argument(
        "--mixing",
        default="softmax",
        help=f"minimal/reduced positional mixing: {' | '.join(MIXINGS)}",
    )
    parser.add_argument(
        "--lags", type=int, default=None, help="minimal/reduced: learnable lags (default T-1)"
    )
    parser.add_argument(
        "--solver", default="flow", help="reduced: flow (diffrax) or gd (default flow)"
    )
    parser.add_argument("--d", type=int, default=16, help="transformer width (default 16)")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("icl.npz"),
        help="NPZ path (default icl.npz); the .json goes beside it",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")


def specs(args: argparse.Namespace) -> list[RunSpec]:
    """The runs the arguments ask for, validated.

    Raises:
        GradflowError: any argument out of range (one line naming it).
    """
    if args.model not in MODELS:
        raise GradflowError(f"unknown model {args.model!r}; choose one of {', '.join(MODELS)}")
    if args.seeds < 1:
        raise GradflowError(f"--seeds {args.seeds}: need at least 1 seed")
    check_output(args.out, (".npz",), "the histories")
    steps = args.steps if args.steps is not None else (2000 if args.model == "transformer" else 400)
    every = args.eval_every if args.eval_every is not None else max(1, steps // 50)
    prior = parse_prior(args.prior)
    batch = args.batch if args.batch is not None else (256 if args.model == "reduced" else 64)
    return [
        RunSpec(
            model=args.model,
            k=args.k,
            T=args.T,
            steps=steps,
            prior=prior,
            seed=seed,
            lr=args.lr,
            batch=batch,
            eval_every=every,
            mixing=args.mixing,
            lags=args.lags,
            d=args.d,
            solver=args.solver,
        )
        for seed in range(args.seeds)
    ]


def _summary(values: list[float | None]) -> dict[str, float | int | None]:
    known = [v for v in values if v is not None]
    return {
        "mean": float(np.mean(known)) if known else None,
        "std": float(np.std(known)) if known else None,
        "runs": len(known),
    }


def run(args: argparse.Namespace) -> int:
    runs = specs(args)
    arrays, records = {}, []
    for spec in runs:
        history = train(spec, progress=None if args.json else True)
        ph = phases(history.steps, history.distance_mean)
        arrays.update(history.arrays(prefix=f"seed{spec.seed}_"))
        records.append(
            {
                "seed": spec.seed,
                "phases": ph.to_dict(),
                "final_test_loss": {
                    "last": float(history.test_last[-1]),
                    "mean": float(history.test_mean[-1]),
                },
                "final_distance": {
                    m: {
                        "last": float(history.distance_last[-1, i]),
                        "mean": float(history.distance_mean[-1, i]),
                    }
                    for i, m in enumerate(STRATEGY_NAMES)
                },
            }
        )
    spec = runs[0]
    setting = {
        "model": spec.model,
        "k": spec.k,
        "T": spec.T,
        "steps": spec.steps,
        "prior": args.prior,
        "lr": spec.step_size,
        "batch": spec.batch,
        "eval_every": spec.eval_every,
        "eval_n": spec.eval_n,
        "seeds": len(runs),
        **(
            {"mixing": spec.mixing, "lags": spec.n_lags}
            if spec.model != "transformer"
            else {"d": spec.d}
        ),
        **({"solver": spec.solver} if spec.model == "reduced" else {}),
    }
    result = {
        "setting": setting,
        "runs": records,
        "transition_step": _summary([r["phases"]["transition_step"] for r in records]),
        "plateau_length": _summary([r["phases"]["plateau_length"] for r in records]),
    }
    written = save_with_data(args.out, None, arrays, result)
    if args.json:
        print_json(result)
        return 0
    print(
        f"gradflow icl: {spec.model}, k = {spec.k}, T = {spec.T}, {spec.steps} steps, prior {args.prior}, "
        f"{len(runs)} seed(s); distances E KL(strategy ‖ model) averaged over positions, nats"
    )
    rows = []
    for r in records:
        ph = r["phases"]
        rows.append(
            [
                r["seed"],
                " → ".join(f"{m} [{a:g}, {b:g}]" for m, a, b in ph["intervals"]),
                "—" if ph["transition_step"] is None else f"{ph['transition_step']:g}",
                "censored" if ph["plateau_length"] is None else f"{ph['plateau_length']:g}",
                f"{r['final_test_loss']['mean']:.4f}",
                *(f"{r['final_distance'][m]['mean']:.4f}" for m in STRATEGY_NAMES),
            ]
        )
    print(
        format_table(
            ["seed", "phases", "transition", "plateau", "test loss", *STRATEGY_NAMES], rows
        )
    )
    for name in ("transition_step", "plateau_length"):
        s = result[name]
        if s["runs"]:
            print(
                f"{name.replace('_', ' ')}: {s['mean']:.1f} ± {s['std']:.1f} steps over {s['runs']} run(s)"
            )
    print("wrote " + ", ".join(str(p) for p in written))
    return 0
