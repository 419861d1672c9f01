"""The picture of the shallow encoder's fate map (:mod:`gradflow.systems.fate`): nine panels.

Top two rows, one panel per (init, scaling): the ``(N, d_m)`` grid on log axes, one marker per
draw (a filled circle converged, a cross stalled, a triangle diverged), a red ring where the
outcome disagrees with the theorem's prediction, grey where the theorem's assumptions fail (no
guarantee); the sufficient width ``d_m = N^α`` (dashed) and the fitted threshold
``d_m* = c N^α̂`` (solid, fitted over ``N ≤ d``, with ``α̂`` and its interval over the draws and
the width grid in the title).

Bottom row, against ``d_m`` at the largest ``N`` (medians over the draws): (g) ``λ_min(K_0) /
λ_min(K∞)`` under ``τ0 = d_m^{-1}``, which tends to 1 (LeCun lies under He: the He network is
√2 times the LeCun one, its kernel and its limit twice theirs); (h) the share of the ``Q, K`` blocks in
``tr K_0``, the only part of the kernel ``τ0`` enters at uniform attention; (i) the measured rate
of GD per step (solid) and the guaranteed one ``-ln(1 - γ τ1² α_0² / 2)`` (dotted).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .config import OUTCOMES, SUFFICIENT_EXPONENT

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .fate import NtkFateMap

__all__ = ["SIZE", "draw"]

SIZE = (15.0, 13.0)
"""Inches."""
MARKERS = {"converged": ("o", "tab:green"), "stalled": ("X", "tab:orange"), "diverged": ("^", "k")}
COLORS = {"lecun": "C0", "he": "C1", "ntk": "C2"}
STYLES = {"sqrt": "-", "linear": "--"}
SCALING_TEXT = {"sqrt": "τ0 = d_m^-1/2", "linear": "τ0 = d_m^-1"}
FLOOR = 1e-3
"""Panel (g) shows ratios below this at this (``K_0`` is singular to rounding where
``d_m < N``)."""


def draw(result: NtkFateMap, fig: Figure) -> None:
    """Draw ``result`` on ``fig`` (module docstring)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    c = result.config
    grid = fig.subplots(3, 3)
    pairs = c.pairs()
    inits = list(dict.fromkeys(i for i, _ in pairs))
    scalings = list(dict.fromkeys(s for _, s in pairs))
    places = sorted((scalings.index(s), inits.index(i), p) for p, (i, s) in enumerate(pairs))
    used = set()
    for letter, (row, col, p) in zip("abcdef", places):  # lettered row by row
        init, scaling = pairs[p]
        used.add(grid[row, col])
        _fate_panel(grid[row, col], result, p, f"({letter}) {init}, {SCALING_TEXT[scaling]}")
    for ax in grid[:2].ravel():
        if ax not in used:
            ax.set_visible(False)
    _limit_panel(grid[2, 0], result)
    _share_panel(grid[2, 1], result)
    _rate_panel(grid[2, 2], result)
    handles = [
        Line2D([], [], ls="", marker=m, color=col, label=name) for name, (m, col) in MARKERS.items()
    ]
    handles += [
        Line2D([], [], ls="", marker="o", mfc="none", mec="red", ms=11, label="disagrees"),
        Patch(color="0.85", label="no guarantee (an assumption fails)"),
        Line2D([], [], color="k", ls="--", label="sufficient d_m = N^α"),
        Line2D([], [], color="k", label="fitted d_m* = c N^α̂"),
    ]
    handles += [Line2D([], [], color=COLORS[i], label=i) for i in inits]
    handles += [Line2D([], [], color="0.3", ls=STYLES[s], label=SCALING_TEXT[s]) for s in scalings]
    fig.legend(handles=handles, loc="outside lower center", ncol=6, fontsize=8)
    fig.suptitle(
        f"Shallow encoder (Wu et al. 2023): GD outcome over (N, d_m), d = {c.d}, d_s = {c.d_s}, "
        f"γ = {c.eta:g}/λ_max(K0), converged: ℓ ≤ {c.eps:g} ℓ0 within {c.steps} steps, "
        f"{c.seeds} draw{'s' if c.seeds > 1 else ''} per cell",
        fontsize=11,
    )


def _log2_axes(ax: Any, xs: list[int], ys: list[int] | None = None) -> None:
    from matplotlib.ticker import FixedLocator, NullLocator

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(xs))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([str(x) for x in xs])
    if ys is not None:
        ax.set_yscale("log", base=2)
        ax.yaxis.set_major_locator(FixedLocator(ys))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.set_yticklabels([str(y) for y in ys])


def _edges(values: list[int]) -> np.ndarray:
    """Cell edges halfway (in log) between grid values, the outer ones mirrored."""
    logs = np.log2(np.asarray(values, float))
    if logs.size == 1:
        return 2.0 ** np.array([logs[0] - 0.5, logs[0] + 0.5])
    mids = (logs[1:] + logs[:-1]) / 2
    return 2.0 ** np.concatenate([[2 * logs[0] - mids[0]], mids, [2 * logs[-1] - mids[-1]]])


