"""The shallow encoder's NTK against width (Wu et al., NeurIPS 2023): four panels.

(a) ``λ_min(K_0)`` and (b) ``α_0 = σ_min(F_pre)`` against ``d_m`` for each initialization
    (colour) and scaling (line style);
(c) the relative kernel change ``‖K_T - K_0‖_F / ‖K_0‖_F`` after ``T`` GD steps against ``d_m``
    (log-log) with the fitted slopes in the legend;
(d) GD loss curves at each width (solid) against the linearized flow ``df/dt = -K_0 (f - y)``
    (dashed), for one (init, scaling), by default LeCun with ``τ0 = d_m^{-1/2}``.

Values are geometric means over ``seeds`` networks on one synthetic data set
(:func:`gradflow.analysis.ntk_sweep.width_sweep`), every init and scaling.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gradflow import GradflowError
from gradflow.analysis.ntk_config import SweepConfig, seeds_field, steps_field, widths_field
from gradflow.models.shallow_scheme import INITS, SCALINGS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from gradflow.analysis.ntk_sweep import Sweep

__all__ = ["NAME", "SIZE", "Config", "Data", "compute", "draw"]

NAME = "shallow-ntk"
SIZE = (13.0, 10.0)
COLORS = {"lecun": "C0", "he": "C1", "ntk": "C2"}
STYLES = {"sqrt": ("-", "o", "τ0 = d_m^-1/2"), "linear": ("--", "s", "τ0 = d_m^-1")}
"""Line style, marker and legend text per scaling."""


@dataclass(frozen=True)
class Config:
    """Settings of the figure: the sweep's widths, steps and seeds, the pair of panel (d).

    Raises:
        GradflowError: a width, step or seed count that is not a positive integer, or ``curves``
            not ``INIT/SCALING``.
    """

    widths: tuple[int, ...] = widths_field()
    steps: int = steps_field()
    seeds: int = seeds_field(2)
    curves: str = field(
        default="lecun/sqrt",
        metadata={
            "help": "the (init, scaling) of panel (d), GD against the linearized flow",
            "metavar": "INIT/SCALING",
        },
    )

    def __post_init__(self) -> None:
        self.sweep()
        init, _, scaling = self.curves.partition("/")
        if init not in INITS or scaling not in SCALINGS:
            raise GradflowError(
                f"--curves {self.curves!r} must be INIT/SCALING with INIT in {', '.join(INITS)} "
                f"and SCALING in {', '.join(SCALINGS)}"
            )

    def sweep(self) -> SweepConfig:
        """The sweep: every init and scaling at these widths, steps and seeds."""
        return SweepConfig(
            widths=self.widths, inits=INITS, scalings=SCALINGS, steps=self.steps, seeds=self.seeds
        )


@dataclass(frozen=True)
class Data:
    """The width sweep behind the four panels."""

    config: Config
    sweep: Sweep

    def arrays(self) -> dict[str, np.ndarray]:
        """One row per run: scalars and loss curves (:meth:`Sweep.arrays`)."""
        return self.sweep.arrays()

    def metadata(self) -> dict[str, Any]:
        """The sweep's configuration, runs and slopes, and the pair of panel (d)."""
        record = self.sweep.metadata()
        return {
            "config": record["config"],
            "curves": self.config.curves,
            "runs": record["runs"],
            "slopes": record["slopes"],
            "source": "Wu et al., On the Convergence of Encoder-only Shallow Transformers (NeurIPS 2023)",
        }


def compute(config: Config) -> Data:
    """Run the width sweep over every init and scaling."""
    from gradflow.analysis.ntk_sweep import width_sweep

    return Data(config=config, sweep=width_sweep(config.sweep()))


def draw(data: Data, fig: Figure) -> None:
    """λ_min(K0), α0 and the kernel change against width; GD against the linearized flow."""
    sweep, c = data.sweep, data.sweep.config
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
    init, _, scaling = data.config.curves.partition("/")
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
    """The widths and the geometric mean of ``quantity`` over the seeds at each."""
    runs = sweep.select(init, scaling)
    widths = np.array(sorted({r.d_m for r in runs}))
    values = np.array(
        [
            np.exp(np.mean(np.log([getattr(r, quantity) for r in runs if r.d_m == w])))
            for w in widths
        ]
    )
    return widths, values


def _width_panel(ax: Any, sweep: Sweep, quantity: str, title: str) -> None:
    from gradflow.analysis.ntk_sweep import fit_slope

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
