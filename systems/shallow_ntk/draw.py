"""The picture of an NTK width sweep (``gradflow ntk`` and the ``shallow-ntk`` figure): four
panels against the width ``d_m``.

(a) ``λ_min(K_0)`` and (b) ``α_0 = σ_min(F_pre)`` for each initialization (colour) and scaling
    (line style); (c) the relative kernel change ``‖K_T - K_0‖_F / ‖K_0‖_F`` after ``T`` GD
    steps (log-log), the fitted slopes in the legend; (d) GD loss curves at each width (solid)
    against the linearized flow ``df/dt = -K_0 (f - y)`` (dashed), for one (init, scaling).

Values are geometric means over the sweep's seeds.  matplotlib is imported by the caller's
figure only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .sweep import Sweep

__all__ = ["COLORS", "SIZE", "STYLES", "draw_sweep"]

SIZE = (13.0, 10.0)
"""The picture's size in inches."""
COLORS = {"lecun": "C0", "he": "C1", "ntk": "C2"}
STYLES = {"sqrt": ("-", "o", "τ0 = d_m^-1/2"), "linear": ("--", "s", "τ0 = d_m^-1")}
"""Line style, marker and legend text per scaling."""


def draw_sweep(sweep: Sweep, fig: Figure, init: str, scaling: str) -> None:
    """The four panels on ``fig``, panel (d) for ``(init, scaling)``, with a title naming the
    sizes."""
    c = sweep.config
    axes = fig.subplots(2, 2)
    panels = (
        (
            axes[0, 0],
            "lambda_min",
            "(a) λ_min(K0), the smallest NTK eigenvalue at init",
            "λ_min(K0)",
        ),
        (axes[0, 1], "alpha0", "(b) α0 = σ_min(F_pre), features before the output layer", "α0"),
        (
            axes[1, 0],
            "kernel_change",
            f"(c) kernel change after T = {c.steps} GD steps",
            "‖K_T − K0‖_F / ‖K0‖_F",
        ),
    )
    for ax, quantity, title, ylabel in panels:
        _width_panel(ax, sweep, quantity, title)
        ax.set_ylabel(ylabel)
    _curves_panel(axes[1, 1], sweep, init, scaling)
    fig.suptitle(
        f"Shallow encoder transformer (Wu et al. 2023): NTK against width "
        f"(N = {c.n_samples}, d_s = {c.d_s}, d = {c.d}, γ = {c.eta:g}/λ_max(K0), "
        f"{c.seeds} seed{'s' if c.seeds > 1 else ''})",
        fontsize=11,
    )


def _geometric_means(
    sweep: Sweep, init: str, scaling: str, quantity: str
) -> tuple[np.ndarray, np.ndarray]:
    """The widths and the geometric mean of ``quantity`` over the seeds at each (0 where a seed
    has 0, as ``α_0`` at a width below ``N``: drawn as a gap on the log axis)."""
    runs = sweep.select(init, scaling)
    widths = np.array(sorted({r.d_m for r in runs}))
    with np.errstate(divide="ignore"):
        values = np.array(
            [
                np.exp(np.mean(np.log([getattr(r, quantity) for r in runs if r.d_m == w])))
                for w in widths
            ]
        )
    return widths, np.where(values > 0, values, np.nan)


def _width_panel(ax: Any, sweep: Sweep, quantity: str, title: str) -> None:
    from .threshold import fit_slope

    for init in sweep.config.inits:
        for scaling in sweep.config.scalings:
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


def _curves_panel(ax: Any, sweep: Sweep, init: str, scaling: str) -> None:
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
        f"(d) GD vs linearized flow df/dt = −K0(f − y), {init}, {STYLES[scaling][2]}", fontsize=10
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
