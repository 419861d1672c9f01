"""Agreement of a fate map with its spread over random draws.

A fate map whose full runs depend on a random draw (an initialization, a data set) has an
agreement share per draw; one draw is one sample of it. :func:`agreement_over_draws` reports,
per comparison group, the share of every draw, their mean, the range over the draws and the
95 % Student-t interval of the mean (``mean ± t_{0.975, n−1} s/√n``, ``s`` the standard
deviation over the ``n`` draws; no interval for one draw).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from gradflow import GradflowError

from .fate import FateCell

__all__ = ["agreement_over_draws", "spread_line"]


def agreement_over_draws(cells: Sequence[FateCell], draw: str) -> dict[str, dict[str, Any]]:
    """Per group, the agreement share of each draw and its spread over the draws.

    Args:
        cells: the map's comparisons; each names its draw in ``coords[draw]``.
        draw: the coordinate that names the draw (e.g. ``"seed"``).

    Returns:
        ``{group: {"draws": [draw values], "shares": [share per draw], "mean", "low", "high",
        "interval": [lo, hi] or None}}``, shares in ``[0, 1]``; ``low``/``high`` the range over
        the draws, ``interval`` the 95 % t-interval of the mean (``None`` for one draw).

    Raises:
        GradflowError: a cell without the coordinate ``draw``.
    """
    missing = [c for c in cells if draw not in c.coords]
    if missing:
        raise GradflowError(f"draw = {draw!r}: not a coordinate of {missing[0].coords}")
    out: dict[str, dict[str, Any]] = {}
    for group in dict.fromkeys(c.group for c in cells):
        mine = [c for c in cells if c.group == group]
        draws = list(dict.fromkeys(c.coords[draw] for c in mine))
        shares = np.array(
            [np.mean([c.agree for c in mine if c.coords[draw] == d]) for d in draws], dtype=float
        )
        mean = float(shares.mean())
        interval = None
        if len(shares) > 1:
            from scipy.stats import t as student

            half = student.ppf(0.975, len(shares) - 1) * shares.std(ddof=1) / np.sqrt(len(shares))
            interval = [max(0.0, mean - half), min(1.0, mean + half)]
        out[group] = {
            "draws": draws,
            "shares": shares.tolist(),
            "mean": mean,
            "low": float(shares.min()),
            "high": float(shares.max()),
            "interval": interval,
        }
    return out


def spread_line(group: str, spread: dict[str, Any]) -> str:
    """One text line: a group's mean agreement, its range over the draws and the interval."""
    shares = ", ".join(f"{100 * s:.1f}" for s in spread["shares"])
    line = f"agreement{f' ({group})' if group else ''} over {len(spread['shares'])} draws: "
    line += f"mean {100 * spread['mean']:.1f} % (per draw {shares} %"
    if spread["interval"] is not None:
        lo, hi = spread["interval"]
        line += f"; 95 % interval of the mean [{100 * lo:.1f}, {100 * hi:.1f}] %"
    return line + ")"
