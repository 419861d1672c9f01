"""Critical sets merged and joined: sets of one kind and loss that touch are one set, pieces joined
along a set are one component, repeated points are dropped.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.optimize import root
from scipy.spatial import cKDTree

from .._landscape.base import ClosedForm, Landscape
from .._landscape.scales import loss_scales
from .._outcome import KINDS
from .classify import spectra
from .pieces import (
    ON_SET_TOL,
    gradient_tol,
    on_piece,
)
from .sets import CriticalSet

__all__ = [
    "JOIN_DEPTH",
    "JOIN_STEPS",
    "SAME_LOSS",
    "joined",
    "joined_on_set",
    "merge",
    "nearest_first",
    "restricted",
    "runs_between",
    "same_loss",
    "without_repeats",
    "without_subsets",
]


def merge(sets: list[CriticalSet], center: np.ndarray) -> list[CriticalSet]:
    """Merge sets with the same name and kind (e.g. the two branches of Γ*); order by kind, loss.

    Numerical clusters stay separate; the components of merged sets keep distinct labels.
    """
    merged: dict[tuple[str, str], CriticalSet] = {}
    for s in sets:
        key = (s.name, s.kind)
        if key in merged and s.name != "numerical":
            m = merged[key]
            merged[key] = dataclasses.replace(
                m,
                dimension=max(m.dimension, s.dimension),
                points=np.concatenate([m.points, s.points]),
                components=np.concatenate([m.components, s.components + m.n_components]),
                samples=nearest_first(np.concatenate([m.samples, s.samples]), center),
                segments=(*m.segments, *(len(m.points) + i for i in s.segments)),
            )
        else:
            merged[key if s.name != "numerical" else (f"numerical{len(merged)}", s.kind)] = s
    return sorted(merged.values(), key=lambda s: (KINDS.index(s.kind), s.loss))


TIE = 1e-6
"""Samples whose distances to the centre exceed the least by at most this share of it tie."""


def nearest_first(samples: np.ndarray, center: np.ndarray) -> np.ndarray:
    """``samples`` (shape ``(k, dim)``) ordered by distance to ``center``, those that tie with
    the nearest (within :data:`TIE`: mirror images such as the two branches ``±e`` of the
    canonical ``Γ*``, whose computed distances differ by rounding) first, by their coordinates
    in descending order, so that every report names the same one first."""
    distance = np.sqrt(np.sum((samples - center) ** 2, axis=1))
    if not len(samples):
        return samples
    order = np.argsort(distance, kind="stable")
    tied = distance <= distance.min() * (1 + TIE)
    first = np.flatnonzero(tied)
    first = first[np.lexsort([-samples[first, k] for k in reversed(range(samples.shape[1]))])]
    return samples[np.concatenate([first, order[~tied[order]]])]


SAME_LOSS = 1e-9
"""Two losses are equal when they differ by at most this times the larger of the loss scale and
their sizes."""


def same_loss(a: float, b: float, scale: float) -> bool:
    """Whether two losses are equal within :data:`SAME_LOSS` (relative to ``scale``)."""
    return abs(a - b) <= SAME_LOSS * max(scale, abs(a), abs(b))


def runs_between(
    landscape: Landscape,
    a: np.ndarray,
    b: np.ndarray,
    gap: float,
    loss: float,
) -> bool:
    """Whether the critical point nearest the midpoint of ``a`` and ``b`` lies within ``gap`` of
    both and has loss ``loss``."""
    with np.errstate(all="ignore"):
        found = root(
            landscape.point_grad,
            0.5 * (a + b),
            jac=landscape.point_hessian,
            method="lm",
            options={"xtol": 1e-14, "ftol": 1e-14},
        ).x
        if not np.all(np.isfinite(found)):
            return False
        critical = np.linalg.norm(landscape.grad(found)) <= gradient_tol(landscape)
        near = max(np.linalg.norm(found - a), np.linalg.norm(found - b)) <= gap
        same = same_loss(float(landscape.loss(found)), loss, loss_scales(landscape).loss)
        return bool(critical and near and same)


def joined(landscape: Landscape, sets: list[CriticalSet]) -> list[CriticalSet]:
    """The sets with two sets of one kind, loss and dimension (≥ 1) that run into each other
    through a regular point of the critical set listed as one.

    ``sympy.solve`` returns the circle ``x² + y² = 1`` as the two graphs ``y = ±√(1 - x²)``;
    the critical points found along the segment between their nearest samples run along the
    set at its loss through regular points (Hessian nullity the sets' dimension,
    :func:`joined_on_set`): one set ``y = -√(1 - x²) ∪ y = √(1 - x²)``, its
    components joined.  Sets that only cross, such as two coordinate axes at the origin
    (where the Hessian has a larger nullity), stay apart.
    """
    scale = loss_scales(landscape).loss
    out: list[CriticalSet] = []
    for s in sets:
        for k, m in enumerate(out):
            if not (
                m.kind == s.kind
                and m.dimension == s.dimension >= 1
                and same_loss(m.loss, s.loss, scale)
            ):
                continue
            distance, nearest = cKDTree(m.points).query(s.points)
            j = int(np.argmin(distance))
            a, b = m.points[nearest[j]], s.points[j]
            if joined_on_set(landscape, a, b, s.loss, s.dimension) or _joined_on_slice(
                landscape, a, b, s.loss, s.dimension
            ):
                out[k] = _union(m, s, int(nearest[j]), j)
                break
        else:
            out.append(s)
    return out


def _joined_on_slice(
    landscape: Landscape, a: np.ndarray, b: np.ndarray, loss: float, regular: int
) -> bool:
    """:func:`joined_on_set` on a slice through ``a`` and ``b`` that pins one coordinate in
    which they agree (each such coordinate in turn).

    The nearest samples of two graphs over the same free coordinates share those coordinates,
    and a root finder started between them may slide along one in which ``L`` is not constant
    off the set: between the two halves ``y = ±√(1 − x²)`` of the cylinder of minima of
    ``(x² + y² − 1)²(1 + z²)`` every point off the cylinder pulls ``z`` towards 0, so the roots
    found from the segment at ``z = −3`` scatter over the cylinder.  On the slice ``z = −3``
    they follow the circle.
    """
    for i in np.flatnonzero(a == b):
        pinned = np.arange(len(a)) == i
        if joined_on_set(landscape, a, b, loss, regular, pinned=pinned):
            return True
    return False


def _union(m: CriticalSet, s: CriticalSet, i: int, j: int) -> CriticalSet:
    """One set of the points of ``m`` and ``s``, the component of ``m.points[i]`` and that of
    ``s.points[j]`` (where the two run into each other) one component."""
    labels = np.concatenate([m.components, s.components + m.n_components])
    labels[labels == s.components[j] + m.n_components] = m.components[i]
    equation = None if m.equation is None or s.equation is None else f"{m.equation} ∪ {s.equation}"
    return dataclasses.replace(
        m,
        name=f"{m.name} ∪ {s.name}",
        equation=equation,
        points=np.concatenate([m.points, s.points]),
        components=np.unique(labels, return_inverse=True)[1].reshape(-1),
        samples=np.concatenate([m.samples, s.samples]),
        segments=(*m.segments, *(len(m.points) + k for k in s.segments)),
    )


JOIN_STEPS = 32
"""Points on the segment between two critical points at which :func:`joined_on_set` finds the
critical point nearest."""
JOIN_DEPTH = 2
"""How many times :func:`joined_on_set` may check a gap of its path again on the segment between
the two critical points on either side of it."""


def joined_on_set(
    landscape: Landscape,
    a: np.ndarray,
    b: np.ndarray,
    loss: float,
    regular: int | None = None,
    depth: int = JOIN_DEPTH,
    pinned: np.ndarray | None = None,
) -> bool:
    """Whether ``a`` and ``b`` lie on one connected piece of the critical set of loss ``loss``.

    From :data:`JOIN_STEPS` + 1 evenly spaced points of the segment ``ab`` the critical point
    nearest is found (Levenberg–Marquardt on ``∇L = 0``, from a point that is not critical
    already: from one that is, on a flat set such as a line of minima, its steps wander along
    the Hessian's null space as far as its trust region lets them); the two are joined when
    every one of them is critical with loss ``loss`` and consecutive ones lie within four steps
    of each other (a path along the set shadows the segment), or, up to ``depth`` times, are
    joined in the same way along the segment between them: where the set bends away from the
    segment (a branch of the canonical ``Γ*`` rising steeply towards its asymptote
    ``w = −1/√2``) the nearest points of the first few segment points spread out. Between two
    components of ``abc = 1`` the segment crosses a coordinate plane, where the nearest critical
    point is an axis (loss 1) or jumps to the other sheet. With ``regular``, every point found
    must also have Hessian nullity ``regular`` (the path runs through regular points of a
    manifold of that dimension, not through a crossing such as the origin where two coordinate
    axes meet). With ``pinned`` (a mask, shape ``(dim,)``), the root finder moves only the other
    coordinates and still asks the whole gradient to vanish.
    """
    step = float(np.linalg.norm(b - a)) / JOIN_STEPS
    scale = loss_scales(landscape).loss
    tol = gradient_tol(landscape)
    previous, path = a, []
    with np.errstate(all="ignore"):
        for t in np.linspace(0.0, 1.0, JOIN_STEPS + 1)[1:]:
            start = a + t * (b - a)
            found = (
                start
                if np.linalg.norm(landscape.point_grad(start)) <= tol
                else _nearest_root(landscape, start, pinned)
            )
            if not (
                np.all(np.isfinite(found))
                and np.linalg.norm(landscape.grad(found)) <= tol
                and same_loss(float(landscape.loss(found)), loss, scale)
            ):
                return False
            if np.linalg.norm(found - previous) > 4 * step + 1e-9 and not (
                depth > 0
                and joined_on_set(landscape, previous, found, loss, regular, depth - 1, pinned)
            ):
                return False
            previous = found
            path.append(found)
    if regular is None:
        return True
    return bool(np.all(spectra(landscape, np.array(path)).nullity == regular))


def _nearest_root(landscape: Landscape, start: np.ndarray, pinned: np.ndarray | None) -> np.ndarray:
    """The critical point Levenberg–Marquardt reaches from ``start`` (moving only the
    coordinates that ``pinned`` leaves free)."""
    if pinned is None:
        return root(
            landscape.point_grad,
            start,
            jac=landscape.point_hessian,
            method="lm",
            options={"xtol": 1e-14, "ftol": 1e-14},
        ).x
    free = ~pinned

    def point(z: np.ndarray) -> np.ndarray:
        full = start.copy()
        full[free] = z
        return full

    found = root(
        lambda z: landscape.point_grad(point(z)),
        start[free],
        jac=lambda z: landscape.point_hessian(point(z))[:, free],
        method="lm",
        options={"xtol": 1e-14, "ftol": 1e-14},
    ).x
    return point(found)


def without_subsets(
    landscape: Landscape, grouped: list[tuple[ClosedForm, list[CriticalSet]]]
) -> list[CriticalSet]:
    """The sets of closed-form pieces (each piece with the sets it gave), without a set that
    lies on a piece of higher dimension and looks there like that piece's own points.

    ``sympy.solve`` splits the sphere of minima of ``(x² + y² + z² − 1)²`` by cases: besides the
    two graphs ``y = ±√(1 − x² − z²)`` it returns the circles ``x = 0, z = ±√(1 − y²)``, which
    lie on them.  A set is left out when every one of its points lies on some piece
    (:func:`~gradflow._critical.pieces.on_piece`) that gave a set of higher dimension with the same
    kind, Morse index and Hessian nullity: its points are then generic points of that set, which
    lists them already.  A set of more degenerate points (a larger nullity, another index, such
    as the origin on the axes of ``(1 − abc)²``) describes a stratum of its own and stays.
    """
    out = []
    for k, (_, sets) in enumerate(grouped):
        for s in sets:
            holders = [
                other
                for j, (other, theirs) in enumerate(grouped)
                if j != k
                and any(
                    t.dimension > s.dimension
                    and (t.kind, t.morse_index, t.nullity) == (s.kind, s.morse_index, s.nullity)
                    for t in theirs
                )
            ]
            on = np.zeros(len(s.points), dtype=bool)
            for other in holders:
                on[~on] = on_piece(landscape, other, s.points[~on])
            if not (holders and on.all()):
                out.append(s)
    return out


def without_repeats(sets: list[CriticalSet]) -> list[CriticalSet]:
    """The sets with every component that repeats another one left out.

    ``sympy.solve`` may return one set several times (``x = 0`` and ``x = ±√a`` coincide at
    ``a = 0``; ``x = 0`` and ``x = 0.0``): a component whose every point lies within
    :data:`~gradflow._critical.pieces.ON_SET_TOL` of the points of an earlier component of the same kind
    (in this set or an earlier one) is the same set, listed once.  A set left with no component
    is dropped.
    """
    kept: list[CriticalSet] = []
    for s in sets:
        keep = np.ones(len(s.points), dtype=bool)
        for label in range(s.n_components):
            mine = s.components == label
            earlier = [k.points for k in kept if k.kind == s.kind]
            earlier.append(s.points[~mine & keep & (s.components < label)])
            others = np.concatenate(earlier)
            if len(others):
                distance, _ = cKDTree(others).query(s.points[mine])
                keep[mine] = not np.all(distance <= ON_SET_TOL)
        if keep.all():
            kept.append(s)
        elif keep.any():
            kept.append(restricted(s, keep))
    return kept


def restricted(s: CriticalSet, keep: np.ndarray) -> CriticalSet:
    """The set ``s`` with only the points ``keep`` (components renumbered, polylines cut); its
    samples stay where the point nearest them is kept (if none is, the kept point nearest its
    sample is its sample)."""
    before = np.concatenate([[0], np.cumsum(keep)])
    starts = sorted({int(before[i]) for i in s.segments} - {int(keep.sum())})
    points = s.points[keep]
    _, nearest = cKDTree(s.points).query(s.samples)
    samples = s.samples[keep[nearest]]
    if not len(samples):
        samples = points[[int(np.argmin(np.linalg.norm(points - s.sample, axis=1)))]]
    return dataclasses.replace(
        s,
        points=points,
        components=np.unique(s.components[keep], return_inverse=True)[1].reshape(-1),
        samples=samples,
        segments=tuple(starts) if s.segments else (),
        dimension=s.dimension if len(points) > 1 else 0,
    )
