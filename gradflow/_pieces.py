"""Sampling closed-form critical sets: graphs ``θ_dep = g(θ_free)`` inside a box.

A :class:`CriticalSetSpec` is a graph over its free parameters.  It is sampled on a grid of the
free parameters inside a box, its dependent parameters evaluated, and the points kept where the
condition holds, the values are real and finite, and the point is inside the box.  A box may pin a
parameter to one value (a slice of parameter space): a pinned free parameter simply takes that
value; a pinned dependent one turns the set into a level set of ``g``, traced with contourpy on a
two-dimensional grid of the free parameters and polished by Newton steps.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import sympy as sp

from ._errors import GradflowError
from ._model import CriticalSetSpec, ReducedModel

if TYPE_CHECKING:
    from ._bound import BoundModel

__all__ = ["GRADIENT_TOL", "MAX_SAMPLES", "ON_SET_TOL", "SampledPiece", "on_piece", "sample_piece"]

GRADIENT_TOL = 1e-7
"""``‖∇L‖₂`` below which a point counts as critical (declared sets are checked against it)."""
MAX_SAMPLES = 40_000
"""At most this many sample points on one closed-form set of dimension 2 or more."""
ON_SET_TOL = 1e-6
"""Distance (parameter units) within which a numerical solution lies on a closed-form set."""
SEGMENT_SAMPLES = 33
"""Points at which ``∇L`` is checked on the segment joining a numerical solution to a piece."""
NEWTON_STEPS = 6
"""Newton steps that move contour vertices onto a level set of a graph."""


@dataclass(frozen=True)
class SampledPiece:
    """Sample points of one closed-form piece.

    Attributes:
        points: shape ``(n, dim)``, each checked to be critical.
        order: position of each point along its polyline; consecutive integers are neighbours
            on the set, a jump starts a new polyline (curves only).
        dimension: the dimension of the piece inside the box (pinned parameters do not count).
    """

    points: np.ndarray
    order: np.ndarray
    dimension: int


@functools.cache
def _functions(model: ReducedModel, spec: CriticalSetSpec) -> tuple[Any, Any, list[int], list[int]]:
    """NumPy ``g(free θ…, h…)`` (list of dependents), the condition, free and dependent indices."""
    free = [s for s in model.params if s not in spec.solution]
    dependent = [s for s in model.params if s in spec.solution]
    values = sp.lambdify(
        (*free, *model.hyperparams), [spec.solution[s] for s in dependent], modules="numpy"
    )
    condition = sp.lambdify((*model.params, *model.hyperparams), spec.condition, modules="numpy")
    return (
        values,
        condition,
        [model.params.index(s) for s in free],
        [model.params.index(s) for s in dependent],
    )


def _complete(
    model: BoundModel, spec: CriticalSetSpec, free_points: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Full points from free coordinates ``(n, n_free)``, and where the piece's condition holds."""
    values, condition, free_idx, dep_idx = _functions(model.model, spec)
    hyper = list(np.asarray(model.h))
    n = free_points.shape[0]
    points = np.empty((n, model.model.dim))
    points[:, free_idx] = free_points
    with np.errstate(all="ignore"):
        dep = values(*free_points.T, *hyper)
        for j, i in enumerate(dep_idx):
            column = np.broadcast_to(np.asarray(dep[j]), (n,))
            points[:, i] = np.where(np.iscomplex(column), np.nan, np.real(column))
        ok = np.broadcast_to(condition(*points.T, *hyper), (n,)).astype(bool)
    return points, ok


def sample_piece(
    model: BoundModel, spec: CriticalSetSpec, box: np.ndarray, samples: int
) -> SampledPiece:
    """Sample a closed-form piece inside ``box`` (shape ``(dim, 2)``; ``lo == hi`` pins).

    Args:
        model: the model at fixed hyperparameters.
        spec: the piece.
        box: bounds per parameter.
        samples: grid points per free axis (fewer on sets of dimension ≥ 2, see
            :data:`MAX_SAMPLES`).

    Raises:
        GradflowError: ``∇L ≠ 0`` at a sample point (the declaration is wrong).
    """
    _, _, free_idx, dep_idx = _functions(model.model, spec)
    pinned = box[:, 0] == box[:, 1]
    varying = [i for i in free_idx if not pinned[i]]
    pinned_dependents = [i for i in dep_idx if pinned[i]]
    if pinned_dependents and (len(pinned_dependents) > 1 or len(varying) not in (1, 2)):
        return SampledPiece(np.zeros((0, model.model.dim)), np.zeros(0, dtype=int), 0)
    if pinned_dependents:
        free_points, order = _level_set(model, spec, box, pinned_dependents[0], varying, samples)
        dimension = len(varying) - 1
    else:
        per_axis = min(samples, max(2, int(MAX_SAMPLES ** (1 / max(len(varying), 1)))))
        axes = [np.linspace(*box[i], per_axis if i in varying else 1) for i in free_idx]
        mesh = np.meshgrid(*axes, indexing="ij")
        free_points = np.stack([g.ravel() for g in mesh], -1) if axes else np.zeros((1, 0))
        order, dimension = np.arange(free_points.shape[0]), len(varying)
    points, ok = _complete(model, spec, free_points)
    if pinned_dependents:
        points[:, pinned_dependents[0]] = box[pinned_dependents[0], 0]
    ok &= np.all(np.isfinite(points), axis=1)
    ok &= np.all((points >= box[:, 0]) & (points <= box[:, 1]), axis=1)
    piece = SampledPiece(points[ok], order[ok], dimension)
    _check_critical(model, spec, piece.points)
    return piece


