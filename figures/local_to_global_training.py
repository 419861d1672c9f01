"""Local to Global (Makkuva et al., NeurIPS 2024), the initialization experiment: test loss of the
full single-layer transformer against the step, standard init vs the paper's recommended init,
at p = 0.5, q = 0.8 (p + q > 1), with the exact unigram loss H(π) and the entropy rate.

CPU-sized: sequences of N = 64 positions (the paper: 1024), d = 8, batch 16, AdamW with a cosine
one-cycle schedule; mean ± one standard deviation over the seeds, each seed also drawn thin.  The
test loss is estimated on a fixed set of sequences with the next symbol integrated out (unbiased,
standard error printed in the JSON).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from gradflow.analysis.markov_training import TrainConfig, TrainResult, train

from gradflow._io import save_with_data

NAME = "local-to-global-training"
P, Q = 0.5, 0.8
INITS = {
    "standard": ("standard init N(0, 0.02²)", "#c0392b"),
    "paper": ("recommended init (rank-one, w0 = -1)", "#1f5fbf"),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("."), help="output folder (default .)")
    parser.add_argument("--steps", type=int, default=1000, help="optimizer steps (default 1000)")
    parser.add_argument(
        "--seeds", type=int, default=3, help="seeds per init, at least 3 (default 3)"
    )
    parser.add_argument(
        "--seq-len",
        type=int,
        default=64,
        dest="length",
        metavar="N",
        help="positions per sequence (default 64)",
    )


def run(args: argparse.Namespace) -> int:
    from matplotlib.figure import Figure

    from gradflow import GradflowError

    if not args.out.is_dir():
        raise GradflowError(f"--out {str(args.out)!r} is not an existing folder")
    if args.seeds < 3:
        raise GradflowError(f"--seeds {args.seeds} must be ≥ 3 (the figure shows mean ± std)")
    results: dict[str, TrainResult] = {}
    for init in INITS:
        config = TrainConfig(
            p=P, q=Q, init=init, steps=args.steps, length=args.length, seeds=args.seeds
        )
        results[init] = train(config)
    ref = results["standard"].references
    fig = Figure(figsize=(8.5, 5.4), layout="constrained")
    ax = fig.add_subplot()
    for init, (label, color) in INITS.items():
        r = results[init]
        mean, std = r.test_loss.mean(axis=0), r.test_loss.std(axis=0)
        for curve in r.test_loss:
            ax.plot(r.eval_steps, curve, color=color, lw=0.6, alpha=0.45)
        ax.fill_between(r.eval_steps, mean - std, mean + std, color=color, alpha=0.2, lw=0)
        ax.plot(
            r.eval_steps, mean, color=color, lw=2, label=f"{label}: mean ± std, {args.seeds} seeds"
        )
    ax.axhline(
        ref["unigram_loss"],
        color="#555555",
        ls="--",
        lw=1.2,
        label=f"unigram loss H(π) = {ref['unigram_loss']:.4f}",
    )
    ax.axhline(
        ref["entropy_rate"],
        color="black",
        ls=":",
        lw=1.4,
        label=f"bigram loss (entropy rate) = {ref['entropy_rate']:.4f}",
    )
    ax.set_xlabel("iteration")
    ax.set_ylabel("test loss (nats)")
    low, high = ref["entropy_rate"], max(float(np.max(r.test_loss)) for r in results.values())
    ax.set_ylim(low - 0.1 * (high - low), high + 0.05 * (high - low))
    ax.legend(fontsize=8.5, loc="upper right")
    ax.set_title(
        f"Single-layer transformer on a Markov chain, p = {P}, q = {Q}: standard vs recommended init\n"
        f"CPU-sized: N = {args.length} positions (paper: 1024), d = 8, batch 16, AdamW, cosine one-cycle, {args.steps} steps",
        fontsize=9.5,
    )
    arrays = {}
    for init, r in results.items():
        arrays.update(
            {
                f"{init}_eval_steps": r.eval_steps,
                f"{init}_test_loss": r.test_loss,
                f"{init}_test_se": r.test_se,
                f"{init}_train_loss": r.train_loss,
                f"{init}_coords": r.coords,
            }
        )
    metadata = {
        "figure": NAME,
        "p": P,
        "q": Q,
        "steps": args.steps,
        "seeds": args.seeds,
        "seq_len": args.length,
        "final_test_loss": {init: r.test_loss[:, -1] for init, r in results.items()},
        "final_test_se": {init: r.test_se[:, -1] for init, r in results.items()},
        **ref,
        "source": "Makkuva et al., Local to Global (NeurIPS 2024), initialization experiment",
    }
    written = save_with_data(
        args.out / f"{NAME}.png", lambda path: fig.savefig(path, dpi=130), arrays, metadata
    )
    print("wrote " + ", ".join(str(p) for p in written))
    return 0
