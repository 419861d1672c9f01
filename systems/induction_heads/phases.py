"""Phases of an ICL-MC training run: which strategy the model is nearest to, and when.

Source of the phenomenon: Edelman et al., "The Evolution of Statistical Induction Heads" (2024),
§3: predictions start uniform, settle on a plateau near the in-context unigram strategy, then
drop suddenly to the bigram strategy.  Here a run's phase at an evaluation step is the strategy
``m`` with the smallest distance ``E KL(q^(m) ‖ p_θ)`` (by default averaged over positions), and

- the phase intervals are the maximal runs of evaluation steps with the same nearest strategy;
- the transition step is the first evaluation step from which bigram stays nearest to the end;
- the plateau is the unigram phase: its length is the transition step minus the first step at
  which unigram is nearest (0 if unigram is never nearest; ``None`` if the run never reaches
  bigram, with ``censored`` set).

:func:`stages` sums a run up the way fate maps compare runs: the order of its stages with
one-evaluation flickers between them left out, the final stage, the time spent in the uniform
and in the unigram stage, and the transition times.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .strategies import STRATEGY_NAMES, nearest

__all__ = ["Phases", "Stages", "phases", "stages"]


@dataclass(frozen=True)
class Phases:
    """The phase structure of one run (steps in optimizer steps).

    Attributes:
        intervals: ``(strategy, first step, last step)`` for each maximal run of evaluations.
        order: the strategies in the order they were nearest (consecutive repeats merged).
        transition_step: first step from which bigram stays nearest, or ``None``.
        unigram_onset: first step at which unigram is nearest, or ``None``.
        plateau_length: ``transition_step - unigram_onset``; 0 without a unigram phase; ``None``
            if the run never settles on bigram.
        censored: the run ended before settling on bigram.
    """

    intervals: list[tuple[str, float, float]]
    order: list[str]
    transition_step: float | None
    unigram_onset: float | None
    plateau_length: float | None
    censored: bool

    def metadata(self) -> dict[str, Any]:
        return {
            "intervals": [list(i) for i in self.intervals],
            "order": self.order,
            "transition_step": self.transition_step,
            "unigram_onset": self.unigram_onset,
            "plateau_length": self.plateau_length,
            "censored": self.censored,
        }

    def describe(self) -> str:
        """One line: ``uniform [0, 60] → unigram [80, 680] → bigram [700, 2000]``."""
        return " → ".join(f"{m} [{a:g}, {b:g}]" for m, a, b in self.intervals)


def phases(steps: np.ndarray, distances: np.ndarray) -> Phases:
    """The phases of a run from its distances to the strategies.

    Args:
        steps: evaluation steps, shape ``(n,)``, increasing.
        distances: distances to uniform, unigram, bigram, shape ``(n, 3)``, nats.

    Returns:
        The :class:`Phases` (module docstring for the definitions).
    """
    steps = np.asarray(steps, dtype=float)
    labels = nearest(distances)
    cuts = np.flatnonzero(np.diff(labels)) + 1
    starts = np.concatenate([[0], cuts])
    ends = np.concatenate([cuts - 1, [len(labels) - 1]])
    intervals = [
        (STRATEGY_NAMES[labels[s]], float(steps[s]), float(steps[e])) for s, e in zip(starts, ends)
    ]
    order = [name for name, _, _ in intervals]
    bigram = STRATEGY_NAMES.index("bigram")
    unigram = STRATEGY_NAMES.index("unigram")
    transition = float(steps[starts[-1]]) if labels[-1] == bigram else None
    onset_idx = np.flatnonzero(labels == unigram)
    onset = float(steps[onset_idx[0]]) if onset_idx.size else None
    if transition is None:
        plateau = None
    elif onset is None or onset > transition:
        plateau = 0.0
    else:
        plateau = transition - onset
    return Phases(intervals, order, transition, onset, plateau, transition is None)


@dataclass(frozen=True)
class Stages:
    """A run's stages as fate maps compare them (steps in optimizer steps).

    Attributes:
        order: the strategies in the order they were nearest, an interior phase shorter than
            ``min_evals`` evaluations left out and repeats merged.
        final: the nearest strategy at the last evaluation.
        uniform_time: the first step at which uniform is no longer nearest (the time spent in
            the uniform stage), or ``None`` if it always is.
        unigram_time: the plateau length (:attr:`Phases.plateau_length`).
        unigram_onset, transition_step: as in :class:`Phases`.
    """

    order: tuple[str, ...]
    final: str
    uniform_time: float | None
    unigram_time: float | None
    unigram_onset: float | None
    transition_step: float | None

    @property
    def outcome(self) -> str:
        """The order as one word: ``uniform→unigram→bigram``."""
        return "→".join(self.order)


def stages(steps: np.ndarray, distances: np.ndarray, min_evals: int = 2) -> Stages:
    """The :class:`Stages` of a run from its distances to the strategies.

    Args:
        steps: evaluation steps, shape ``(n,)``, increasing.
        distances: distances to uniform, unigram, bigram, shape ``(n, 3)``, nats.
        min_evals: the fewest evaluations an interior phase needs to count in the order.
    """
    ph = phases(steps, distances)
    steps = np.asarray(steps, dtype=float)
    labels = nearest(distances)
    kept = []
    for i, (name, first, last) in enumerate(ph.intervals):
        evaluations = int(np.sum((steps >= first) & (steps <= last)))
        if 0 < i < len(ph.intervals) - 1 and evaluations < min_evals:
            continue
        if not kept or kept[-1] != name:
            kept.append(name)
    uniform = STRATEGY_NAMES.index("uniform")
    left = np.flatnonzero(labels != uniform)
    return Stages(
        order=tuple(kept),
        final=STRATEGY_NAMES[labels[-1]],
        uniform_time=float(steps[left[0]]) if left.size else None,
        unigram_time=ph.plateau_length,
        unigram_onset=ph.unigram_onset,
        transition_step=ph.transition_step,
    )