def _level_set(
    model: BoundModel,
    spec: CriticalSetSpec,
    box: np.ndarray,
    pinned: int,
    varying: list[int],
    samples: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Free coordinates where the dependent ``θ_pinned = g(free)`` takes its pinned value.

    With one varying free coordinate the solutions are isolated points (sign changes of
    ``g - value`` on a grid); with two they are curves (contourpy).  Both are polished by Newton
    steps, and candidates that Newton does not bring onto the level set (to 1e-9) are dropped:
    a sign change through a pole of ``g`` is not a solution.  Returns the free points
    ``(n, n_free)`` and their order (consecutive integers are neighbours on one curve).
    """
    _, _, free_idx, _ = _functions(model.model, spec)
    value = box[pinned, 0]
    base = np.array([box[i, 0] for i in free_idx])
    columns = [free_idx.index(i) for i in varying]

    def residual(x: np.ndarray) -> np.ndarray:
        free = np.broadcast_to(base, (x.shape[0], len(free_idx))).copy()
        free[:, columns] = x
        return _complete(model, spec, free)[0][:, pinned] - value

    axes = [np.linspace(*box[i], samples) for i in varying]
    with np.errstate(all="ignore"):
        x, order = (_sign_changes if len(varying) == 1 else _contour)(axes, residual)
        step = 1e-7 * max(1.0, float(np.abs(x).max(initial=0.0)))
        for _ in range(NEWTON_STEPS):
            r = residual(x)
            jac = np.stack(
                [
                    (residual(x + step * e) - residual(x - step * e)) / (2 * step)
                    for e in np.eye(x.shape[1])
                ],
                axis=1,
            )
            x = x - (r / np.sum(jac**2, axis=1))[:, None] * jac
        on_level = np.abs(residual(x)) <= ON_SET_TOL * 1e-3
    free = np.broadcast_to(base, (x.shape[0], len(free_idx))).copy()
    free[:, columns] = x
    return free[on_level], order[on_level]


def _sign_changes(axes: list[np.ndarray], residual: Any) -> tuple[np.ndarray, np.ndarray]:
    """Roots of a function of one variable on a grid, by linear interpolation (isolated points)."""
    (xs,) = axes
    r = residual(xs[:, None])
    change = np.flatnonzero(np.isfinite(r[:-1]) & np.isfinite(r[1:]) & (r[:-1] * r[1:] < 0))
    roots = xs[change] - r[change] * (xs[change + 1] - xs[change]) / (r[change + 1] - r[change])
    return roots[:, None], 2 * np.arange(roots.size)


def _contour(axes: list[np.ndarray], residual: Any) -> tuple[np.ndarray, np.ndarray]:
    """Zero level lines of a function of two variables (contourpy), as ordered vertices."""
    import contourpy

    xs, ys = axes
    gx, gy = np.meshgrid(xs, ys)
    field = residual(np.stack([gx.ravel(), gy.ravel()], 1)).reshape(gx.shape)
    lines = contourpy.contour_generator(xs, ys, np.ma.masked_invalid(field)).lines(0.0)
    if not lines:
        return np.zeros((0, 2)), np.zeros(0, dtype=int)
    xy = np.concatenate(lines)
    order = np.concatenate([np.arange(len(line)) + 2 * k * len(xy) for k, line in enumerate(lines)])
    return xy, order


def _check_critical(model: BoundModel, spec: CriticalSetSpec, points: np.ndarray) -> None:
    """Raise if ``∇L ≠ 0`` at a sample point: the declared set is not critical."""
    if not points.size:
        return
    norms = np.linalg.norm(model.grad(points), axis=1)
    worst = int(np.argmax(norms))
    if norms[worst] > GRADIENT_TOL * max(1.0, float(np.abs(points[worst]).max())):
        raise GradflowError(
            f"declared critical set {spec.name!r} of {model!r} is not critical: "
            f"|∇L| = {norms[worst]:.3g} at {points[worst].tolist()}"
        )


def on_piece(model: BoundModel, spec: CriticalSetSpec, points: np.ndarray) -> np.ndarray:
    """Which ``points`` (shape ``(n, dim)``) lie on the piece.

    A point lies on it when it is within :data:`ON_SET_TOL` of the piece (moving only the
    dependent coordinates), or when the straight segment that does that move has
    ``‖∇L‖₂ ≤ GRADIENT_TOL`` all along: near a degenerate set, where ``∇L`` vanishes to higher
    order (at p + q = 1 the canonical loss is ``H + O(c²)``, so ``‖∇L‖ ∝ e³`` near ``e = 0``), a
    root finder stops at ``‖∇L‖ ≤ GRADIENT_TOL`` well before it reaches the set.
    """
    if not len(points):
        return np.zeros(0, dtype=bool)
    _, _, free_idx, dep_idx = _functions(model.model, spec)
    targets, inside = _complete(model, spec, points[:, free_idx])
    with np.errstate(invalid="ignore"):
        gap = np.abs(points[:, dep_idx] - targets[:, dep_idx]).max(axis=1, initial=0.0)
    near = (gap <= ON_SET_TOL) & inside
    joinable = ~near & inside & np.isfinite(gap)
    if joinable.any():
        start, stop = points[joinable], targets[joinable]
        s = np.linspace(0.0, 1.0, SEGMENT_SAMPLES)[None, :, None]
        segments = start[:, None, :] + s * (stop - start)[:, None, :]
        gradient = np.linalg.norm(model.grad(segments.reshape(-1, points.shape[1])), axis=1)
        near[joinable] = (gradient.reshape(len(start), -1) <= GRADIENT_TOL).all(axis=1)
    return near
