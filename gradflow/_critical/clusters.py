"""Numerical solutions of ``∇L = 0`` grouped into critical sets: clusters of one kind, whose
dimension comes from their geometry (a Morse–Bott set is one set, not the hundreds of points the
search lands on).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
from scipy.cluster.hierarchy import DisjointSet, fcluster, linkage
from scipy.spatial import cKDTree
from scipy.spatial.distance import pdist

from .._landscape.base import Landscape
from .._outcome import KINDS
from .classify import Classification, classify_points
from .merging import joined_on_set
from .pieces import (
    ON_SET_TOL,
    gradient_tol,
)
from .sets import CriticalSet, make_set, set_dimension

__all__ = [
    "CLUSTER_LINK",
    "JOIN_ATTEMPTS",
    "POINT_CLUSTER",
    "SEGMENT_SAMPLES",
    "numerical_sets",
]
POINT_CLUSTER = 1e-3
"""Numerical solutions spread over less than this fraction of the box diagonal are one point."""
CLUSTER_LINK = 0.05
"""Numerical solutions of one kind closer than this fraction of the box diagonal are linked."""
SEGMENT_SAMPLES = 33
"""Points at which a segment between two clusters of critical points is checked."""
JOIN_ATTEMPTS = 2
"""Failed attempts after which two groups of clusters are no longer tried for a path along the
critical set (:func:`_joined_along_the_set`)."""


def numerical_sets(
    landscape: Landscape,
    points: np.ndarray,
    global_loss: float | None,
    box: np.ndarray,
    *,
    classify: Callable[[Landscape, np.ndarray, float | None], Classification] = classify_points,
    name: str = "numerical",
    equation: str | None = None,
) -> list[CriticalSet]:
    """Group numerical solutions: same kind, single-linkage clusters (:data:`CLUSTER_LINK`).

    ``classify`` gives the kinds (the Hessian's by default; Clarke-stationary points on kinks
    have their own, :func:`gradflow._critical.kink_points.classify_kink_points`), and each set is named
    ``name`` with ``equation``.

    A cluster no wider than :data:`POINT_CLUSTER` of the box diagonal is one isolated critical
    point, reported at its member of least ``‖∇L‖`` (near a degenerate point, where ``∇L``
    vanishes to higher order, the root finder's solutions scatter around it); otherwise the
    cluster's dimension is what its geometry shows (:func:`local_dimension`), at most the
    Hessian's nullity.
    """
    if not len(points):
        return []
    classes = classify(landscape, points, global_loss)
    diagonal = float(np.linalg.norm(box[:, 1] - box[:, 0]))
    gradient = np.linalg.norm(landscape.grad(points), axis=1)
    out = []
    for kind in KINDS:
        idx = np.flatnonzero(classes.kinds == kind)
        if not idx.size:
            continue
        labels = (
            fcluster(linkage(pdist(points[idx]), "single"), CLUSTER_LINK * diagonal, "distance")
            if idx.size > 1
            else np.ones(1, dtype=int)
        )
        labels = _joined_through_critical_points(landscape, points[idx], labels)
        labels = _joined_along_the_set(landscape, points[idx], labels, classes.nullity[idx])
        for label in np.unique(labels):
            members = idx[labels == label]
            single = np.zeros(members.size, dtype=int)
            if np.ptp(points[members], axis=0).max() <= max(
                100 * ON_SET_TOL, POINT_CLUSTER * diagonal
            ):
                best = np.array([members[np.argmin(gradient[members])]])
                out.append(
                    make_set(landscape, name, equation, points, classes, best, 0, single[:1], box)
                )
            else:
                dimension = set_dimension(points[members], classes.nullity[members])
                out.append(
                    make_set(
                        landscape,
                        name,
                        equation,
                        points,
                        classes,
                        members,
                        dimension,
                        single,
                        box,
                    )
                )
    return out


def _joined_through_critical_points(
    landscape: Landscape, points: np.ndarray, labels: np.ndarray
) -> np.ndarray:
    """Merge clusters whose nearest two points are joined by a segment of critical points.

    Distance alone splits a set sampled unevenly (a disk of critical points that a root finder
    fills mostly on its rim); a straight segment with ``‖∇L‖ ≤`` :func:`gradient_tol` all along
    shows that two clusters belong to one connected set.
    """
    labels = np.asarray(labels).copy()
    clusters = list(np.unique(labels))
    tol = gradient_tol(landscape)
    s = np.linspace(0.0, 1.0, SEGMENT_SAMPLES)[:, None]
    for a, b in itertools.combinations(clusters, 2):
        pa, pb = points[labels == a], points[labels == b]
        if not len(pa) or not len(pb):
            continue
        distance, nearest = cKDTree(pb).query(pa)
        i = int(np.argmin(distance))
        segment = pa[i] + s * (pb[nearest[i]] - pa[i])
        with np.errstate(all="ignore"):
            if np.all(np.linalg.norm(landscape.grad(segment), axis=1) <= tol):
                labels[labels == b] = a
    return labels


def _joined_along_the_set(
    landscape: Landscape, points: np.ndarray, labels: np.ndarray, nullity: np.ndarray
) -> np.ndarray:
    """Merge clusters of degenerate critical points that one connected piece of the critical set
    runs through.

    A surface of minima found by a root finder from a few hundred starts is sampled too sparsely
    for single linkage: ``abc = 1`` in ``[−2, 2]³`` comes out as dozens of clusters, most of one
    point.  Two clusters whose generic points have the same Hessian nullity ``r ≥ 1`` are one
    when a path of critical points of that nullity and the same loss shadows the segment between
    their nearest points (:func:`~gradflow._critical.merging.joined_on_set`); the four sign patterns of
    ``abc = 1`` stay apart, since a segment between two of them crosses a coordinate plane.
    Pairs are tried nearest first, as in Kruskal's algorithm, so that a chain of short paths
    joins a component; two groups that failed :data:`JOIN_ATTEMPTS` times are not tried again.
    A group is labelled with its smallest cluster label.
    """
    labels = np.asarray(labels)
    clusters = list(np.unique(labels))
    generic = {c: int(np.median(nullity[labels == c])) for c in clusters}
    pairs = []
    for a, b in itertools.combinations(clusters, 2):
        if generic[a] != generic[b] or generic[a] < 1:
            continue
        pa, pb = points[labels == a], points[labels == b]
        distance, nearest = cKDTree(pb).query(pa)
        i = int(np.argmin(distance))
        pairs.append((float(distance[i]), a, b, pa[i], pb[nearest[i]]))
    groups = DisjointSet(clusters)
    failures: dict[frozenset[int], int] = {}
    for _, a, b, pa, pb in sorted(pairs, key=lambda pair: pair[0]):
        key = frozenset((groups[a], groups[b]))
        if groups.connected(a, b) or failures.get(key, 0) >= JOIN_ATTEMPTS:
            continue
        if joined_on_set(landscape, pa, pb, float(landscape.loss(pa)), generic[a]):
            groups.merge(a, b)
        else:
            failures[key] = failures.get(key, 0) + 1
    smallest = {c: min(groups.subset(c)) for c in clusters}
    return np.array([smallest[c] for c in labels])
