"""Sampling closed-form critical sets: graphs ``θ_dep = g(θ_free)`` inside a box.

A closed-form set (:class:`~gradflow._landscape.base.ClosedForm`) is a graph over its free parameters.  It is sampled on a grid of the
free parameters inside a box, its dependent parameters evaluated, and the points kept where the
condition holds, the values are real and finite, and the point is inside the box.  A box may pin a
parameter to one value (a slice of parameter space): a pinned free parameter simply takes that
value; a pinned dependent one turns the set into a level set of ``g``, traced with contourpy on a
two-dimensional grid of the free parameters and polished by Newton steps.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from .._errors import GradflowError
from .._landscape.base import ClosedForm, Landscape
from .._landscape.scales import loss_scales

__all__ = [
    "GRADIENT_TOL",
    "MAX_SAMPLES",
    "ON_SET_TOL",
    "SampledPiece",
    "broken_edges",
    "gradient_tol",
    "grid_edges",
    "on_piece",
    "sample_piece",
]

GRADIENT_TOL = 1e-7
"""``‖∇L‖₂ / g`` below which a point counts as critical, ``g`` the loss's gradient scale
(:func:`gradflow._landscape.scales.loss_scales`); declared sets are checked against it."""
MAX_SAMPLES = 40_000
"""At most this many sample points on one closed-form set of dimension 2 or more."""
ON_SET_TOL = 1e-6
"""Distance (parameter units) within which a numerical solution lies on a closed-form set."""
SLICE_TOL = 1e-9
"""A closed-form point lies on a slice where its pinned coordinates are within this times the
landscape's length scale of the slice's values (they are exact up to rounding)."""
SEGMENT_SAMPLES = 33
"""Points at which ``∇L`` is checked on the segment joining a numerical solution to a piece."""
NEWTON_STEPS = 6
"""Newton steps that move contour vertices onto a level set of a graph."""
EDGE_SAMPLES = 32
"""Intervals into which the path between two neighbouring grid samples of a graph is cut to
follow the graph along it (:func:`broken_edges`)."""
FRAGMENT = 5
"""A connected component of at most this many samples may be a fragment of a sampled set (a
band of a surface thinner than the grid's spacing, which the grid crosses at a few points); a
grid with one makes the piece sampled again on finer grids (:func:`_linked`)."""
FINER_POINTS = 2**20
"""At most this many points on the finer grids that join fragments (:func:`_linked`)."""
EDGE_CHUNK = 8192
"""Grid edges followed at once (bounds the memory of :func:`broken_edges`)."""


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
        cuts: pairs of rows of ``points`` that are neighbours on the grid but not on the set,
            shape ``(m, 2)``: between them the graph leaves the box or passes a pole
            (:func:`broken_edges`).
        linked: the component of each sample on a finer grid (all kinds together), shape
            ``(n,)``, or ``None`` where the grid has no fragment or is not refined (curves of a
            level set).
    """

    points: np.ndarray
    index: np.ndarray
    dimension: int
    cuts: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=int))
    linked: np.ndarray | None = None

    def components(self, rows: np.ndarray) -> np.ndarray:
        """Connected components of the samples ``rows`` (indices into ``points``), neighbours on
        the grid joined unless cut: a label per row, shape ``(len(rows),)``."""
        rows = np.asarray(rows, dtype=int)
        edges = grid_edges(self.index[rows])
        if len(self.cuts) and len(edges):
            n = len(self.points)
            pairs = np.sort(rows[edges], axis=1)
            cut = np.sort(self.cuts, axis=1)
            edges = edges[~np.isin(pairs[:, 0] * n + pairs[:, 1], cut[:, 0] * n + cut[:, 1])]
        return _connected(len(rows), edges) if self.index.shape[1] else np.arange(len(rows))

    @property
    def order(self) -> np.ndarray:
        """Position along the polyline, shape ``(n,)`` (curves)."""
        return self.index[:, 0] if self.index.shape[1] else np.zeros(len(self.points), int)


def gradient_tol(landscape: Landscape) -> float:
    """``‖∇L‖₂`` below which a point of ``landscape`` counts as critical: :data:`GRADIENT_TOL`
    times its gradient scale."""
    return GRADIENT_TOL * loss_scales(landscape).gradient


def grid_edges(index: np.ndarray) -> np.ndarray:
    """Pairs of rows of ``index`` (shape ``(n, k)``) whose grid coordinates differ by one along
    one axis, shape ``(m, 2)``."""
    n, k = index.shape
    if n == 0 or k == 0:
        return np.zeros((0, 2), dtype=int)
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
    return np.stack([np.concatenate(rows), np.concatenate(cols)], axis=1)


