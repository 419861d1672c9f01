"""The picture of a two-mixture run (``gradflow mixture`` and the ``two-mixture`` figure): six
panels against flow time, the detected stage times (neurons aligned, attention escape, fit) as
vertical lines on each.

Lettered row by row.  Left column: (a) neuron alignment, the mean over each head's neurons of
``|cos(w, c_j)|`` and ``|cos(w, v_j)|`` and the cosine of all neurons with the signal span (the
stage criterion); (d) the population loss with its hard (``ε = -y``) and consistent parts.
Middle and right: the scores ``s(key, query)`` of head ``+`` for the ``c`` queries (b) and the
``v`` queries (c), and of head ``-`` (e, f), one colour per key (query index 1 solid, 2 dashed).
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.gridspec import GridSpec

    from .experiment import MixtureReport
    from .stages import StageTimes
    from .training import MixtureRun

__all__ = ["SIZE", "STAGE_STYLE", "draw_run", "run_title"]

SIZE = (16.0, 9.0)
"""The picture's size in inches."""
STAGE_STYLE = {
    "t_align": (":", "neurons aligned"),
    "t_attention": ("--", "attention escape"),
    "t_fit": ("-.", "fit"),
}
"""Line style and legend text of each detected stage time."""
SLOT_COLORS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#e377c2",
    "#bcbd22",
    "#17becf",
)
"""The colour of each signal direction ``c_1 … c_K, v_1 … v_K`` (alignment and score panels)."""
LOSS_COLORS = ("#8c564b", "#00707a")
"""The hard and the consistent part of the loss, drawn solid: no direction's colour (a curve of
the loss panel must not read as a key of the score panels) and not the grey dashes of the
stage times."""


def draw_run(report: MixtureReport, fig: Figure, grid: GridSpec) -> None:
    """The six panels in the first two rows of ``grid`` (at least 2 × 3)."""
    run, stages = report.run, report.stages
    _alignment_panel(fig.add_subplot(grid[0, 0]), run, stages)
    _loss_panel(fig.add_subplot(grid[1, 0]), run, stages)
    for (head, queries), letter in zip(itertools.product((0, 1), "cv"), "bcef"):
        ax = fig.add_subplot(grid[head, 1 + (queries == "v")])
        _score_panel(ax, run, stages, head, queries, letter)


def run_title(report: MixtureReport) -> str:
    """The model and the schedule in one line."""
    config, options = report.run.config, report.run.options
    return (
        f"Two-mixture linear classification (reconstruction): K = {config.K}, d = {config.d}, "
        f"m = {config.m}, ω = {config.omega:g}, {config.combine} heads, {options.schedule} "
        f"{options.method}, η = {options.lr:g}"
    )


def _mark_stages(ax: Any, stages: StageTimes) -> None:
    for key, (style, label) in STAGE_STYLE.items():
        t = getattr(stages, key)
        if np.isfinite(t):
            ax.axvline(t, color="0.3", ls=style, lw=1, label=f"{label} (t = {t:g})")


def _slot_names(K: int) -> list[str]:
    return [f"c{k + 1}" for k in range(K)] + [f"v{k + 1}" for k in range(K)]


def _alignment_panel(ax: Any, run: MixtureRun, stages: StageTimes) -> None:
    names = _slot_names(run.config.K)
    cosines = np.abs(run.neuron_cosines()).mean(axis=2)  # (T, 2, 2K)
    for h, style in ((0, "-"), (1, ":")):
        for a, name in enumerate(names):
            ax.plot(
                run.ts,
                cosines[:, h, a],
                style,
                color=SLOT_COLORS[a % len(SLOT_COLORS)],
                label=f"head {'+-'[h]}: |cos(w, {name})|",
            )
    ax.plot(run.ts, run.span_cosine, color="k", lw=1.5, label="cosine of w with span U")
    _mark_stages(ax, stages)
    ax.set_ylim(0, 1.02)
    ax.set_title("(a) neuron alignment (mean over neurons)", fontsize=10)
    ax.set_xlabel("flow time t")
    ax.legend(fontsize=6, ncol=2)


def _loss_panel(ax: Any, run: MixtureRun, stages: StageTimes) -> None:
    ax.semilogy(run.ts, run.loss, color="k", label="population loss")
    ax.semilogy(run.ts, run.loss_hard, color=LOSS_COLORS[0], label="hard samples (ε = −y)")
    ax.semilogy(
        run.ts, run.loss_consistent, color=LOSS_COLORS[1], label="consistent samples (ε = y)"
    )
    ax.axhline(np.log(2), color="0.5", lw=0.8, label="ln 2 (f ≡ 0)")
    _mark_stages(ax, stages)
    ax.set_title("(d) loss (nats)", fontsize=10)
    ax.set_xlabel("flow time t")
    ax.legend(fontsize=6)


def _score_panel(
    ax: Any, run: MixtureRun, stages: StageTimes, head: int, queries: str, letter: str
) -> None:
    K = run.config.K
    names = _slot_names(K)
    offset = 0 if queries == "c" else K
    for index, style in ((0, "-"), (1, "--")):
        if index >= K:
            break
        q = offset + index
        for a, name in enumerate(names):
            label = f"key {name}" if index == 0 else None
            ax.plot(
                run.ts,
                run.scores[:, head, a, q],
                style,
                color=SLOT_COLORS[a % len(SLOT_COLORS)],
                lw=1,
                label=label,
            )
    ax.set_yscale("symlog", linthresh=1e-3)
    _mark_stages(ax, stages)
    ax.set_title(
        f"({letter}) head {'+-'[head]}: s(key, {queries}₁) solid, s(key, {queries}₂) dashed",
        fontsize=9,
    )
    ax.set_xlabel("flow time t")
    ax.legend(fontsize=6)
