"""How a fate map is drawn: a marker per full-model fate on the grid, the disagreements ringed.

One drawing for :meth:`gradflow.systems.markov.fate.FateMap.figure` and the paper figure
``local-to-global-fate-map``, which draws the same markers over the reduced portrait.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["MARKERS", "cell_edges", "draw_fates"]

MARKERS = {
    "global": ("o", "tab:green"),
    "local": ("s", "tab:blue"),
    "other": ("D", "tab:purple"),
    "diverged": ("^", "black"),
    "undecided": ("$?$", "tab:orange"),
    "kink": ("v", "tab:red"),
}
"""Marker and colour of each fate.  ``undecided`` is a question mark: a cross is the saddle's
marker on the portraits the fates are drawn over."""
SHADES = {"global": "#d9f0d3", "local": "#d6e4f5"}
"""Tints of the reduced prediction where the map is drawn without a portrait."""


def draw_fates(
    ax: Any,
    ws: np.ndarray,
    es: np.ndarray,
    fates: np.ndarray,
    predicted: np.ndarray,
    *,
    shade: bool = False,
) -> list[Any]:
    """Draw the fates ``fates`` (strings, shape ``(len(es), len(ws))``, row = ``e``) at the grid
    points, and ring in red those that differ from ``predicted`` (same shape); with ``shade``,
    tint each grid cell by ``predicted`` first.  Markers on the box's edge are not clipped; the
    axes' limits are padded by half a cell so that none sits on the frame or under a title.

    Returns:
        Legend handles of what was drawn: the shades present, the fates, and the ring where a
        fate differs from its prediction.
    """
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    ww, ee = np.meshgrid(ws, es)
    handles: list[Any] = []
    if shade:
        codes = {name: k for k, name in enumerate(SHADES)}
        image = np.vectorize(lambda v: codes.get(v, -1))(predicted).astype(float)
        image[image < 0] = np.nan
        from matplotlib.colors import ListedColormap

        ax.pcolormesh(
            cell_edges(ws),
            cell_edges(es),
            image,
            cmap=ListedColormap(list(SHADES.values())),
            vmin=0,
            vmax=len(SHADES) - 1,
            shading="flat",
        )
        handles += [
            Patch(color=c, label=f"reduced model from the cell's start: {k}")
            for k, c in SHADES.items()
            if (predicted == k).any()
        ]
        ax.set_xlim(cell_edges(ws)[[0, -1]])
        ax.set_ylim(cell_edges(es)[[0, -1]])
    for name, (marker, color) in MARKERS.items():
        at = fates == name
        if at.any():
            ax.scatter(ww[at], ee[at], marker=marker, color=color, s=30, zorder=5, clip_on=False)
            handles.append(
                Line2D([], [], ls="", marker=marker, color=color, label=f"full model: {name}")
            )
    wrong = fates != predicted
    ax.scatter(
        ww[wrong],
        ee[wrong],
        s=140,
        facecolors="none",
        edgecolors="red",
        lw=1.6,
        zorder=6,
        clip_on=False,
    )
    if wrong.any():
        ring = {"mfc": "none", "mec": "red", "label": "disagrees (induced metric)"}
        handles.append(Line2D([], [], ls="", marker="o", **ring))
    return handles


def cell_edges(centres: np.ndarray) -> np.ndarray:
    """Cell edges around equally spaced grid points: half a spacing beyond each end."""
    step = (centres[-1] - centres[0]) / max(len(centres) - 1, 1)
    return np.concatenate([centres - step / 2, centres[-1:] + step / 2])
