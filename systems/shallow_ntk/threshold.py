"""The width from which training converges, against the sample count: ``d_m* ∝ N^α``, fitted.

From a grid of outcomes ``converged[i, j, s]`` (sample count ``N_i``, width ``d_m,j``, draw
``s``):

1. per ``N``, the share of draws that converged at each width, ``p(d_m)``;
2. the threshold ``d_m*(N)``: the smallest grid width from which ``p ≥ ½`` at every larger width,
   interpolated linearly in ``log d_m`` between it and the width below it to where ``p = ½``
   (:func:`width_thresholds`).  Censored where the grid does not bracket it: every width
   converges (``d_m* ≤`` the smallest) or the largest does not (``d_m* >`` the largest);
3. the exponent: the least-squares line ``log d_m* = log c + α log N`` through the bracketed
   thresholds (:func:`fit_exponent`), at least two of them;
4. the width grid's share of its uncertainty: the grid only says that ``d_m*`` lies between the
   two grid widths that bracket it (step 2's interpolation is a choice), so every exponent a line
   through thresholds anywhere in those brackets can have is as good (:func:`slope_range`: the
   least-squares slope is linear in the ``log d_m*``, its extremes are at the brackets' ends);
5. its uncertainty: a bootstrap over the draws (:func:`bootstrap_exponent`): per ``N`` the draws
   are resampled with replacement, the same draws at every width (a draw is one data set); each
   resampling gives the range of step 4, and the interval runs from the 2.5 percentile of the
   ranges' lower ends to the 97.5 percentile of their upper ends (draws and grid together).

Everything here is NumPy; the shallow encoder's fate map (:mod:`gradflow.systems.fate`) uses it, and the width
sweep its :func:`fit_slope`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "Exponent",
    "bootstrap_exponent",
    "fit_exponent",
    "fit_slope",
    "slope_range",
    "width_brackets",
    "width_thresholds",
]

BOOTSTRAP_DRAWS = 2000
"""Resamplings of the draws behind an exponent's interval."""


def width_thresholds(widths: np.ndarray, converged: np.ndarray) -> np.ndarray:
    """``d_m*`` per sample count from the outcomes (module docstring, step 2).

    Args:
        widths: ascending grid widths, shape ``(W,)``.
        converged: booleans of shape ``(n, W, S)``: ``n`` sample counts, ``S`` draws.

    Returns:
        Shape ``(n,)``: the threshold, ``-inf`` where every width converges (``d_m*`` at or
        below the smallest), ``+inf`` where the largest does not.
    """
    logs = np.log(np.asarray(widths, float))
    shares = np.mean(np.asarray(converged, bool), axis=-1)
    out = np.empty(shares.shape[0])
    for i, (p, k) in enumerate(zip(shares, _crossings(shares))):
        if k in (0, p.size):
            out[i] = -np.inf if k == 0 else np.inf
        else:
            t = (0.5 - p[k - 1]) / (p[k] - p[k - 1])
            out[i] = np.exp(logs[k - 1] + t * (logs[k] - logs[k - 1]))
    return out


def _crossings(shares: np.ndarray) -> list[int]:
    """Per row of converged shares ``(n, W)``: the index of the smallest width from which every
    share is ``≥ ½`` (``W`` where the largest width's is not)."""
    out = []
    for p in shares:
        failing = np.nonzero(p < 0.5)[0]
        out.append(0 if failing.size == 0 else int(failing[-1]) + 1)
    return out


