"""Closed-form critical sets sampled in the box and grouped by kind into :class:`CriticalSet` s:
strata of one kind and Morse index, joined along the set, each with its sample point nearest the
box centre.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
from scipy.optimize import minimize
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from .._landscape.base import ClosedForm, Landscape
from .._outcome import KINDS, Kind
from .classify import Classification, classify_points
from .coercive import global_min_loss
from .merging import nearest_first
from .pieces import (
    SampledPiece,
)
from .sets import CriticalSet, make_set, set_dimension

__all__ = ["MAX_LATTICE", "SAMPLE_GRID", "group"]
SAMPLE_GRID = 41
"""About this many lattice values across a parameter's default range start a set's sample."""
MAX_LATTICE = 400
"""At most this many lattice values per free axis inside the box."""
NEAREST_XTOL = 1e-12
"""The search for a set's point nearest the box centre stops when Nelder–Mead's simplex is this
narrow along every free coordinate.  It has no tolerance on the squared distance: near the
nearest point that changes by less than its own rounding (a distance of 1 changes by ``δ²``
when the point moves by ``δ``), so a tolerance of ``1e-16`` was met only where the simplex's
values happened to round alike, and otherwise the search ran its 4,000 iterations
(``(1 − xyz)²`` in ``[−3, 2] × [−2, 3] × [−1, 2.5]``: two of its components, 15,886 evaluations
each against 85–219 for the others)."""


def group(
    landscape: Landscape,
    piece: ClosedForm,
    sampled: SampledPiece,
    classes: Classification,
    box: np.ndarray,
) -> list[CriticalSet]:
    """The :class:`CriticalSet` s of a closed-form piece: one per kind, and one per more
    degenerate stratum of a kind.

    The points of one kind are described at their generic points (:func:`_strata`); points of
    that kind whose Hessian has a larger nullity (the origin of ``(1 − abc)²`` on each axis, where
    the whole Hessian vanishes) are a set of their own, named after the piece with their Morse
    index and nullity.  Each is split into connected components along the piece's sampling grid
    (:meth:`~gradflow._critical.pieces.SampledPiece.components`, joined where a finer grid shows them one:
    :func:`_joined_finer`); for a curve, each run of neighbouring samples is one polyline.
    The sample point of the generic set is the point of the piece nearest the box centre
    (:func:`_nearest_on_piece`), and each other component's point nearest it follows
    (:func:`_component_samples`).
    """
    out = []
    for kind in KINDS:
        idx = np.flatnonzero(classes.kinds == kind)
        if not idx.size:
            continue
        for rows, stratum in _strata(classes, idx):
            generic = stratum is None
            labels = sampled.components(rows)
            if generic:
                labels = _joined_finer(sampled, rows, labels)
            dimension = (
                sampled.dimension
                if generic
                else set_dimension(sampled.points[rows], classes.nullity[rows])
            )
            dimension = dimension if rows.size > 1 else 0
            name = piece.name if generic else f"{piece.name} ({stratum})"
            equation = (
                piece.equation
                if generic or piece.equation is None
                else f"{piece.equation} ({stratum})"
            )
            made = make_set(
                landscape, name, equation, sampled.points, classes, rows, dimension, labels, box
            )
            if generic:
                nullity = int(classes.nullity[rows].max())
                samples = _component_samples(landscape, piece, made, box, nullity)
                made = dataclasses.replace(made, samples=nearest_first(samples, box.mean(axis=1)))
            if dimension == 1 and sampled.dimension == 1:
                starts = np.flatnonzero(np.diff(sampled.order[rows]) != 1) + 1
                made = dataclasses.replace(made, segments=(0, *starts.tolist()))
            out.append(made)
    return out


def _strata(classes: Classification, idx: np.ndarray) -> list[tuple[np.ndarray, str | None]]:
    """The points ``idx`` of one kind split where the set's description does not hold.

    The generic points are those whose Hessian nullity is the most common one (ties: the
    smallest), with their most common Morse index; they come first, with stratum ``None``,
    together with the points that differ from them only by a larger nullity (where two lines of
    minima cross, as ``x = 0`` and ``y = 0`` of ``x²y²``: a minimum of the same index there
    too).  Points with a larger nullity and another Morse index follow, one group per index and
    nullity, each with its label (``"index 0, nullity 3"``): the origin of ``(1 − abc)²``, where
    the Hessian vanishes, on axes of index-1 saddles.
    """
    nullity, index = classes.nullity[idx], classes.morse_index[idx]
    values, counts = np.unique(nullity, return_counts=True)
    typical = int(values[int(np.argmax(counts))])
    indices, counts = np.unique(index[nullity == typical], return_counts=True)
    generic = int(indices[int(np.argmax(counts))])
    special = (nullity > typical) & (index != generic)
    out: list[tuple[np.ndarray, str | None]] = [(idx[~special], None)]
    for i, n in sorted({(int(i), int(n)) for i, n in zip(index[special], nullity[special])}):
        rows = idx[special & (index == i) & (nullity == n)]
        out.append((rows, f"index {i}, nullity {n}"))
    return out


def _joined_finer(sampled: SampledPiece, rows: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``labels`` (of ``sampled.points[rows]``) with the components that a finer grid shows to be
    one (:attr:`~gradflow._critical.pieces.SampledPiece.linked`) given one label."""
    if sampled.linked is None:
        return labels
    _, coarse = np.unique(labels, return_inverse=True)
    _, fine = np.unique(sampled.linked[rows], return_inverse=True)
    n = int(coarse.max()) + 1
    graph = coo_matrix(
        (np.ones(len(rows)), (coarse.reshape(-1), n + fine.reshape(-1))),
        shape=(n + int(fine.max()) + 1,) * 2,
    )
    joined = connected_components(graph, directed=False)[1][:n]
    return np.unique(joined[coarse.reshape(-1)], return_inverse=True)[1].reshape(-1)


