"""Sampling closed-form critical sets: graphs ``θ_dep = g(θ_free)`` inside a box.

A closed-form set (:class:`~gradflow.ClosedForm`) is a graph over its free parameters.  It is sampled on a grid of the
free parameters inside a box, its dependent parameters evaluated, and the points kept where the
condition holds, the values are real and finite, and the point is inside the box.  A box may pin a
parameter to one value (a slice of parameter space): a pinned free parameter simply takes that
value; a pinned dependent one turns the set into a level set of ``g``, traced with contourpy on a
two-dimensional grid of the free parameters and polished by Newton steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from ._errors import GradflowError
from ._landscape import ClosedForm, Landscape
from ._scales import loss_scales

__all__ = [
    "GRADIENT_TOL",
    "MAX_SAMPLES",
    "ON_SET_TOL",
    "SampledPiece",
    "components",
    "gradient_tol",
    "on_piece",
    "sample_piece",
]

GRADIENT_TOL = 1e-7
"""``‖∇L‖₂ / g`` below which a point counts as critical, ``g`` the loss's gradient scale
(:func:`gradflow._scales.loss_scales`); declared sets are checked against it."""
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
        index: integer coordinates of each sample on the grid of the piece's varying free
            parameters, shape ``(n, k)``; samples whose coordinates differ by one along a single
            axis are neighbours on the set.  For a curve (``k = 1``) it is the position along
            its polyline; a jump of more than one starts a new polyline.
        dimension: the dimension of the piece inside the box (pinned parameters do not count).
    """

    points: np.ndarray
    index: np.ndarray
    dimension: int

    @property
    def order(self) -> np.ndarray:
        """Position along the polyline, shape ``(n,)`` (curves)."""
        return self.index[:, 0] if self.index.shape[1] else np.zeros(len(self.points), int)


def gradient_tol(landscape: Landscape) -> float:
    """``‖∇L‖₂`` below which a point of ``landscape`` counts as critical: :data:`GRADIENT_TOL`
    times its gradient scale."""
    return GRADIENT_TOL * loss_scales(landscape).gradient


def components(index: np.ndarray) -> np.ndarray:
    """Connected components of samples on a grid: a label per row of ``index`` (shape ``(n, k)``).

    Two samples are neighbours when their grid coordinates differ by one along one axis.
    """
    n, k = index.shape
    if n == 0:
        return np.zeros(0, dtype=int)
    if k == 0:
        return np.arange(n)
    span = index.max(axis=0) - index.min(axis=0) + 3
    strides = np.concatenate([[1], np.cumprod(span[:-1])]).astype(np.int64)
    keys = (index - index.min(axis=0) + 1) @ strides
    order = np.argsort(keys)
    rows, cols = [], []
    for axis in range(k):
        target = keys + strides[axis]
        pos = np.searchsorted(keys[order], target)
        pos = np.minimum(pos, n - 1)
        hit = keys[order][pos] == target
        rows.append(np.flatnonzero(hit))
        cols.append(order[pos[hit]])
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    graph = coo_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
    return connected_components(graph, directed=False)[1]


