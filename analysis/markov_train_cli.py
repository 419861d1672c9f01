"""``gradflow train``: train the full Markov transformer and record its canonical trajectory.

Writes ``OUT.npz`` (loss curves, test losses with standard errors, projected ``(e, w, a, b)``,
rank-one diagnostics) and ``OUT.json`` (settings, references, final losses) atomically.  A
non-finite training loss stops the run: the steps before it are written, with the step named in
the JSON and on stderr, and the exit status is 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from gradflow._io import check_output, save_with_data
from gradflow.cli._common import format_table, print_json

from .markov_training import INITS, TrainConfig, TrainResult, train


def add_switching_arguments(parser: argparse.ArgumentParser) -> None:
    """``--p`` and ``--q``, the switching probabilities of the chain (required)."""
    parser.add_argument("--p", type=float, required=True, help="P(x_{n+1} = 1 | x_n = 0) in (0, 1)")
    parser.add_argument("--q", type=float, required=True, help="P(x_{n+1} = 0 | x_n = 1) in (0, 1)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_switching_arguments(parser)
    parser.add_argument(
        "--init",
        choices=INITS,
        default="standard",
        help="standard N(0, 0.02²), canonical embed(θ0), or the paper's init for p + q > 1 (default standard)",
    )
    parser.add_argument(
        "--theta0",
        nargs=2,
        type=float,
        default=(0.5, 0.5),
        metavar=("E", "W"),
        help="(e, w) of the canonical init (default 0.5 0.5)",
    )
    parser.add_argument("--steps", type=int, default=500, help="optimizer steps (default 500)")
    parser.add_argument(
        "--seq-len",
        type=int,
        default=64,
        dest="length",
        metavar="N",
        help="positions per sequence (default 64; the paper uses 1024)",
    )
    parser.add_argument("--d", type=int, default=8, help="embedding width (default 8)")
    parser.add_argument(
        "--seeds", type=int, default=1, help="independent runs, trained in parallel (default 1)"
    )
    parser.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    parser.add_argument("--batch", type=int, default=16, help="sequences per step (default 16)")
    parser.add_argument(
        "--lr",
        type=float,
        default=2e-3,
        help="peak learning rate of the cosine one-cycle schedule (default 2e-3)",
    )
    parser.add_argument(
        "--weight-decay", type=float, default=1e-3, help="AdamW weight decay (default 1e-3)"
    )
    parser.add_argument(
        "--attention",
        choices=("softmax", "linear"),
        default="softmax",
        help="attention kind (default softmax)",
    )
    parser.add_argument(
        "--eval-every",
        type=int,
        default=25,
        help="steps between test-loss evaluations (default 25)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("train.npz"),
        help="NPZ path (default train.npz); the .json goes beside it",
    )
    parser.add_argument(
        "--json", action="store_true", help="the summary as one JSON object on stdout"
    )


def config_of(args: argparse.Namespace) -> TrainConfig:
    """The run's settings from the arguments (validated).

    Raises:
        GradflowError: any setting out of range.
    """
    return TrainConfig(
        p=args.p,
        q=args.q,
        init=args.init,
        theta0=tuple(args.theta0),
        steps=args.steps,
        length=args.length,
        d=args.d,
        batch=args.batch,
        lr=args.lr,
        weight_decay=args.weight_decay,
        seeds=args.seeds,
        seed0=args.seed,
        eval_every=args.eval_every,
        attention=args.attention,
    )


def summary(result: TrainResult) -> dict[str, Any]:
    """Final test loss per seed (nats) with its standard error, the references, the stop."""
    return {
        "steps_done": result.steps_done,
        "nan_step": result.nan_step,
        "final_test_loss": result.test_loss[:, -1],
        "final_test_se": result.test_se[:, -1],
        "final_coordinates": result.coords[:, -1],
        **result.references,
    }


def arrays(result: TrainResult) -> dict[str, np.ndarray]:
    """The NPZ contents."""
    out = {
        "train_loss": result.train_loss,
        "eval_steps": result.eval_steps,
        "test_loss": result.test_loss,
        "test_se": result.test_se,
        "coords": result.coords,
        "coordinate_names": np.array(["e", "w", "a", "b"]),
    }
    out.update({f"diagnostic_{k}": v for k, v in result.diagnostics.items()})
    return out


def run(args: argparse.Namespace) -> int:
    check_output(args.out, (".npz",), "the training record")
    config = config_of(args)
    result = train(config)
    record = summary(result)
    metadata = {"command": "train", "config": config.__dict__, **record}
    written = save_with_data(args.out, None, arrays(result), metadata)
    if args.json:
        print_json(record)
    else:
        _print_report(result)
        print("wrote " + ", ".join(str(p) for p in written))
    if result.nan_step is not None:
        print(
            f"gradflow train: error: the training loss is not finite at step {result.nan_step}; "
            f"stopped there, the record of the {result.steps_done} step(s) before it is in {args.out}",
            file=sys.stderr,
        )
        return 1
    return 0


def _print_report(result: TrainResult) -> None:
    c, ref = result.config, result.references
    print(
        f"trained {c.seeds} seed(s), init {c.init}, p = {c.p:g}, q = {c.q:g}: {result.steps_done} steps, "
        f"N = {c.length}, d = {c.d}, batch {c.batch}, {c.attention} attention"
    )
    rows = [
        [
            c.seed0 + i,
            f"{result.test_loss[i, -1]:.6f} ± {result.test_se[i, -1]:.6f}",
            *(f"{v:.4g}" for v in result.coords[i, -1]),
        ]
        for i in range(c.seeds)
    ]
    print(format_table(["seed", "test loss (nats) ± s.e.", "e", "w", "a", "b"], rows))
    print(f"  unigram loss H(π)      = {ref['unigram_loss']:.6f} nats")
    print(f"  bigram (entropy rate)  = {ref['entropy_rate']:.6f} nats")
