"""Local to Global (Makkuva et al., NeurIPS 2024), Figure 1: the canonical gradient flow.

Four panels in the (w, e) plane of the canonical model ``L(e, w)``: for p = q = 0.1 (p + q < 1)
and p = q = 0.9 (p + q > 1), the flow with the level sets of the conserved energy
``E = e² - w² - sgn(w) ln|w|``, and the basins of attraction computed by integrating the flow,
with the saddle's separatrix (the level set ``E = -(1 + ln 2)/2`` on the side where the flow
runs into the saddle).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from gradflow.models import markov

from gradflow import portrait
from gradflow._io import save_with_data
from gradflow._portrait import describe_options

NAME = "local-to-global-fig1"
CASES = ((0.1, 0.1), (0.9, 0.9))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("."), help="output folder (default .)")
    parser.add_argument(
        "--grid", type=int, default=201, help="basin grid points per axis (default 201)"
    )


def run(args: argparse.Namespace) -> int:
    from matplotlib.figure import Figure

    from gradflow import GradflowError

    if not args.out.is_dir():
        raise GradflowError(f"--out {str(args.out)!r} is not an existing folder")
    fig = Figure(figsize=(12, 14), layout="constrained")
    axes = fig.subplots(2, 2)
    arrays: dict[str, np.ndarray] = {}
    fractions = {}
    for col, (p, q) in enumerate(CASES):
        result = portrait(markov.canonical(p, q), grid=args.grid)
        tag = f"p{p:g}_q{q:g}"
        handles = result.draw(
            axes[0, col],
            layers=("invariant", "streamlines", "critical"),
            title=f"p = q = {p:g} (p + q {'<' if p + q < 1 else '>'} 1): flow and energy levels",
            legend=False,
        )
        handles += result.draw(
            axes[1, col],
            layers=("basins", "separatrix", "critical"),
            title=f"p = q = {p:g}: basins of attraction and separatrix",
            legend=False,
        )
        unique = {h.get_label(): h for h in handles}
        axes[1, col].legend(
            handles=list(unique.values()),
            loc="upper center",
            bbox_to_anchor=(0.5, -0.08),
            ncol=2,
            fontsize=8,
            frameon=False,
        )
        arrays.update({f"{tag}_{k}": v for k, v in result.data().items()})
        fractions[tag] = result.basin_map.fractions()
    fig.suptitle(
        "Canonical model L(e, w) = Φ(e²(1 + 2w|w|)) (Local to Global, Fig. 1)", fontsize=12
    )
    out = args.out / f"{NAME}.png"
    metadata = {
        "figure": NAME,
        "model": "canonical",
        "hyperparameters": [{"p": p, "q": q} for p, q in CASES],
        "grid": args.grid,
        "box": list(result.box),
        "solver": [describe_options(o) for o in result.basin_map.options],
        "fractions": fractions,
        "source": "Makkuva et al., Local to Global (NeurIPS 2024), Figure 1",
    }
    written = save_with_data(out, lambda path: fig.savefig(path, dpi=130), arrays, metadata)
    print("wrote " + ", ".join(str(p) for p in written))
    return 0