def _component_samples(
    landscape: Landscape, piece: ClosedForm, made: CriticalSet, box: np.ndarray, nullity: int
) -> np.ndarray:
    """The set's sample (:func:`_nearest_on_piece` over the whole piece), then the point nearest
    the box centre of each component whose samples lie nearer another component's, shape
    ``(k, dim)``: the branches ``y = 1/x²``, ``x ≷ 0`` of one piece of ``(x²y − 1)²`` have the
    mirror-image points ``(±2^{1/6}, 2^{-1/3})``, not one refined point and one lattice point."""
    owner = _owner(made)
    samples = [_nearest_on_piece(landscape, piece, made, box, nullity)]
    for label in range(made.n_components):
        if not np.any(owner(np.array(samples)) == label):
            samples.append(_nearest_on_piece(landscape, piece, made, box, nullity, label))
    return np.array(samples)


def _owner(made: CriticalSet) -> Callable[[np.ndarray], np.ndarray]:
    """The component of the set's sample nearest each of some points, shape ``(n, dim)`` →
    ``(n,)``."""
    tree = cKDTree(made.points)
    return lambda points: made.components[tree.query(points)[1]]


def _nearest_on_piece(
    landscape: Landscape,
    piece: ClosedForm,
    made: CriticalSet,
    box: np.ndarray,
    nullity: int,
    component: int | None = None,
) -> np.ndarray:
    """The point of a closed-form piece nearest the centre of ``box``, of the set's kind and
    with a Hessian nullity at most ``nullity`` (a generic point of the set, not a more
    degenerate one such as the origin on an axis of ``(1 − abc)²``); with ``component``, the
    nearest one whose nearest sample of the set lies in that component.

    The start is the nearest point of that kind whose free coordinates lie on a lattice fixed by
    the landscape's default ranges (:func:`_lattice`), whatever box was searched; Nelder–Mead then
    moves the varying free coordinates to minimise the distance to the centre (to
    :data:`NEAREST_XTOL`), and the result is kept where it is on the piece, inside the box and
    of the same kind.  So every report prints the same point, however densely and in however
    wide a box the set was sampled.  Without a lattice point to start from, the set's (or the
    component's) sample nearest the centre.
    """
    center, kind = box.mean(axis=1), made.kind
    owner = None if component is None else _owner(made)
    within = made.points if component is None else made.component_points(component)
    fallback = within[int(np.argmin(np.linalg.norm(within - center, axis=1)))]
    start = _nearest_of_kind(
        landscape,
        _lattice(landscape, piece, box),
        center,
        kind,
        nullity,
        None if owner is None else lambda pts: owner(pts) == component,
    )
    if start is None:
        if any(box[i, 0] == box[i, 1] for i in piece.dependent):
            return _nearest_on_slice(landscape, piece, made, box, nullity, fallback)
        return fallback
    free = list(piece.free)
    varying = [j for j, i in enumerate(free) if box[i, 0] < box[i, 1]]
    if not varying or any(box[i, 0] == box[i, 1] for i in piece.dependent):
        return start
    base = start[free].copy()

    def point(f: np.ndarray) -> np.ndarray | None:
        coords = base.copy()
        coords[varying] = f
        full, ok = piece.complete(coords[None])
        inside = np.all((full[0] >= box[:, 0]) & (full[0] <= box[:, 1]))
        return full[0] if ok[0] and np.all(np.isfinite(full[0])) and inside else None

    def distance(f: np.ndarray) -> float:
        p = point(f)
        return np.inf if p is None else float(np.sum((p - center) ** 2))

    with np.errstate(all="ignore"):
        result = minimize(
            distance,
            base[varying],
            method="Nelder-Mead",
            options={"xatol": NEAREST_XTOL, "fatol": np.inf, "maxiter": 4000},
        )
    best = point(result.x)
    if best is None or result.fun > np.sum((start - center) ** 2):
        return start
    if owner is not None and owner(best[None])[0] != component:
        return start
    classes = classify_points(landscape, best[None], global_min_loss(landscape))
    same = classes.kinds[0] == kind and classes.nullity[0] <= nullity
    return best if same else start


