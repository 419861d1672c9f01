"""Stages of a two-mixture training run, and the ``ln(1/ω)`` law of the attention stage.

Stage detection (:func:`detect_stages`) reads three times off a run:

- ``t_align``: the neurons have aligned with the signal span, i.e. the cosine between the neuron
  weights and their projection on ``span U``, ``(Σ_r ‖Uᵀ w_r‖² / Σ_r ‖w_r‖²)^{1/2}``, first
  reaches ``align_level`` (default 0.99; at initialization it is about ``√(2K/d)``);
- ``t_attention``: the scores leave the ``O(ω²)`` regime, i.e. ``max_{h,a,b} |B_h[a, b]|`` first
  reaches ``score_level`` (default 1);
- ``t_fit``: the loss first falls below ``loss_level`` (default 0.05 nats).

The attention stage lasts ``t_attention - t_align``.  With the neurons held fixed and the
infinite-width initialization (``B = 0``, ``P_Q = P_K = ω² I``), a constant driving gradient
``G = -γ e_a e_bᵀ`` makes the score ``ω² sinh(2γt)``, which reaches ``s`` at
``arcsinh(s/ω²)/(2γ) ≈ ln(2s/ω²)/(2γ)``: linear in ``ln(1/ω)`` with slope ``1/γ``.
:func:`fit_log_law` fits ``duration = a ln(1/ω) + b`` to measured durations; :func:`omega_sweep`
measures them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gradflow import GradflowError, progress_bar

from .training import MixtureRun, TrainOptions, train_reduced
from .transformer import MixtureConfig

__all__ = [
    "LogLaw",
    "StageTimes",
    "detect_stages",
    "first_crossing",
    "fit_log_law",
    "omega_sweep",
]


@dataclass(frozen=True)
class StageTimes:
    """Detected stage times of a run (flow-time units; NaN where not reached).

    Attributes:
        t_align: neuron alignment with the signal span reached ``align_level``.
        t_attention: ``max |B|`` reached ``score_level``.
        t_fit: the loss fell below ``loss_level``.
        levels: the three levels used.
    """

    t_align: float
    t_attention: float
    t_fit: float
    levels: dict[str, float]

    @property
    def attention_duration(self) -> float:
        """``t_attention - t_align``: the length of the attention stage."""
        return self.t_attention - self.t_align

    def metadata(self) -> dict[str, Any]:
        """The times, the attention-stage duration and the levels, as a plain dict."""
        return {
            "t_align": self.t_align,
            "t_attention": self.t_attention,
            "t_fit": self.t_fit,
            "attention_duration": self.attention_duration,
            "levels": dict(self.levels),
        }


def detect_stages(
    run: MixtureRun, align_level: float = 0.99, score_level: float = 1.0, loss_level: float = 0.05
) -> StageTimes:
    """The stage times of a run (see the module docstring for the three definitions).

    Each is the first record time at which its criterion holds, NaN if it never does.
    """

    def first(reached: np.ndarray) -> float:
        return float(run.ts[np.argmax(reached)]) if reached.any() else float("nan")

    max_score = np.abs(run.scores).max(axis=(1, 2, 3))
    return StageTimes(
        t_align=first(run.span_cosine >= align_level),
        t_attention=first(max_score >= score_level),
        t_fit=first(run.loss <= loss_level),
        levels={"align_level": align_level, "score_level": score_level, "loss_level": loss_level},
    )


def first_crossing(ts: np.ndarray, values: np.ndarray, level: float, rising: bool) -> float:
    """When ``values`` (recorded at ``ts``) first reaches ``level > 0`` from below (``rising``)
    or from above, interpolated linearly in ``ln value`` between the two records around the
    crossing (exact for an exponential between records; linearly in the value where one of
    them is 0); NaN if never, ``ts[0]`` if already at the start."""
    values = np.asarray(values, dtype=float)
    reached = values >= level if rising else values <= level
    if not reached.any():
        return float("nan")
    i = int(np.argmax(reached))
    if i == 0:
        return float(ts[0])
    a, b, c = values[i - 1], values[i], level
    if min(a, b) > 0:
        a, b, c = np.log(a), np.log(b), np.log(c)
    share = (c - a) / (b - a) if b != a else 1.0
    return float(ts[i - 1] + share * (ts[i] - ts[i - 1]))


@dataclass(frozen=True)
class LogLaw:
    """The fit ``duration = a ln(1/ω) + b`` of attention-stage durations.

    Attributes:
        slope: ``a`` (flow time per nat of ``ln(1/ω)``).
        intercept: ``b`` (flow time).
        r2: coefficient of determination of the fit.
        max_residual: largest ``|duration - fit|`` (flow time).
    """

    slope: float
    intercept: float
    r2: float
    max_residual: float

    def __call__(self, omega: np.ndarray) -> np.ndarray:
        """The fitted duration at ``ω``."""
        return self.slope * np.log(1 / np.asarray(omega)) + self.intercept


def fit_log_law(omegas: Sequence[float], durations: Sequence[float]) -> LogLaw:
    """Least-squares fit of ``duration = a ln(1/ω) + b`` (NaN durations are left out).

    Raises:
        GradflowError: fewer than two finite durations.
    """
    x = np.log(1 / np.asarray(omegas, dtype=float))
    d = np.asarray(durations, dtype=float)
    ok = np.isfinite(d)
    if ok.sum() < 2:
        raise GradflowError(
            f"need at least two finite attention-stage durations to fit, got {int(ok.sum())}"
        )
    a, b = np.polyfit(x[ok], d[ok], 1)
    residual = d[ok] - (a * x[ok] + b)
    total = ((d[ok] - d[ok].mean()) ** 2).sum()
    r2 = 1.0 - (residual**2).sum() / total if total > 0 else 1.0
    return LogLaw(
        slope=float(a), intercept=float(b), r2=float(r2), max_residual=float(np.abs(residual).max())
    )


def omega_sweep(
    config: MixtureConfig,
    omegas: Sequence[float],
    options: TrainOptions | None = None,
    *,
    levels: dict[str, float] | None = None,
    progress: bool | None = None,
) -> tuple[list[StageTimes], LogLaw | None]:
    """Stage times across initialization scales, with the ``O(ln 1/ω)`` fit of the attention stage.

    Each ``ω`` runs the reduced dynamics from the projection of the full initialization (same
    seed), whose descent map is the exact projection of full descent.

    Returns:
        ``(stage times per ω, fit)``; the fit is ``None`` when fewer than two durations exist.
    """
    times = []
    with progress_bar(total=len(omegas), unit="ω", enabled=progress, desc="ω sweep") as bar:
        for omega in omegas:
            run = train_reduced(
                dataclasses.replace(config, omega=float(omega)), options, progress=False
            )
            times.append(detect_stages(run, **(levels or {})))
            bar.update(1)
    durations = [t.attention_duration for t in times]
    law = fit_log_law(omegas, durations) if np.isfinite(durations).sum() >= 2 else None
    return times, law