def _connected(n: int, edges: np.ndarray) -> np.ndarray:
    """Connected components of ``n`` nodes joined by ``edges`` (shape ``(m, 2)``)."""
    if n == 0:
        return np.zeros(0, dtype=int)
    graph = coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n))
    return connected_components(graph, directed=False)[1]


def broken_edges(
    piece: ClosedForm, box: np.ndarray, free: np.ndarray, edges: np.ndarray, intervals: int
) -> np.ndarray:
    """Which grid edges the graph does not follow inside the box, shape ``(m,)``.

    The free coordinates ``free`` (shape ``(n, len(piece.free))``) of the two ends of each edge
    (``edges``, shape ``(m, 2)``) are joined by a straight path cut into ``intervals`` intervals
    (and one more beyond each end, so that every interval of the edge has a neighbour on both
    sides where the graph is inside the box), and the graph is completed along it.  An edge is broken where a point of the path
    is off the set or outside the box, or where one interval's step of a dependent coordinate is
    opposite in sign to both neighbouring steps and larger than their sum: the graph passes a
    pole there (``a = 4c*/(e⁴(1 + 2w|w|)) − 4/e²`` of the three-scalar canonical model
    runs to ``±∞`` at ``w = −1/√2``, and grid samples on both sides lie on two sheets of the set
    that never meet).  Around a simple pole ``C/(t − t₀)`` the step across it is at least
    ``C/δ + C/h`` and its neighbours' sum at most ``C/δ − C/(2h)`` (``δ`` the pole's distance to
    the nearer end of its interval, ``h`` the interval); a graph resolved by the intervals changes
    the sign of its steps once at an extremum, where the steps are smallest, not twice around the
    largest.
    """
    broken = np.zeros(len(edges), dtype=bool)
    dependent = list(piece.dependent)
    t = np.linspace(-1.0, intervals + 1.0, intervals + 3)[None, :, None] / intervals
    for start in range(0, len(edges), EDGE_CHUNK):
        chunk = edges[start : start + EDGE_CHUNK]
        a, b = free[chunk[:, 0]], free[chunk[:, 1]]
        path = (a[:, None, :] + t * (b - a)[:, None, :]).reshape(-1, free.shape[1])
        with np.errstate(all="ignore"):
            points, ok = _inside(piece, box, path)
            points = points.reshape(len(chunk), intervals + 3, -1)
            ok = ok.reshape(len(chunk), -1)
            step = np.diff(np.where(ok[:, :, None], points, np.nan)[:, :, dependent], axis=1)
            middle, before, after = step[:, 1:-1], step[:, :-2], step[:, 2:]
            pole = (
                (np.sign(middle) * np.sign(before) < 0)
                & (np.sign(middle) * np.sign(after) < 0)
                & (np.abs(middle) > np.abs(before) + np.abs(after))
            )
        broken[start : start + len(chunk)] = ~ok[:, 1:-1].all(axis=1) | pole.any(axis=(1, 2))
    return broken


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
    if pinned_dependents and not varying:
        return _pinned_point(landscape, piece, box, free_idx, pinned_dependents)
    if pinned_dependents and (len(pinned_dependents) > 1 or len(varying) not in (1, 2)):
        return SampledPiece(np.zeros((0, landscape.dim)), np.zeros((0, 1), dtype=int), 0)
    if pinned_dependents:
        free_points, order = _level_set(piece, box, pinned_dependents[0], varying, samples)
        index, dimension = order[:, None], len(varying) - 1
    else:
        per_axis = min(samples, max(2, int(MAX_SAMPLES ** (1 / max(len(varying), 1)))))
        free_points, index = _grid(box, free_idx, varying, per_axis)
        dimension = len(varying)
    points, ok = piece.complete(free_points)
    if pinned_dependents:
        points[:, pinned_dependents[0]] = box[pinned_dependents[0], 0]
    ok &= np.all(np.isfinite(points), axis=1)
    ok &= np.all((points >= box[:, 0]) & (points <= box[:, 1]), axis=1)
    sampled = SampledPiece(points[ok], index[ok], dimension)
    if not pinned_dependents and dep_idx and varying:
        edges = grid_edges(index[ok])
        cuts = edges[broken_edges(piece, box, free_points[ok], edges, EDGE_SAMPLES)]
        sampled = dataclasses.replace(sampled, cuts=cuts)
        sampled = dataclasses.replace(
            sampled, linked=_linked(piece, box, varying, per_axis, sampled)
        )
    _check_critical(landscape, piece, sampled.points)
    return sampled


