"""The picture of a sweep over hyperparameters: the share of the basin grid reaching each kind.

A saddle or a maximum is reached only from its stable manifold, a set of measure zero: its share
of a grid is the few grid points that happen to lie on that set (the row ``e = 0`` of a grid that
contains it), a few per cent that depends on the grid, not on the landscape.  Drawn on the 0–1
scale of the basins it is an empty panel, so those kinds share one panel of their own, on their
own colour scale, titled as what they are.  matplotlib is imported inside the function, so
importing gradflow does not import it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._outcome import Kind
from .draw import KIND_COLORS, OUTCOME_COLORS

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["ON_A_MANIFOLD", "SHARE_LABEL", "sweep_figure"]

ON_A_MANIFOLD = (str(Kind.SADDLE), str(Kind.LOCAL_MAX))
"""The kinds reached only from a stable manifold (measure zero): drawn in a panel of their own."""
SHARE_LABEL = "share of the grid's starts (fraction, 0–1)"
"""The label of a colour scale of shares."""
MAX_PANELS = 3
"""Panels of a two-axis sweep: each stays a third of the figure wide."""


def sweep_figure(
    axes: dict[str, np.ndarray],
    fractions: dict[str, np.ndarray],
    bifurcations: Sequence[dict[str, Any]],
    title: str,
) -> Figure:
    """A figure of a sweep: the share of the basin grid reaching each kind over the swept
    hyperparameters, the located bifurcations marked.

    Args:
        axes: each swept hyperparameter's values, in the sweep's order.
        fractions: each label's share in every cell, shape ``(len(values), …)`` per axis; only
            labels with a share somewhere are drawn.
        bifurcations: ``{"at": {name: value}, "type": …}`` each.
        title: what the sweep is of.

    One axis: every label's share against the hyperparameter, bifurcations as vertical lines.
    Two or more: the share as an image over the first two axes (the first horizontal, the
    second vertical), at the first value of any further axis, the bifurcations as crosses; one
    panel per basin (a minimum's, or an outcome's such as ``diverged``) on one 0–1 colour scale,
    and one panel for the starts on a saddle's or maximum's stable manifold
    (:data:`ON_A_MANIFOLD`, summed) on a scale of its own; at most :data:`MAX_PANELS` panels.
    """
    from matplotlib.figure import Figure

    names = list(axes)
    shown = {k: v for k, v in fractions.items() if np.nanmax(v) > 0}
    if len(names) == 1:
        fig = Figure(figsize=(7.5, 4.2), layout="constrained")
        _draw_lines(fig.add_subplot(), axes[names[0]], names[0], shown, bifurcations)
        fig.suptitle(title, fontsize=10)
        return fig
    extra = (slice(None), slice(None), *(0 for _ in names[2:]))
    basins = [k for k in shown if k not in ON_A_MANIFOLD]
    on_manifold = [k for k in shown if k in ON_A_MANIFOLD]
    basins = basins[: MAX_PANELS - (1 if on_manifold else 0)]
    count = len(basins) + (1 if on_manifold else 0)
    fig = Figure(figsize=(4.6 * count + 0.4, 5.0), layout="constrained")
    panels = list(np.atleast_1d(fig.subplots(1, count, sharey=True)))
    x, y = axes[names[0]], axes[names[1]]
    for ax, label in zip(panels, basins):
        image = _draw_share(ax, x, y, shown[label][extra].T, 1.0, names, bifurcations)
        ax.set_title(f"share reaching {label}", fontsize=10)
    if basins:
        fig.colorbar(
            image, ax=panels[: len(basins)], location="bottom", shrink=0.8, label=SHARE_LABEL
        )
    if on_manifold:
        ax = panels[-1]
        share = sum(shown[label][extra] for label in on_manifold).T
        image = _draw_share(ax, x, y, share, float(np.nanmax(share)), names, bifurcations)
        ax.set_title(
            f"share on a stable manifold ({', '.join(on_manifold)}):\n"
            "grid points on a set of measure zero, own scale",
            fontsize=9,
        )
        fig.colorbar(image, ax=ax, location="bottom", shrink=0.8, label=SHARE_LABEL)
    panels[0].set_ylabel(f"${names[1]}$", rotation=0, ha="right")
    if names[2:]:
        title += " (at " + ", ".join(f"{n} = {axes[n][0]:g}" for n in names[2:]) + ")"
    fig.suptitle(title, fontsize=10)
    return fig


def _draw_lines(
    ax: Axes,
    x: np.ndarray,
    name: str,
    shown: dict[str, np.ndarray],
    bifurcations: Sequence[dict[str, Any]],
) -> None:
    """Every label's share against the one swept hyperparameter ``name``."""
    colors = {**KIND_COLORS, **OUTCOME_COLORS}
    for label, share in shown.items():
        ax.plot(x, share, "o-", ms=3, color=colors.get(label, "black"), label=label)
    for i, b in enumerate(bifurcations):
        ax.axvline(b["at"][name], color="0.3", ls=":", lw=1, label="bifurcation" if not i else None)
    ax.set_xlabel(f"${name}$")
    ax.set_ylabel("share of the grid's starts")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=8, loc="best")


def _draw_share(
    ax: Axes,
    x: np.ndarray,
    y: np.ndarray,
    share: np.ndarray,
    top: float,
    names: Sequence[str],
    bifurcations: Sequence[dict[str, Any]],
) -> Any:
    """``share`` (shape ``(len(y), len(x))``) as an image on ``[0, top]``, the bifurcations as
    crosses; returns the image."""
    image = ax.pcolormesh(x, y, share, vmin=0, vmax=top, cmap="viridis", shading="nearest")
    marks = [b["at"] for b in bifurcations]
    if marks:
        ax.plot(
            [m[names[0]] for m in marks],
            [m[names[1]] for m in marks],
            "x",
            color="white",
            mec="black",
            ms=6,
            mew=1.2,
            label="bifurcation",
        )
        ax.legend(fontsize=7, loc="upper right")
    ax.set_xlabel(f"${names[0]}$")
    return image
