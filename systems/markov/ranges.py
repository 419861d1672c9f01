"""Valid ranges of the Markov models' settings, checked without importing JAX.

The command line checks its arguments with these before any model is loaded, so that ``--help``
and a rejected argument answer at once.  :mod:`gradflow.systems.markov.data` and
:mod:`gradflow.systems.markov.transformer` re-export them.
"""

from __future__ import annotations

import math

from gradflow import GradflowError

__all__ = [
    "ATTENTION_KINDS",
    "FULL_LENGTH",
    "MAX_EXACT_LENGTH",
    "MAX_WIDTH",
    "check_attention",
    "MAX_STATES",
    "check_length",
    "check_states",
    "check_switching",
    "check_width",
]

FULL_LENGTH = 6
"""Positions ``N`` of the full single-layer transformer every Markov model is checked against
by default — one value for each use of "the full model": the fate map trains it
(``gradflow fate --length``), the dynamics check of ``gradflow compare`` descends on it, and
the induced metric ``G = JᵀJ`` of ``--metric induced`` is its embedding's
(:meth:`~gradflow.systems.markov.embedding.ReducedEmbedding.metric`: ``G_ee = 1 + N/4``).
``N = 6`` because the documented fate maps and their timings were measured there (825 weights at
``d = 8``) and its exact loss enumerates 64 sequences; the reduced loss itself does not depend
on ``N`` (a stationary chain), only the metric and the full runs do."""
MAX_EXACT_LENGTH = 14
"""Longest sequence whose population loss is computed by enumerating all ``2^N`` sequences.

At ``N = 14`` the enumeration holds 16,384 sequences; each further symbol doubles the memory and
the time of one exact loss evaluation (``2^N × N × 4d`` activations of the FFN alone)."""
ATTENTION_KINDS = ("softmax", "linear")
"""The transformer's attention kinds."""
MAX_WIDTH = 4096
"""Largest embedding width ``d`` accepted."""
MAX_STATES = 64
"""Most states ``k`` of a chain (the ``k``-state transformer has ``k`` logits)."""


def check_switching(p: float, q: float) -> tuple[float, float]:
    """Validate the switching probabilities.

    Raises:
        GradflowError: ``p`` or ``q`` is not a finite number in ``(0, 1)``.
    """
    out = []
    for name, value in (("p", p), ("q", q)):
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise GradflowError(f"{name} must be a number in (0, 1), got {value!r}") from None
        if not (math.isfinite(v) and 0.0 < v < 1.0):
            raise GradflowError(f"{name} = {v:g} is outside the valid range (0, 1)")
        out.append(v)
    return out[0], out[1]


def check_length(length: int, *, exact: bool = False) -> int:
    """Validate a sequence length ``N`` (number of positions the transformer reads).

    Args:
        length: ``N``.
        exact: whether the population loss will be enumerated exactly over all ``2^N`` sequences.

    Raises:
        GradflowError: ``N < 1``, not an integer, or ``N > 14`` with ``exact``.
    """
    if isinstance(length, bool) or int(length) != length or length < 1:
        raise GradflowError(f"sequence length N = {length!r} must be an integer ≥ 1")
    if exact and length > MAX_EXACT_LENGTH:
        raise GradflowError(
            f"sequence length N = {length} is too long for exact enumeration (valid range 1…"
            f"{MAX_EXACT_LENGTH}): it sums over all 2^N = {2**length:,} sequences; use N ≤ "
            f"{MAX_EXACT_LENGTH} or a Monte Carlo estimate"
        )
    return int(length)


def check_width(d: int) -> int:
    """Validate the embedding width.

    Raises:
        GradflowError: ``d`` not an integer in ``1…4096``.
    """
    if isinstance(d, bool) or int(d) != d or not 1 <= d <= MAX_WIDTH:
        raise GradflowError(f"width d = {d!r} must be an integer in 1…{MAX_WIDTH}")
    return int(d)


def check_attention(attention: str) -> str:
    """Validate the attention kind.

    Raises:
        GradflowError: not ``"softmax"`` or ``"linear"``.
    """
    if attention not in ATTENTION_KINDS:
        raise GradflowError(
            f"attention = {attention!r} must be one of {', '.join(ATTENTION_KINDS)}"
        )
    return attention


def check_states(k: int) -> int:
    """Validate a number of chain states.

    Raises:
        GradflowError: ``k`` not an integer in ``2…64``.
    """
    if isinstance(k, bool) or int(k) != k or not 2 <= k <= MAX_STATES:
        raise GradflowError(f"states k = {k!r} must be an integer in 2…{MAX_STATES}")
    return int(k)