def _pinned_point(
    landscape: Landscape,
    piece: ClosedForm,
    box: np.ndarray,
    free_idx: list[int],
    pinned_dependents: list[int],
) -> SampledPiece:
    """The one point of a piece whose free coordinates are all pinned (an isolated critical
    point, or a set cut across by the slice), if its pinned dependent coordinates lie on the
    slice: within :data:`SLICE_TOL` times the length scale of the slice's values.

    Raises:
        GradflowError: ``∇L ≠ 0`` at the point (the declaration is wrong).
    """
    free_points, index = _grid(box, free_idx, [], 1)
    points, ok = piece.complete(free_points)
    with np.errstate(invalid="ignore"):
        offset = np.abs(points[:, pinned_dependents] - box[pinned_dependents, 0])
        ok &= np.all(offset <= SLICE_TOL * loss_scales(landscape).length, axis=1)
    points[:, pinned_dependents] = box[pinned_dependents, 0]
    ok &= np.all(np.isfinite(points), axis=1)
    ok &= np.all((points >= box[:, 0]) & (points <= box[:, 1]), axis=1)
    sampled = SampledPiece(points[ok], index[ok], 0)
    _check_critical(landscape, piece, sampled.points)
    return sampled


def _grid(
    box: np.ndarray, free_idx: list[int], varying: list[int], per_axis: int
) -> tuple[np.ndarray, np.ndarray]:
    """The free coordinates of a grid of ``per_axis`` values along each varying free axis of
    ``box`` (one value on the others), shape ``(n, len(free_idx))``, and each point's integer
    coordinates along the varying axes, shape ``(n, len(varying))``."""
    axes = [np.linspace(*box[i], per_axis if i in varying else 1) for i in free_idx]
    mesh = np.meshgrid(*axes, indexing="ij")
    free_points = np.stack([g.ravel() for g in mesh], -1) if axes else np.zeros((1, 0))
    grid = np.meshgrid(*[np.arange(len(a)) for a in axes], indexing="ij")
    columns = [grid[free_idx.index(i)].ravel() for i in varying]
    index = np.stack(columns, -1) if columns else np.zeros((free_points.shape[0], 0), int)
    return free_points, index


