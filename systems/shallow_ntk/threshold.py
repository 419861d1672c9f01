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
4. its uncertainty: a bootstrap over the draws (:func:`bootstrap_exponent`): per ``N`` the draws
   are resampled with replacement, the same draws at every width (a draw is one data set), and the
   exponent refitted; the interval is the 2.5 and 97.5 percentiles.

Everything here is NumPy; the shallow encoder's fate map (:mod:`gradflow.systems.fate`) uses it, and the width
sweep its :func:`fit_slope`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Exponent", "bootstrap_exponent", "fit_exponent", "fit_slope", "width_thresholds"]

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
    for i, p in enumerate(shares):
        failing = np.nonzero(p < 0.5)[0]
        if failing.size == 0:
            out[i] = -np.inf
        elif failing[-1] == p.size - 1:
            out[i] = np.inf
        else:
            k = failing[-1] + 1
            t = (0.5 - p[k - 1]) / (p[k] - p[k - 1])
            out[i] = np.exp(logs[k - 1] + t * (logs[k] - logs[k - 1]))
    return out


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
        low, high: the 2.5 and 97.5 percentiles of ``α`` over the bootstrap resamplings that
            bracket at least two thresholds (NaN if none does).
        thresholds: ``d_m*`` per ``N`` from every draw (``±inf`` where censored).
        usable: the share of resamplings that gave an exponent.
    """

    alpha: float
    c: float
    low: float
    high: float
    thresholds: np.ndarray
    usable: float

    def record(self) -> dict[str, object]:
        """JSON-ready: ``alpha``, ``c``, ``interval``, ``thresholds`` (``None`` where censored
        below the grid, ``"above"`` beyond it), ``usable``."""

        def shown(t: float) -> object:
            return float(t) if np.isfinite(t) else ("below" if t < 0 else "above")

        return {
            "alpha": _finite(self.alpha),
            "c": _finite(self.c),
            "interval": [_finite(self.low), _finite(self.high)],
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
    """The threshold exponent with its bootstrap interval (module docstring, steps 2–4).

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
    rng = np.random.default_rng(seed)
    count = converged.shape[-1]
    samples = []
    for _ in range(draws):
        picks = rng.integers(0, count, size=(converged.shape[0], count))
        resampled = np.take_along_axis(converged, picks[:, None, :], axis=-1)
        slope, _ = fit_exponent(n_samples, width_thresholds(widths, resampled))
        if np.isfinite(slope):
            samples.append(slope)
    low, high = np.percentile(samples, [2.5, 97.5]) if samples else (np.nan, np.nan)
    return Exponent(
        alpha=alpha,
        c=c,
        low=float(low),
        high=float(high),
        thresholds=thresholds,
        usable=len(samples) / draws,
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