def _nearest_of_kind(
    landscape: Landscape,
    points: np.ndarray,
    center: np.ndarray,
    kind: Kind,
    nullity: int,
    owned: Callable[[np.ndarray], np.ndarray] | None,
) -> np.ndarray | None:
    """The point of ``points`` (shape ``(n, dim)``) nearest ``center`` that is of ``kind``, of
    Hessian nullity at most ``nullity`` and (with ``owned``) owned; ``None`` where none is.

    The points are classified nearest first, in batches that grow fourfold from
    :data:`FIRST_BATCH`, until a batch holds one that qualifies: a kind is decided point by
    point, so this is the nearest qualifying point of the whole lattice (ties to the first in
    ``points``' order), at the cost of the batches up to it instead of a classification of
    every lattice point (thousands on a surface of critical points, each probed along its null
    space)."""
    order = np.argsort(np.linalg.norm(points - center, axis=1), kind="stable")
    start, size = 0, FIRST_BATCH
    while start < len(order):
        batch = points[order[start : start + size]]
        classes = classify_points(landscape, batch, global_min_loss(landscape))
        keep = (classes.kinds == kind) & (classes.nullity <= nullity)
        if owned is not None:
            keep &= owned(batch)
        if keep.any():
            return batch[int(np.argmax(keep))]
        start, size = start + size, 4 * size
    return None


FIRST_BATCH = 16
"""How many of the lattice points nearest the centre :func:`_nearest_of_kind` classifies first."""