def _inside(piece: ClosedForm, box: np.ndarray, free: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The piece's points over the free coordinates ``free`` and where they lie on the set with
    finite values inside ``box``, shapes ``(n, dim)`` and ``(n,)``."""
    with np.errstate(all="ignore"):
        points, ok = piece.complete(free)
        ok &= np.all(np.isfinite(points), axis=1)
        ok &= np.all((points >= box[:, 0]) & (points <= box[:, 1]), axis=1)
    return points, ok


def _linked(
    piece: ClosedForm, box: np.ndarray, varying: list[int], per_axis: int, sampled: SampledPiece
) -> np.ndarray | None:
    """The component of each sample on a grid fine enough to join the fragments of the coarse
    one, shape ``(n,)``; ``None`` where the coarse grid has no fragment.

    A band of the set thinner than the coarse spacing (the sheet ``w < −1/√2`` of the
    three-scalar canonical model's Γ* near ``e = 0``, where ``a`` is steep) is crossed by the
    coarse grid at a few isolated samples: fragments of at most :data:`FRAGMENT` samples.
    The grid is refined 2, 4, 8, … times per axis (at most :data:`FINER_POINTS` points) until
    every fragment shares a component with a larger one; a fragment still alone then is an
    island of the set.  Coarse components sharing a component of the finest grid are one.
    """
    coarse = sampled.components(np.arange(len(sampled.points)))
    sizes = np.bincount(coarse)
    fragments = sizes[coarse] <= FRAGMENT
    if not fragments.any() or fragments.all():
        return None
    k = sampled.index.shape[1]
    linked = coarse
    factor = 2
    while ((per_axis - 1) * factor + 1) ** k <= FINER_POINTS:
        linked = _finer_components(piece, box, varying, per_axis, sampled.index, factor)
        if np.isin(linked[fragments], linked[~fragments]).all():
            break
        factor *= 2
    return linked


def _finer_components(
    piece: ClosedForm,
    box: np.ndarray,
    varying: list[int],
    per_axis: int,
    index: np.ndarray,
    factor: int,
) -> np.ndarray:
    """The component of each grid sample (integer coordinates ``index``, shape ``(n, k)``) on a
    grid ``factor`` times finer per axis, its edges followed like the coarse grid's, shape
    ``(n,)``."""
    k = index.shape[1]
    shape = (per_axis - 1) * factor + 1
    free, fine_index = _grid(box, list(piece.free), varying, shape)
    ok = _inside(piece, box, free)[1]
    edges = grid_edges(fine_index[ok])
    intervals = max(4, EDGE_SAMPLES // factor)
    edges = edges[~broken_edges(piece, box, free[ok], edges, intervals)]
    labels = np.full(len(ok), -1)
    labels[ok] = _connected(int(ok.sum()), edges)
    linked = labels[np.ravel_multi_index(tuple((index * factor).T), (shape,) * k)]
    alone = linked < 0
    linked[alone] = linked.max(initial=-1) + 1 + np.arange(alone.sum())
    return linked


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
    dependent coordinates, or at that distance from the graph's tangent plane where the graph is
    steep: :func:`_graph_distance`), or when the straight segment that moves only the dependent
    coordinates onto it has
    ``‖∇L‖₂ ≤`` :func:`gradient_tol` all along: near a degenerate set, where ``∇L`` vanishes to higher
    order (at p + q = 1 the canonical loss is ``H + O(c²)``, so ``‖∇L‖ ∝ e³`` near ``e = 0``), a
    root finder stops at ``‖∇L‖ ≤`` :func:`gradient_tol` well before it reaches the set.  A
    segment through a pole of the loss (an infinite or undefined gradient) joins nothing.
    """
    if not len(points):
        return np.zeros(0, dtype=bool)
    free_idx, dep_idx = list(piece.free), list(piece.dependent)
    targets, inside = piece.complete(points[:, free_idx])
    with np.errstate(invalid="ignore"):
        gap = np.abs(points[:, dep_idx] - targets[:, dep_idx]).max(axis=1, initial=0.0)
    near = (gap <= ON_SET_TOL) & inside
    steep = ~near & inside & np.isfinite(gap)
    if steep.any():
        near[steep] = _graph_distance(piece, points[steep], targets[steep]) <= ON_SET_TOL
    joinable = ~near & inside & np.isfinite(gap)
    if joinable.any():
        start, stop = points[joinable], targets[joinable]
        s = np.linspace(0.0, 1.0, SEGMENT_SAMPLES)[None, :, None]
        segments = start[:, None, :] + s * (stop - start)[:, None, :]
        with np.errstate(over="ignore", invalid="ignore"):
            grads = landscape.grad(segments.reshape(-1, points.shape[1]))
            gradient = np.linalg.norm(grads, axis=1)
        tol = gradient_tol(landscape)
        near[joinable] = (gradient.reshape(len(start), -1) <= tol).all(axis=1)
    return near


SLOPE_STEP = 1e-7
"""Relative step of the central differences that give a graph's slope (:func:`_graph_distance`)."""


def _graph_distance(piece: ClosedForm, points: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """The distance from ``points`` (shape ``(n, dim)``) to the piece's graph ``d = g(f)``
    linearized at their free coordinates (``targets``: the graph's points there), shape ``(n,)``.

    With the gap ``r = d - g(f)`` and the slope ``A = ∂g/∂f`` (central differences), the nearest
    point of the tangent plane lies at ``√(rᵀ(I + AAᵀ)⁻¹r)``: ``|r|/√(1 + |g'|²)`` for a curve.
    Where the graph is steep the vertical gap overstates the distance: a flow's endpoint
    ``10⁻⁸`` from the canonical ``Γ*`` at ``e = -17``, ``w ≈ -0.709``, where ``de/dw ≈ 5·10³``,
    lies ``7·10⁻⁵`` below it in ``e``.  ``inf`` where a slope is not finite."""
    free_idx, dep_idx = list(piece.free), list(piece.dependent)
    gap = points[:, dep_idx] - targets[:, dep_idx]
    base = points[:, free_idx]
    slopes = np.empty((len(points), len(dep_idx), len(free_idx)))
    with np.errstate(all="ignore"):
        for j in range(len(free_idx)):
            h = SLOPE_STEP * np.maximum(1.0, np.abs(base[:, j]))
            up, down = base.copy(), base.copy()
            up[:, j] += h
            down[:, j] -= h
            hi, lo = piece.complete(up)[0], piece.complete(down)[0]
            slopes[:, :, j] = (hi[:, dep_idx] - lo[:, dep_idx]) / (2 * h[:, None])
        distance = np.full(len(points), np.inf)
        ok = np.all(np.isfinite(slopes), axis=(1, 2)) & np.all(np.isfinite(gap), axis=1)
        eye = np.eye(len(dep_idx))
        normal = eye + slopes[ok] @ np.swapaxes(slopes[ok], 1, 2)
        weighted = np.linalg.solve(normal, gap[ok][..., None])[..., 0]
        distance[ok] = np.sqrt(np.einsum("ij,ij->i", gap[ok], weighted))
    return distance
