"""The three-scalar canonical model L(e, w, a) in 3-D: slices, rays from the origin, trajectories.

Top: basins of the flow on the slices a = -0.5, 0, 0.5 of the (w, e) plane at p = 0.5, q = 0.8
(trajectories leave the slice; each start is labelled by where its 3-D flow ends).  Bottom left:
the fraction of initial directions u (uniform on the sphere) whose flow from r·u reaches the
global minimum, against the initialization scale r, for L(e, w, a) and the canonical L(e, w), at
p + q > 1 and p + q < 1.  Bottom middle and right: 3-D trajectories projected onto (w, e) and
(a, e).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from gradflow.analysis.markov_rays import ray_outcomes, sphere_directions
from gradflow.models import markov
from gradflow.models.markov_attention import canonical_attention

from gradflow import GradflowError, portrait
from gradflow._io import save_with_data

NAME = "canonical-attention"
P, Q = 0.5, 0.8
SLICES = (-0.5, 0.0, 0.5)
BOX = (-2.5, 1.5, -2.0, 2.0)
STARTS = np.array(
    [
        [0.2, 0.3, 0.8],
        [0.2, -1.0, -0.5],
        [0.3, 0.5, -1.2],
        [0.4, -0.4, 1.5],
        [0.1, 1.2, 0.3],
        [0.5, -1.5, 0.0],
    ]
)
"""Initial points (e, w, a) of the drawn 3-D trajectories."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("."), help="output folder (default .)")
    parser.add_argument(
        "--grid", type=int, default=61, help="basin grid points per axis (default 61)"
    )
    parser.add_argument("--directions", type=int, default=200, help="ray directions (default 200)")


def run(args: argparse.Namespace) -> int:
    from matplotlib.figure import Figure

    if not args.out.is_dir():
        raise GradflowError(f"--out {str(args.out)!r} is not an existing folder")
    if args.directions < 1:
        raise GradflowError(f"--directions {args.directions} must be ≥ 1")
    model = canonical_attention(P, Q)
    fig = Figure(figsize=(16, 11), layout="constrained")
    axes = fig.subplots(2, 3)
    arrays: dict[str, np.ndarray] = {}
    fractions = {}
    for ax, a in zip(axes[0], SLICES):
        picture = portrait(model, grid=args.grid, box=BOX, fixed={"a": a})
        picture.draw(
            ax,
            layers=("basins", "streamlines", "critical"),
            legend=a == SLICES[-1],
            title=f"slice a = {a:g}: basins of the 3-D flow, streamlines in the slice",
        )
        arrays.update({f"slice{a:g}_{k}": v for k, v in picture.data().items()})
        fractions[f"a={a:g}"] = picture.basin_map.fractions()
    radii = np.geomspace(0.05, 3.0, 16)
    ax = axes[1, 0]
    for p, q, style in ((P, Q, "-"), (0.2, 0.3, "--")):
        for bound, color in (
            (canonical_attention(p, q), "#1f5fbf"),
            (markov.canonical(p, q), "#c0392b"),
        ):
            rays = ray_outcomes(bound, sphere_directions(args.directions, bound.model.dim), radii)
            ax.plot(
                radii,
                rays.fraction("global"),
                style,
                color=color,
                marker="o",
                ms=3,
                label=f"{bound.model.name}, p = {p:g}, q = {q:g} (p + q {'>' if p + q > 1 else '<'} 1)",
            )
            arrays[f"rays_{bound.model.name}_p{p:g}_q{q:g}"] = rays.labels
    ax.set_xscale("log")
    ax.set_xlabel("initialization scale r (θ0 = r·u, u uniform on the sphere)")
    ax.set_ylabel("fraction of directions reaching the global minimum")
    ax.set_ylim(-0.03, 1.03)
    ax.legend(fontsize=8)
    ax.set_title(f"rays from the origin ({args.directions} directions)", fontsize=10)
    colors = ("#1b7a2e", "#1f5fbf", "#8e44ad", "#e67e22", "#16a085", "#c0392b")
    for i, (start, color) in enumerate(zip(STARTS, colors)):
        path = model.flow(start)
        ends = "global" if path.losses[-1] < model.references["unigram_loss"] - 1e-6 else "H(π)"
        for ax, (x, y) in zip(axes[1, 1:], ((1, 0), (2, 0))):
            ax.plot(
                path.thetas[:, x],
                path.thetas[:, y],
                color=color,
                lw=1.5,
                label=f"({', '.join(f'{v:g}' for v in start)}) → {ends}, L = {path.losses[-1]:.4f}",
            )
            ax.plot(*path.thetas[0, [x, y]], "o", color=color, ms=5)
            ax.plot(*path.thetas[-1, [x, y]], "x", color=color, ms=8, mew=2)
        arrays[f"trajectory{i}"] = path.thetas
    for ax, xname in zip(axes[1, 1:], ("w", "a")):
        ax.set_xlabel(f"${xname}$")
        ax.set_ylabel("$e$", rotation=0)
        ax.axhline(0, color="#1f5fbf", lw=1, alpha=0.5)
        ax.set_title(
            f"3-D trajectories of L(e, w, a) projected onto ({xname}, e); start (e, w, a) → end",
            fontsize=10,
        )
    axes[1, 1].axvline(-1 / np.sqrt(2), color="#e07b00", lw=1, ls="--", label="w = -1/√2")
    axes[1, 1].legend(fontsize=7.5)
    fig.suptitle(
        f"Three-scalar canonical model L(e, w, a) = Φ(e²(1 + a e²/4)(1 + 2w|w|)), p = {P}, q = {Q}",
        fontsize=12,
    )
    metadata = {
        "figure": NAME,
        "p": P,
        "q": Q,
        "slices": SLICES,
        "box": BOX,
        "grid": args.grid,
        "directions": args.directions,
        "radii": radii,
        "fractions": fractions,
        "starts": STARTS,
        "source": "derived here: docs/models/markov-transformer.md",
    }
    written = save_with_data(
        args.out / f"{NAME}.png", lambda path: fig.savefig(path, dpi=120), arrays, metadata
    )
    print("wrote " + ", ".join(str(p) for p in written))
    return 0
