"""The sublevel shortcut of a basin map: below every non-global critical value a trajectory can
only end on a global minimum, the component of the sublevel set it is in, found by a straight
segment below that level to a global-minimum sample.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from scipy.spatial import cKDTree

from .._compiled.store import stored_for
from .._critical.attractors import AttractorIndex
from .._critical.sets import CriticalSets, decision_level, global_min_level
from .._landscape.base import GradientField, Landscape
from .._outcome import Kind

__all__ = ["CANDIDATES", "SEGMENT_BLOCK", "SEGMENT_SAMPLES", "below_level", "shortcut_level"]
SEGMENT_SAMPLES = 17
"""Points at which a decided endpoint's segment to a global-minimum sample is checked."""
CANDIDATES = 4
"""Nearest global-minimum samples tried for each decided endpoint."""


def below_level(
    landscape: Landscape, index: AttractorIndex, points: np.ndarray, level: float | None
) -> np.ndarray:
    """For points below ``level``, the global-minimum attractor reachable below it, or ``-1``.

    Below every non-global critical value each component of the sublevel set holds exactly one
    component of the global-minimum set (two would be separated by a mountain pass, a critical
    point with a loss in between).  With one global-minimum component that is the answer; with
    several, a straight segment below ``level`` from the point to one of its nearest samples of
    the global-minimum set (the nearest first) shows which.
    """
    ids = np.full(len(points), -1)
    owners = [a.id for a in index.attractors if a.kind == Kind.GLOBAL_MIN]
    samples = index.samples(owners)
    if level is None or not len(samples[0]):
        return ids
    if len(owners) == 1:
        ids[:] = owners[0]
        return ids
    tree = cKDTree(samples[0])
    for k in range(1, min(CANDIDATES, len(samples[0])) + 1):
        todo = np.flatnonzero(ids < 0)
        if not todo.size:
            break
        _, nearest = tree.query(points[todo], k=[k], workers=-1)
        below = _segments_below(landscape, points[todo], samples[0][nearest[:, 0]], level)
        ids[todo[below]] = samples[1][nearest[below, 0]]
    return ids


SEGMENT_BLOCK = 1 << 14
"""Segments checked together, in one call of one compiled program (the blocks are padded to
this size, so that every map shares it)."""


def _segments_below(
    landscape: Landscape, starts: np.ndarray, ends: np.ndarray, level: float
) -> np.ndarray:
    """Whether the loss stays below ``level`` at :data:`SEGMENT_SAMPLES` points of each segment
    from ``starts`` to ``ends`` (shapes ``(n, dim)``), in float64; shape ``(n,)``."""
    check = _segment_program(landscape.field)
    level64 = np.float64(level)
    below = np.empty(len(starts), dtype=bool)
    for i in range(0, len(starts), SEGMENT_BLOCK):
        a, b = starts[i : i + SEGMENT_BLOCK], ends[i : i + SEGMENT_BLOCK]
        pad = ((0, SEGMENT_BLOCK - len(a)), (0, 0))
        block = check(np.pad(a, pad), np.pad(b, pad), landscape.args, level64)
        below[i : i + len(a)] = np.asarray(block)[: len(a)]
    return below


@functools.cache
def _segment_program(field: GradientField) -> Callable[..., jax.Array]:
    """Jitted: ``(starts, ends, args, level)`` to whether ``field.loss`` stays below ``level``
    at the :data:`SEGMENT_SAMPLES` points of each segment, one program for all the samples
    (none of them written out in memory); kept between processes where the field's programs
    are (:func:`gradflow._compiled.store.stored`)."""
    s = np.linspace(0.0, 1.0, SEGMENT_SAMPLES)
    on_segment = jax.vmap(field.loss, in_axes=(0, None))

    def below(starts: jax.Array, ends: jax.Array, args: Any, level: jax.Array) -> jax.Array:
        def one(a: jax.Array, b: jax.Array) -> jax.Array:
            return jnp.all(on_segment(a + s[:, None] * (b - a), args) < level)

        return jax.vmap(one)(starts, ends)

    return stored_for(jax.jit(below), field, f"segments below, {SEGMENT_SAMPLES} samples")


def shortcut_level(critical: CriticalSets, scale: float) -> float | None:
    """The loss below which a trajectory is labelled ``global_min`` without integrating further.

    Just below the lowest non-global critical value (margins relative to the larger of the loss
    scale ``scale`` and the level).  When every critical set found is global
    (e.g. the canonical model at p + q = 1, where the chain is i.i.d.), just above the global
    minimum loss: convergence there can be algebraic, not exponential, and a steady-state test
    alone would run out of budget.
    """
    level, best = decision_level(critical), global_min_level(critical)
    if level is not None:
        return level - 1e-9 * max(scale, abs(level))
    return None if best is None else best + 1e-6 * max(scale, abs(best))
