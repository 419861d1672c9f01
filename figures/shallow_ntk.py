"""The shallow encoder's NTK against width (Wu et al., NeurIPS 2023): three panels.

(a) ``λ_min(K_0)`` and ``α_0 = σ_min(F_pre)`` against ``d_m`` for each initialization (colour)
    and scaling (line style);
(b) the relative kernel change ``‖K_T - K_0‖_F / ‖K_0‖_F`` after ``T`` GD steps against ``d_m``
    (log-log) with the fitted slopes in the legend;
(c) GD loss curves at each width (solid) against the linearized flow ``df/dt = -K_0 (f - y)``
    (dashed), for one (init, scaling), by default LeCun with ``τ0 = d_m^{-1/2}``.

Values are geometric means over ``--seeds`` networks on one synthetic data set
(:func:`gradflow.analysis.ntk_sweep.width_sweep`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from gradflow.analysis.ntk_command import add_width_arguments, sweep_arrays
from gradflow.analysis.ntk_sweep import Sweep, SweepConfig, fit_slope, width_sweep
from gradflow.models.shallow_encoder import INITS, SCALINGS

from gradflow import GradflowError
from gradflow._io import save_with_data

NAME = "shallow-ntk"
COLORS = {"lecun": "C0", "he": "C1", "ntk": "C2"}
STYLES = {"sqrt": ("-", "o", "τ0 = d_m^-1/2"), "linear": ("--", "s", "τ0 = d_m^-1")}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("."), help="output folder (default .)")
    add_width_arguments(parser, seeds=2)
    parser.add_argument(
        "--curves",
        default="lecun/sqrt",
        metavar="INIT/SCALING",
        help="the (init, scaling) of panel (c) (default lecun/sqrt)",
    )


def _geometric_means(
    sweep: Sweep, init: str, scaling: str, quantity: str
) -> tuple[np.ndarray, np.ndarray]:
    runs = sweep.select(init, scaling)
    widths = np.array(sorted({r.d_m for r in runs}))
    values = np.array(
        [
            np.exp(np.mean(np.log([getattr(r, quantity) for r in runs if r.d_m == w])))
            for w in widths
        ]
    )
    return widths, values


def _width_panel(ax, sweep: Sweep, quantity: str, title: str) -> None:
    for init in INITS:
        for scaling in SCALINGS:
            widths, values = _geometric_means(sweep, init, scaling, quantity)
            style, marker, label = STYLES[scaling]
            runs = sweep.select(init, scaling)
            slope = fit_slope(
                np.array([r.d_m for r in runs]), np.array([getattr(r, quantity) for r in runs])
            )
            ax.loglog(
                widths,
                values,
                style,
                marker=marker,
                color=COLORS[init],
                label=f"{init}, {label}, slope {slope:.2f}",
            )
    ax.set_xlabel("width d_m")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def _curves_panel(ax, sweep: Sweep, init: str, scaling: str) -> None:
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    widths = sorted({r.d_m for r in sweep.select(init, scaling)})
    for i, width in enumerate(widths):
        run = next(r for r in sweep.select(init, scaling) if r.d_m == width)
        color = cmap(i / max(len(widths) - 1, 1) * 0.9)
        steps = np.arange(run.losses.size)
        ax.semilogy(steps, run.losses, "-", color=color, label=f"GD, d_m = {width}")
        ax.semilogy(
            steps, run.linearized, "--", color=color, label=f"linearized flow, d_m = {width}"
        )
    ax.set_xlabel("GD step k (flow time t = γk)")
    ax.set_ylabel("loss ½‖f − y‖²")
    ax.set_title(
        f"(c) GD vs linearized flow df/dt = −K0(f − y), {init}, {STYLES[scaling][2]}", fontsize=10
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)


def run(args: argparse.Namespace) -> int:
    from matplotlib.figure import Figure

    if not args.out.is_dir():
        raise GradflowError(f"--out {str(args.out)!r} is not an existing folder")
    init, _, scaling = args.curves.partition("/")
    if init not in INITS or scaling not in SCALINGS:
        raise GradflowError(
            f"--curves {args.curves!r} must be INIT/SCALING with INIT in {', '.join(INITS)} "
            f"and SCALING in {', '.join(SCALINGS)}"
        )
    config = SweepConfig(
        widths=args.widths, inits=INITS, scalings=SCALINGS, steps=args.steps, seeds=args.seeds
    )
    sweep = width_sweep(config)
    fig = Figure(figsize=(13, 10), layout="constrained")
    axes = fig.subplots(2, 2)
    panels = (
        (
            axes[0, 0],
            "lambda_min",
            "(a) λ_min(K0), the smallest NTK eigenvalue at init",
            "λ_min(K0)",
        ),
        (axes[0, 1], "alpha0", "(a) α0 = σ_min(F_pre), features before the output layer", "α0"),
        (
            axes[1, 0],
            "kernel_change",
            f"(b) kernel change after T = {config.steps} GD steps",
            "‖K_T − K0‖_F / ‖K0‖_F",
        ),
    )
    for ax, quantity, title, ylabel in panels:
        _width_panel(ax, sweep, quantity, title)
        ax.set_ylabel(ylabel)
    _curves_panel(axes[1, 1], sweep, init, scaling)
    fig.suptitle(
        f"Shallow encoder transformer (Wu et al. 2023): NTK against width "
        f"(N = {config.n_samples}, d_s = {config.d_s}, d = {config.d}, γ = {config.eta:g}/λ_max(K0), "
        f"{config.seeds} seed{'s' if config.seeds > 1 else ''})",
        fontsize=11,
    )
    out = args.out / f"{NAME}.png"
    metadata = {
        "figure": NAME,
        "config": vars(config),
        "curves": args.curves,
        "runs": [r.scalars() for r in sweep.runs],
        "slopes": {f"{i}/{s}": v for (i, s), v in sweep.slopes().items()},
        "source": "Wu et al., On the Convergence of Encoder-only Shallow Transformers (NeurIPS 2023)",
    }
    written = save_with_data(
        out, lambda path: fig.savefig(path, dpi=120, format="png"), sweep_arrays(sweep), metadata
    )
    print("wrote " + ", ".join(str(p) for p in written))
    return 0