def sample_piece(
    landscape: Landscape, piece: ClosedForm, box: np.ndarray, samples: int
) -> SampledPiece:
    """Sample a closed-form piece inside ``box`` (shape ``(dim, 2)``; ``lo == hi`` pins).

    Args:
        landscape: the loss.
        piece: the closed-form set.
        box: bounds per parameter.
        samples: grid points per free axis (fewer on sets of dimension ≥ 2, see
            :data:`MAX_SAMPLES`).

    Raises:
        GradflowError: ``∇L ≠ 0`` at a sample point (the declaration is wrong).
    """
    free_idx, dep_idx = list(piece.free), list(piece.dependent)
    pinned = box[:, 0] == box[:, 1]
    varying = [i for i in free_idx if not pinned[i]]
    pinned_dependents = [i for i in dep_idx if pinned[i]]
    if pinned_dependents and (len(pinned_dependents) > 1 or len(varying) not in (1, 2)):
        return SampledPiece(np.zeros((0, landscape.dim)), np.zeros((0, 1), dtype=int), 0)
    if pinned_dependents:
        free_points, order = _level_set(piece, box, pinned_dependents[0], varying, samples)
        index, dimension = order[:, None], len(varying) - 1
    else:
        per_axis = min(samples, max(2, int(MAX_SAMPLES ** (1 / max(len(varying), 1)))))
        axes = [np.linspace(*box[i], per_axis if i in varying else 1) for i in free_idx]
        mesh = np.meshgrid(*axes, indexing="ij")
        free_points = np.stack([g.ravel() for g in mesh], -1) if axes else np.zeros((1, 0))
        grid = np.meshgrid(*[np.arange(len(a)) for a in axes], indexing="ij")
        columns = [grid[free_idx.index(i)].ravel() for i in varying]
        index = np.stack(columns, -1) if columns else np.zeros((free_points.shape[0], 0), int)
        dimension = len(varying)
    points, ok = piece.complete(free_points)
    if pinned_dependents:
        points[:, pinned_dependents[0]] = box[pinned_dependents[0], 0]
    ok &= np.all(np.isfinite(points), axis=1)
    ok &= np.all((points >= box[:, 0]) & (points <= box[:, 1]), axis=1)
    sampled = SampledPiece(points[ok], index[ok], dimension)
    _check_critical(landscape, piece, sampled.points)
    return sampled


def _level_set(
    piece: ClosedForm,
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
    free_idx = list(piece.free)
    value = box[pinned, 0]
    base = np.array([box[i, 0] for i in free_idx])
    columns = [free_idx.index(i) for i in varying]

    def residual(x: np.ndarray) -> np.ndarray:
        free = np.broadcast_to(base, (x.shape[0], len(free_idx))).copy()
        free[:, columns] = x
        return piece.complete(free)[0][:, pinned] - value

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


def _check_critical(landscape: Landscape, piece: ClosedForm, points: np.ndarray) -> None:
    """Raise if ``∇L ≠ 0`` at a sample point: the declared set is not critical."""
    if not points.size:
        return
    norms = np.linalg.norm(landscape.grad(points), axis=1)
    worst = int(np.argmax(norms))
    far = float(np.abs(points[worst]).max()) / loss_scales(landscape).length
    if not norms[worst] <= gradient_tol(landscape) * max(1.0, far):
        raise GradflowError(
            f"declared critical set {piece.name!r} of {landscape.name} is not critical: "
            f"|∇L| = {norms[worst]:.3g} at {points[worst].tolist()}"
        )


def on_piece(landscape: Landscape, piece: ClosedForm, points: np.ndarray) -> np.ndarray:
    """Which ``points`` (shape ``(n, dim)``) lie on the piece.

    A point lies on it when it is within :data:`ON_SET_TOL` of the piece (moving only the
    dependent coordinates), or when the straight segment that does that move has
    ``‖∇L‖₂ ≤`` :func:`gradient_tol` all along: near a degenerate set, where ``∇L`` vanishes to higher
    order (at p + q = 1 the canonical loss is ``H + O(c²)``, so ``‖∇L‖ ∝ e³`` near ``e = 0``), a
    root finder stops at ``‖∇L‖ ≤`` :func:`gradient_tol` well before it reaches the set.
    """
    if not len(points):
        return np.zeros(0, dtype=bool)
    free_idx, dep_idx = list(piece.free), list(piece.dependent)
    targets, inside = piece.complete(points[:, free_idx])
    with np.errstate(invalid="ignore"):
        gap = np.abs(points[:, dep_idx] - targets[:, dep_idx]).max(axis=1, initial=0.0)
    near = (gap <= ON_SET_TOL) & inside
    joinable = ~near & inside & np.isfinite(gap)
    if joinable.any():
        start, stop = points[joinable], targets[joinable]
        s = np.linspace(0.0, 1.0, SEGMENT_SAMPLES)[None, :, None]
        segments = start[:, None, :] + s * (stop - start)[:, None, :]
        gradient = np.linalg.norm(landscape.grad(segments.reshape(-1, points.shape[1])), axis=1)
        tol = gradient_tol(landscape)
        near[joinable] = (gradient.reshape(len(start), -1) <= tol).all(axis=1)
    return near
