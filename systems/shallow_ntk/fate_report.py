"""The text lines the shallow encoder's fate map adds to the common summary: the agreement per
draw, the width-threshold table (the exponent fitted over ``N ≤ d``, its grid range and its
interval over the draws and the grid, the thresholds of every ``N``) and the rates of the widest
cell (:class:`~gradflow.systems.shallow_ntk.fate.NtkFateMap`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gradflow import format_table

from ..fate_spread import spread_line
from .config import SUFFICIENT_EXPONENT

if TYPE_CHECKING:
    from .fate import NtkFateMap

__all__ = ["detail_lines"]


def detail_lines(result: NtkFateMap) -> list[str]:
    """The lines of the module docstring, for :meth:`NtkFateMap.text`."""
    c = result.config
    rows = []
    for (_, scaling), (pair, e), thresholds in zip(
        c.pairs(), result.exponents.items(), result.thresholds
    ):
        interval = f"[{e.low:.2f}, {e.high:.2f}]" if np.isfinite(e.low) else "—"
        grid = f"[{e.grid_low:.2f}, {e.grid_high:.2f}]" if np.isfinite(e.grid_low) else "—"
        fitted = f"{e.alpha:.2f}" if np.isfinite(e.alpha) else "—"
        shown = [_threshold_text(t) for t in thresholds]
        rows.append([pair, f"{SUFFICIENT_EXPONENT[scaling]:g}", fitted, grid, interval, *shown])
    outside = [n for n, f in zip(c.n_samples, result.fitted_samples()) if not f]
    header = [
        "init/scaling",
        "α sufficient",
        "α fitted",
        "grid range",
        "95 % draws+grid",
        *(f"d_m*(N={n}){'†' if n in outside else ''}" for n in c.n_samples),
    ]
    rate_rows = [
        [pair, *(_shown(r[k]) for k in ("rate", "rate_bound", "qk_share", "lambda_ratio"))]
        for pair, r in result.rates().items()
    ]
    rate_header = ["init/scaling", "rate", "guaranteed", "Q,K share", "λ_min(K0)/λ_min(K∞)"]
    spread = [spread_line(g, s) for g, s in (result.agreement_spread() or {}).items()]
    note = ["† N > d: outside the theorem's assumptions, left out of the fit"] if outside else []
    return [
        *spread,
        "",
        f"width threshold d_m* = c N^α, where half the draws converge (fit over N ≤ d = {c.d}; "
        "grid range: every threshold anywhere between the grid widths that bracket it):",
        format_table(header, rows),
        *note,
        "",
        f"at N = {c.n_samples[-1]}, d_m = {c.widths[-1]} (medians; rates in nats of loss per GD step):",
        format_table(rate_header, rate_rows),
    ]


def _threshold_text(t: float) -> str:
    return f"{t:.3g}" if np.isfinite(t) else ("≤ grid" if t < 0 else "> grid")


def _shown(x: float) -> str:
    return f"{x:.3g}" if np.isfinite(x) else "—"