def width_brackets(widths: np.ndarray, converged: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The grid widths that bracket ``d_m*`` per sample count (module docstring, step 4).

    Args:
        widths: ascending grid widths, shape ``(W,)``.
        converged: booleans of shape ``(n, W, S)``.

    Returns:
        ``(below, above)``, each shape ``(n,)``: the widths between which the share of converged
        draws crosses ½ for the last time; ``(-inf, -inf)`` where every width converges and
        ``(inf, inf)`` where the largest does not (censored, as :func:`width_thresholds`).
    """
    widths = np.asarray(widths, float)
    shares = np.mean(np.asarray(converged, bool), axis=-1)
    below, above = np.empty(shares.shape[0]), np.empty(shares.shape[0])
    for i, k in enumerate(_crossings(shares)):
        if k in (0, widths.size):
            below[i] = above[i] = -np.inf if k == 0 else np.inf
        else:
            below[i], above[i] = widths[k - 1], widths[k]
    return below, above


def slope_range(n_samples: np.ndarray, below: np.ndarray, above: np.ndarray) -> tuple[float, float]:
    """The least and the largest least-squares slope of ``log d_m*`` against ``log N`` over every
    choice of ``d_m*`` in ``[below, above]`` (module docstring, step 4), the censored sample
    counts left out; ``(nan, nan)`` with fewer than two distinct ``N`` bracketed.

    The slope is ``Σ_i c_i log d_m*_i`` with ``c_i = (x_i − x̄)/Σ(x − x̄)²``, ``x = log N``, so its
    least value takes ``below`` where ``c_i > 0`` and ``above`` where ``c_i < 0``."""
    n, lo, hi = (np.asarray(a, float) for a in (n_samples, below, above))
    keep = np.isfinite(lo) & np.isfinite(hi)
    if np.unique(n[keep]).size < 2:
        return float("nan"), float("nan")
    x = np.log(n[keep])
    weights = (x - x.mean()) / np.sum((x - x.mean()) ** 2)
    log_lo, log_hi = np.log(lo[keep]), np.log(hi[keep])
    least = np.sum(np.where(weights > 0, weights * log_lo, weights * log_hi))
    most = np.sum(np.where(weights > 0, weights * log_hi, weights * log_lo))
    return float(least), float(most)


def fit_exponent(n_samples: np.ndarray, thresholds: np.ndarray) -> tuple[float, float]:
    """``(α, c)`` of the least-squares line ``log d_m* = log c + α log N`` through the finite
    thresholds; ``(nan, nan)`` with fewer than two distinct ``N``."""
    n, t = np.asarray(n_samples, float), np.asarray(thresholds, float)
    keep = np.isfinite(t)
    if np.unique(n[keep]).size < 2:
        return float("nan"), float("nan")
    slope, intercept = np.polyfit(np.log(n[keep]), np.log(t[keep]), 1)
    return float(slope), float(np.exp(intercept))


@dataclass(frozen=True)
class Exponent:
    """A fitted width threshold ``d_m* = c N^α``.

    Attributes:
        alpha: ``α`` from every draw (NaN if fewer than two thresholds are bracketed).
        c: the prefactor ``c``.
        low, high: the interval over the draws and the width grid (module docstring, step 5;
            NaN if no resampling brackets two thresholds).
        grid_low, grid_high: the range of ``α`` over the width grid alone, every draw kept
            (step 4).
        thresholds: ``d_m*`` per ``N`` from every draw (``±inf`` where censored).
        usable: the share of resamplings that gave an exponent.
    """

    alpha: float
    c: float
    low: float
    high: float
    grid_low: float
    grid_high: float
    thresholds: np.ndarray
    usable: float

    def record(self) -> dict[str, object]:
        """JSON-ready: ``alpha``, ``c``, ``interval`` (draws and grid), ``grid_range``,
        ``thresholds`` (``"below"`` where censored below the grid, ``"above"`` beyond it),
        ``usable``."""

        def shown(t: float) -> object:
            return float(t) if np.isfinite(t) else ("below" if t < 0 else "above")

        return {
            "alpha": _finite(self.alpha),
            "c": _finite(self.c),
            "interval": [_finite(self.low), _finite(self.high)],
            "grid_range": [_finite(self.grid_low), _finite(self.grid_high)],
            "thresholds": [shown(t) for t in self.thresholds],
            "usable": self.usable,
        }


def _finite(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def bootstrap_exponent(
    n_samples: np.ndarray,
    widths: np.ndarray,
    converged: np.ndarray,
    *,
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = 0,
) -> Exponent:
    """The threshold exponent with its interval over the draws and the grid (module docstring,
    steps 2–5).

    Args:
        n_samples: the sample counts, shape ``(n,)``.
        widths: ascending grid widths, shape ``(W,)``.
        converged: booleans of shape ``(n, W, S)``.
        draws: bootstrap resamplings.
        seed: seed of the resampling.
    """
    converged = np.asarray(converged, bool)
    thresholds = width_thresholds(widths, converged)
    alpha, c = fit_exponent(n_samples, thresholds)
    grid_low, grid_high = slope_range(n_samples, *width_brackets(widths, converged))
    rng = np.random.default_rng(seed)
    count = converged.shape[-1]
    lows, highs = [], []
    for _ in range(draws):
        picks = rng.integers(0, count, size=(converged.shape[0], count))
        resampled = np.take_along_axis(converged, picks[:, None, :], axis=-1)
        least, most = slope_range(n_samples, *width_brackets(widths, resampled))
        if np.isfinite(least):
            lows.append(least)
            highs.append(most)
    low, high = (np.percentile(lows, 2.5), np.percentile(highs, 97.5)) if lows else (np.nan, np.nan)
    return Exponent(
        alpha=alpha,
        c=c,
        low=float(low),
        high=float(high),
        grid_low=grid_low,
        grid_high=grid_high,
        thresholds=thresholds,
        usable=len(lows) / draws,
    )


def fit_slope(widths: np.ndarray, values: np.ndarray) -> float:
    """Least-squares slope of ``log values`` against ``log widths``.

    Repeated widths (several seeds) are first combined by the geometric mean.

    Returns:
        The slope, or NaN with fewer than two distinct widths or any value that is not positive
        and finite.
    """
    widths, values = np.asarray(widths, float), np.asarray(values, float)
    if not np.all(np.isfinite(values) & (values > 0)):
        return float("nan")
    distinct = np.unique(widths)
    if distinct.size < 2:
        return float("nan")
    means = np.array([np.mean(np.log(values[widths == w])) for w in distinct])
    return float(np.polyfit(np.log(distinct), means, 1)[0])