def _nearest_on_slice(
    landscape: Landscape,
    piece: ClosedForm,
    made: CriticalSet,
    box: np.ndarray,
    nullity: int,
    start: np.ndarray,
) -> np.ndarray:
    """The point of a piece's level set on a slice (a dependent coordinate pinned) nearest the
    centre of ``box``: from the sample ``start`` nearest it, SLSQP moves the varying free
    coordinates to minimise the distance to the centre with the pinned dependent coordinates
    held to their values (to :data:`NEAREST_XTOL`).  So the sample does not depend on how
    densely, or in how wide a box, the slice was sampled (``critical --fixed a=0.5`` and
    ``portrait --fixed a=0.5`` of the three-scalar canonical model print one point).  ``start``
    where the result is off the piece, outside the box, farther or of another kind."""
    center = box.mean(axis=1)
    free = list(piece.free)
    varying = [j for j, i in enumerate(free) if box[i, 0] < box[i, 1]]
    pinned = [i for i in piece.dependent if box[i, 0] == box[i, 1]]
    if not varying:
        return start
    base = start[free].copy()

    def point(f: np.ndarray) -> tuple[np.ndarray, bool]:
        coords = base.copy()
        coords[varying] = f
        full, ok = piece.complete(coords[None])
        return full[0], bool(ok[0]) and bool(np.all(np.isfinite(full[0])))

    def distance(f: np.ndarray) -> float:
        p, ok = point(f)
        return float(np.sum((p - center) ** 2)) if ok else float(np.sum((start - center) ** 2))

    def held(f: np.ndarray) -> np.ndarray:
        p, ok = point(f)
        return p[pinned] - box[pinned, 0] if ok else np.full(len(pinned), np.inf)

    with np.errstate(all="ignore"):
        result = minimize(
            distance,
            base[varying],
            method="SLSQP",
            constraints=[{"type": "eq", "fun": held}],
            options={"ftol": NEAREST_XTOL**2, "maxiter": 200},
        )
        best, ok = point(result.x)
    scale = max(1.0, float(np.max(np.abs(box[pinned, 0]))))
    if (
        not ok
        or not np.all((best >= box[:, 0] - NEAREST_XTOL) & (best <= box[:, 1] + NEAREST_XTOL))
        or np.max(np.abs(best[pinned] - box[pinned, 0])) > NEAREST_XTOL * scale
        or np.sum((best - center) ** 2) > np.sum((start - center) ** 2)
    ):
        return start
    best[pinned] = box[pinned, 0]
    classes = classify_points(landscape, best[None], global_min_loss(landscape))
    same = classes.kinds[0] == made.kind and classes.nullity[0] <= nullity
    return best if same else start


def _lattice(landscape: Landscape, piece: ClosedForm, box: np.ndarray) -> np.ndarray:
    """Points of a closed-form piece inside ``box`` whose free coordinates are multiples of a
    round step (1, 2 or 5 times a power of ten) near 1/40 of each parameter's default range.

    A pinned free coordinate keeps its value; a piece with a pinned dependent coordinate (a level
    set on a slice) gives no lattice.  Returns shape ``(n, dim)``.
    """
    if any(box[i, 0] == box[i, 1] for i in piece.dependent):
        return np.zeros((0, landscape.dim))
    axes = []
    for i in piece.free:
        lo, hi = box[i]
        if lo == hi:
            axes.append(np.array([lo]))
            continue
        low, high = landscape.bound(landscape.param_names[i])
        step = _round_step((high - low) / (SAMPLE_GRID - 1))
        while (hi - lo) / step > MAX_LATTICE:
            step = _round_step(2.5 * step)
        axes.append(step * np.arange(np.ceil(lo / step), np.floor(hi / step) + 1))
    mesh = np.meshgrid(*axes, indexing="ij")
    free = np.stack([m.ravel() for m in mesh], -1) if axes else np.zeros((1, 0))
    points, ok = piece.complete(free)
    ok &= np.all(np.isfinite(points), axis=1)
    ok &= np.all((points >= box[:, 0]) & (points <= box[:, 1]), axis=1)
    return points[ok]


def _round_step(width: float) -> float:
    """The largest of 1, 2, 5 times a power of ten that is at most ``width``."""
    power = 10.0 ** np.floor(np.log10(width))
    return float(max(m * power for m in (1, 2, 5) if m * power <= width * (1 + 1e-12)))
