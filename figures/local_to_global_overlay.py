"""Does the canonical flow predict training?  Full-model training trajectories (standard and
recommended init, several seeds) projected onto the canonical coordinates (w, e) and drawn over
the phase portrait and basins of the reduced model L(e, w) at p = 0.5, q = 0.8.

The projection (:func:`gradflow.models.markov_embedding.canonical_coordinates`) reads ``e = ‖e‖``
and ``4w|w| = α̂ᵀ W_2 W_1 α̂`` along ``α̂ = e/‖e‖``.  Training is AdamW on sampled batches
(CPU-sized: N = 64 positions, d = 8), not the gradient flow of the portrait: the overlay shows
where the weights go, the basins show where the reduced flow would take them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gradflow.analysis.markov_training import TrainConfig, train
from gradflow.models import markov

from gradflow import Overlay, portrait
from gradflow._io import save_with_data

NAME = "local-to-global-overlay"
P, Q = 0.5, 0.8
BOX = (-2.5, 2.0, 0.0, 1.6)
COLORS = {"standard": ("#c0392b", "#e67e22", "#8e44ad"), "paper": ("#1f5fbf", "#16a085", "#2c3e50")}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("."), help="output folder (default .)")
    parser.add_argument("--steps", type=int, default=600, help="optimizer steps (default 600)")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per init, 1 to 3 (default 3)")
    parser.add_argument(
        "--grid", type=int, default=121, help="basin grid points per axis (default 121)"
    )


def run(args: argparse.Namespace) -> int:
    from matplotlib.figure import Figure

    from gradflow import GradflowError

    if not args.out.is_dir():
        raise GradflowError(f"--out {str(args.out)!r} is not an existing folder")
    if not 1 <= args.seeds <= 3:
        raise GradflowError(f"--seeds {args.seeds} must be in 1…3")
    overlays, arrays, endpoints = [], {}, {}
    for init, colors in COLORS.items():
        result = train(TrainConfig(p=P, q=Q, init=init, steps=args.steps, seeds=args.seeds))
        arrays[f"{init}_coords"] = result.coords
        arrays[f"{init}_test_loss"] = result.test_loss
        endpoints[init] = {"coords": result.coords[:, -1], "test_loss": result.test_loss[:, -1]}
        for seed in range(args.seeds):
            path = result.coords[seed][:, [1, 0]]
            label = f"{init} init, seed {seed}: loss {result.test_loss[seed, -1]:.4f}"
            overlays.append(Overlay(label, path, colors[seed]))
    picture = portrait(markov.canonical(P, Q), grid=args.grid, box=BOX, overlays=overlays)
    fig = Figure(figsize=(8.5, 9.0), layout="constrained")
    ax = fig.add_subplot()
    picture.draw(
        ax,
        title=(
            f"Full-model training projected onto (w, e) over the canonical flow L(e, w), p = {P}, q = {Q}\n"
            f"AdamW, N = 64, d = 8, {args.steps} steps; dots: start, crosses: end"
        ),
    )
    for overlay in overlays:
        ax.plot(*overlay.path[-1], "x", color=overlay.color, ms=9, mew=2.2, zorder=6)
    arrays.update(picture.data())
    metadata = {
        "figure": NAME,
        "p": P,
        "q": Q,
        "steps": args.steps,
        "seeds": args.seeds,
        "box": BOX,
        "endpoints": endpoints,
        **picture.metadata(),
    }
    written = save_with_data(
        args.out / f"{NAME}.png", lambda path: fig.savefig(path, dpi=130), arrays, metadata
    )
    print("wrote " + ", ".join(str(p) for p in written))
    return 0