def _fate_panel(ax: Any, result: NtkFateMap, p: int, title: str) -> None:

    c = result.config
    ns, widths = list(c.n_samples), list(c.widths)
    outcome, agree = result.values["outcome"][p], result.agree_array()[p]
    applies = np.vectorize(lambda f: not f, otypes=[bool])(result.failed[p])
    x_edges, y_edges = _edges(ns), _edges(widths)
    shade = np.where(applies.all(axis=-1), 1.0, 0.85)
    ax.pcolormesh(x_edges, y_edges, shade.T, cmap="gray", vmin=0, vmax=1, shading="flat")
    offsets = 2.0 ** (0.35 * (np.arange(c.seeds) - (c.seeds - 1) / 2) / max(c.seeds, 1))
    for (i, j, s), code in np.ndenumerate(outcome):
        marker, color = MARKERS[OUTCOMES[code]]
        x = ns[i] * offsets[s]
        ax.plot(x, widths[j], marker=marker, color=color, ms=6, ls="")
        if not agree[i, j, s]:
            ax.plot(x, widths[j], marker="o", mfc="none", mec="red", ms=11, ls="")
    _, scaling = c.pairs()[p]
    line = np.geomspace(x_edges[0], x_edges[-1], 50)
    exponent = SUFFICIENT_EXPONENT[scaling]
    ax.plot(line, line**exponent, "k--", lw=1)
    fit = result.exponents[result.pairs()[p]]
    if np.isfinite(fit.alpha):
        ax.plot(line, fit.c * line**fit.alpha, "k-", lw=1.5)
        estimate = f"α̂ (N ≤ d) = {fit.alpha:.2f} [{fit.low:.2f}, {fit.high:.2f}]"
    else:
        estimate = "α̂: threshold not bracketed"
    ax.set_xlim(x_edges[0], x_edges[-1])
    ax.set_ylim(y_edges[0], y_edges[-1])
    _log2_axes(ax, ns, widths)
    ax.set_xlabel("samples N")
    ax.set_ylabel("width d_m")
    ax.set_title(f"{title}\nsufficient α = {exponent:g}, {estimate}", fontsize=9)


def _by_width(result: NtkFateMap, values: np.ndarray) -> np.ndarray:
    """Medians over the draws at the largest ``N``: shape ``(P, W)``."""
    last = np.asarray(values, float)[:, -1]
    with np.errstate(all="ignore"):
        return np.array(
            [[np.nanmedian(row) if np.any(np.isfinite(row)) else np.nan for row in a] for a in last]
        )


def _curves(ax: Any, result: NtkFateMap, values: np.ndarray, only: str | None = None) -> None:
    widths = list(result.config.widths)
    for p, (init, scaling) in enumerate(result.config.pairs()):
        if only is not None and scaling != only:
            continue
        ax.plot(
            widths,
            values[p],
            STYLES[scaling],
            marker="o",
            ms=3,
            color=COLORS[init],
        )
    ax.set_yscale("log")
    _log2_axes(ax, widths)
    ax.set_xlabel("width d_m")
    ax.grid(True, which="both", alpha=0.3)


def _limit_panel(ax: Any, result: NtkFateMap) -> None:
    v = result.values
    ratio = _by_width(result, v["lambda_min"] / v["lambda_limit"])
    _curves(ax, result, np.clip(ratio, FLOOR, None), "linear")
    ax.axhline(1.0, color="0.5", lw=0.8)
    ax.set_ylim(FLOOR / 2, 3.0)
    ax.set_ylabel(f"λ_min(K0) / λ_min(K∞), clipped at {FLOOR:g}")
    ax.set_title(
        f"(g) NTK against its limit, τ0 = d_m^-1, N = {result.config.n_samples[-1]}", fontsize=9
    )


def _share_panel(ax: Any, result: NtkFateMap) -> None:
    traces = result.values["traces"]
    share = (traces[..., 0] + traces[..., 1]) / traces.sum(axis=-1)
    _curves(ax, result, _by_width(result, share))
    ax.set_ylabel("(tr K_Q + tr K_K) / tr K0")
    ax.set_title("(h) share of the attention blocks, where τ0 enters", fontsize=9)


def _rate_panel(ax: Any, result: NtkFateMap) -> None:
    v = result.values
    _curves(ax, result, _by_width(result, v["rate"]))
    bound = _by_width(result, v["rate_bound"])
    widths = list(result.config.widths)
    for p, (init, _) in enumerate(result.config.pairs()):
        ax.plot(widths, bound[p], ":", color=COLORS[init], lw=1)
    ax.set_ylabel("nats of loss per GD step")
    ax.set_title("(i) measured rate (lines), guaranteed rate (dotted)", fontsize=9)
