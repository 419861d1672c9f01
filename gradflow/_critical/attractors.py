"""Attractors: the connected components of the critical sets, and which one a point reached.

Every connected component of every classified critical set is an attractor with an integer id
(saddles and maxima too: a trajectory started on a stable manifold ends there).  The end of a
converged trajectory is assigned to the attractor whose sample points lie nearest, within a
tolerance set by the sampling, and of the kind its own Hessian shows where that differs;
endpoints near no known set (a set outside the searched box) are clustered and classified, and
each cluster becomes a further attractor.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.cluster.hierarchy import DisjointSet, fcluster, linkage
from scipy.sparse.csgraph import minimum_spanning_tree
from scipy.spatial import cKDTree
from scipy.spatial.distance import pdist, squareform

from .._landscape.base import Landscape
from .._landscape.scales import loss_scales
from .._outcome import Kind
from .._output.text import format_point
from .classify import Classification, classify_points
from .merging import joined_on_set, runs_between, same_loss
from .pieces import EDGE_SAMPLES, broken_edges, on_piece
from .sets import CriticalSet, local_dimension, set_dimension

__all__ = ["Attractor", "AttractorIndex", "MATCH_RADIUS"]

POINT_LINK = 1e-6
"""Isolated critical points closer than this fraction of the box diagonal are one attractor."""
MATCH_RADIUS = 1e-2
"""An endpoint within this fraction of the box diagonal of a set's nearest sample reaches it
(sampled curves and surfaces allow their sample spacing besides)."""
JOIN_CANDIDATES = 8
"""Samples of a closed-form piece, nearest in its free coordinates, that an endpoint found off
every sample is tried to be joined to along the piece (:func:`_joined_on_piece`)."""


@dataclass(frozen=True)
class Attractor:
    """One connected component of a critical set.

    Attributes:
        id: its number, ``0 … n - 1`` (global minima first, then by kind and loss).
        kind: the :class:`~gradflow.Kind` of its set (a name, ``"saddle"``, is converted to it).
        set: the name of its set (``"Γ*"``, ``"numerical"``, ``"found by the flow"``).
        equation: its set's equation, where known.
        point: a representative point of the component, shape ``(dim,)``.
        loss: ``L`` there.
        dimension: the dimension of its set.
        fraction: the share of a basin map's grid that reaches it (0 until a map is made).
        measure_zero: whether the grid points reaching it form a set of lower dimension than the
            grid (no 2 × 2 block of them: a line of starts on a stable manifold); never for a
            minimum, whose basin is open; ``False`` until a map is made.
        proven: the share of a basin map's grid proven to reach it (:class:`gradflow.Evidence`):
            its label proven, and this attractor too.  Where the global minima form several
            components under one decision level, the level proves that a grid point below it
            ends on a global minimum, not on which component: such points count in
            ``fraction`` but not here.  0 until a map is made.
    """

    id: int
    kind: Kind
    set: str
    equation: str | None
    point: np.ndarray
    loss: float
    dimension: int
    fraction: float = 0.0
    measure_zero: bool = False
    proven: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", Kind(self.kind))

    @property
    def described(self) -> str:
        """Its set as the tables name it: the set's name (``"Γ*"``, ``"numerical"``), or for
        a set ``sympy.solve`` found its equation (``"x = 1/y"``)."""
        if self.set.startswith("sympy.solve") and self.equation:
            return self.equation
        return self.set

    def __repr__(self) -> str:
        share = f", {self.fraction:.1%} of the grid" if self.fraction else ""
        return (
            f"Attractor(#{self.id} {self.kind} {self.set!r} at {format_point(self.point)}, "
            f"L = {self.loss:.6g}{share})"
        )

    def metadata(self) -> dict[str, Any]:
        """JSON-ready: ``{"id", "kind", "set", "equation", "point", "loss", "dimension",
        "fraction", "proven", "measure_zero"}``."""
        return {
            "id": self.id,
            "kind": self.kind,
            "set": self.set,
            "equation": self.equation,
            "point": self.point.tolist(),
            "loss": self.loss,
            "dimension": self.dimension,
            "fraction": self.fraction,
            "proven": self.proven,
            "measure_zero": self.measure_zero,
        }


class AttractorIndex:
    """The attractors of a set of critical sets, and a nearest-sample lookup into them.

    Args:
        landscape: the loss the sets belong to.
        sets: the classified critical sets.
        box: the searched bounds, shape ``(dim, 2)`` (for the match radius).
        center: where representative points are taken nearest to (default the box centre).
    """

    def __init__(
        self,
        landscape: Landscape,
        sets: Sequence[CriticalSet],
        box: np.ndarray,
        center: np.ndarray | None = None,
    ) -> None:
        self.diagonal = float(np.linalg.norm(box[:, 1] - box[:, 0])) or 1.0
        self._landscape = landscape
        self._box = box
        center = box.mean(axis=1) if center is None else np.asarray(center, dtype=float)
        self._center = center
        parts = [
            (s, s.component_points(label))
            for s in sets
            for label in range(s.n_components)
            if np.any(s.components == label)
        ]
        samples = [_sample_if_on(s, part) for s, part in parts]
        spacings = [_spacing(part) if s.dimension > 0 else np.zeros(len(part)) for s, part in parts]
        groups = _linked(landscape, parts, spacings, POINT_LINK * self.diagonal)
        self.attractors: list[Attractor] = []
        points, owners, radii = [], [], []
        for members in groups:
            first = parts[members[0]][0]
            union = np.concatenate([parts[i][1] for i in members])
            marked = [samples[i] for i in members if samples[i] is not None]
            names = list(dict.fromkeys(parts[i][0].name for i in members))
            equations = list(dict.fromkeys(parts[i][0].equation for i in members))
            self.attractors.append(
                Attractor(
                    id=len(self.attractors),
                    kind=first.kind,
                    set=" ∪ ".join(names),
                    equation=equations[0] if len(equations) == 1 else None,
                    point=marked[0]
                    if marked
                    else union[int(np.argmin(np.linalg.norm(union - center, axis=1)))],
                    loss=first.loss,
                    dimension=max(parts[i][0].dimension for i in members),
                )
            )
            for i in members:
                points.append(parts[i][1])
                owners.append(np.full(len(parts[i][1]), len(self.attractors) - 1))
                radii.append(np.maximum(1.5 * spacings[i], MATCH_RADIUS * self.diagonal))
        self._points = np.concatenate(points) if points else np.zeros((0, box.shape[0]))
        self._owners = np.concatenate(owners) if owners else np.zeros(0, dtype=int)
        self._radii = np.concatenate(radii) if radii else np.zeros(0)
        self._tree = cKDTree(self._points) if len(self._points) else None

    def match(self, points: np.ndarray) -> np.ndarray:
        """The id of the attractor each point (shape ``(n, dim)``) lies on, ``-1`` for none.

        A point goes to the attractor of the nearest sample within that sample's radius.  Where
        that attractor is a saddle, maximum or degenerate set, the point's own Hessian is read:
        if it shows another kind, the point goes to the nearest attractor of that kind within
        its radius.  A critical curve whose kind changes at a point is sampled on a lattice,
        so an endpoint on it may lie nearer that point than any sample of its side: on the
        canonical line ``e = 0`` at ``p + q < 1``, an endpoint at ``w = -0.78`` is nearer the
        degenerate saddle ``(0, -1/√2)`` than the local-minimum side's last sample ``w = -0.9``
        of a coarse sampling, yet it is a local minimum, as its Hessian says.
        """
        ids = np.full(len(points), -1)
        if self._tree is None or not len(points):
            return ids
        finite = np.flatnonzero(np.all(np.isfinite(points), axis=1))
        ids[finite] = self._nearest(points[finite], np.ones(len(self._owners), dtype=bool))
        kinds = np.array([_class(a.kind) for a in self.attractors] + [""])
        odd = np.flatnonzero((ids >= 0) & (kinds[ids] != "minimum"))
        if odd.size:
            own = np.vectorize(_class)(classify_points(self._landscape, points[odd], None).kinds)
            differs = own != kinds[ids[odd]]
            for kind in np.unique(own[differs]):
                moved = odd[differs & (own == kind)]
                found = self._nearest(points[moved], kinds[self._owners] == kind)
                ids[moved[found >= 0]] = found[found >= 0]
        return ids

    def _nearest(self, points: np.ndarray, allowed: np.ndarray) -> np.ndarray:
        """The owner of the nearest of the ``allowed`` samples (mask over all samples) within
        its radius, ``-1`` for none (the queries on every core: a million-point map's half a
        million converged endpoints took 0.2 s on one)."""
        ids = np.full(len(points), -1)
        if not allowed.any() or not len(points):
            return ids
        tree = self._tree if allowed.all() else cKDTree(self._points[allowed])
        distance, nearest = tree.query(points, workers=-1)
        close = distance <= self._radii[allowed][nearest]
        ids[close] = self._owners[allowed][nearest[close]]
        return ids

    def samples(self, ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """The sample points of the attractors ``ids`` and the id of each, shapes ``(m, dim)``
        and ``(m,)``."""
        keep = np.isin(self._owners, list(ids))
        return self._points[keep], self._owners[keep]

    def add_found(
        self, landscape: Landscape, points: np.ndarray, global_min_loss: float | None
    ) -> np.ndarray:
        """New attractors for converged endpoints near no known set; return their ids.

        The points (shape ``(n, dim)``) are clustered (single linkage at :data:`MATCH_RADIUS`
        of the box diagonal) and each cluster is classified at its member of least ``‖∇L‖``.
        Clusters of one kind and loss whose points have a singular Hessian are one attractor
        where a path of critical points joins them (:func:`~gradflow._critical.merging.joined_on_set`,
        tried along the edges of the clusters' minimum spanning tree): a line of minima that
        the flow reaches outside the searched box, each start at its own point of it, is one
        set of dimension ≥ 1, not one attractor per endpoint.  A group that runs into a known
        set of dimension ≥ 1 joins its attractor; every other becomes an attractor of the set
        ``"found by the flow"``, its points added to the index.
        """
        if not len(points):
            return np.zeros(0, dtype=int)
        labels = (
            fcluster(linkage(points, "single"), MATCH_RADIUS * self.diagonal, "distance")
            if len(points) > 1
            else np.ones(1, dtype=int)
        )
        gradient = np.linalg.norm(landscape.grad(points), axis=1)
        clusters = [np.flatnonzero(labels == label) for label in np.unique(labels)]
        best = np.array([members[np.argmin(gradient[members])] for members in clusters])
        found = classify_points(landscape, points[best], global_min_loss)
        losses = np.asarray(landscape.loss(points[best]), dtype=float)
        groups = self._joined_clusters(landscape, points[best], found, losses)
        ids = np.empty(len(points), dtype=int)
        for group in groups:
            members = np.concatenate([clusters[c] for c in group])
            first = group[0]
            kind = found.kinds[first]
            known = self._set_through(landscape, points[best[first]], kind)
            if known >= 0:
                ids[members] = known
                continue
            distinct = np.unique(points[members], axis=0)
            dimension = int(np.median(local_dimension(distinct)))
            if len(group) > 1:
                nullity = np.full(len(distinct), int(found.nullity[first]))
                dimension = max(1, min(set_dimension(distinct, nullity), int(nullity[0])))
            reps = points[best[group]]
            point = reps[int(np.argmin(np.linalg.norm(reps - self._center, axis=1)))]
            ids[members] = len(self.attractors)
            self._add_samples(distinct, len(self.attractors))
            self.attractors.append(
                Attractor(
                    id=len(self.attractors),
                    kind=kind,
                    set="found by the flow",
                    equation=None,
                    point=point,
                    loss=float(losses[first]),
                    dimension=dimension,
                )
            )
        return ids

    def _joined_clusters(
        self, landscape: Landscape, reps: np.ndarray, found: Classification, losses: np.ndarray
    ) -> list[list[int]]:
        """Groups of the clusters (their representative points ``reps``) joined along a set of
        critical points: two clusters neighbouring in the minimum spanning tree of ``reps``,
        of one kind and loss, with a singular Hessian (nullity ``k ≥ 1``), are joined where
        :func:`~gradflow._critical.merging.joined_on_set` finds a path of regular points (nullity
        ``k``) between them.  Groups in the order of their first cluster."""
        linked = DisjointSet(range(len(reps)))
        if len(reps) > 1:
            scale = loss_scales(landscape).loss
            tree = minimum_spanning_tree(squareform(pdist(reps))).tocoo()
            for i, j in sorted(zip(tree.row, tree.col), key=lambda e: _edge_length(reps, e)):
                k = int(found.nullity[i])
                if (
                    k >= 1
                    and found.nullity[j] == k
                    and found.kinds[i] == found.kinds[j]
                    and same_loss(losses[i], losses[j], scale)
                    and joined_on_set(landscape, reps[i], reps[j], float(losses[i]), k)
                ):
                    linked.merge(int(i), int(j))
        groups: dict[int, list[int]] = {}
        for c in range(len(reps)):
            groups.setdefault(linked[c], []).append(c)
        return list(groups.values())

    def _add_samples(self, points: np.ndarray, owner: int) -> None:
        """Index ``points`` (shape ``(m, dim)``) as samples of the attractor ``owner``, each
        matching within :data:`MATCH_RADIUS` of the box diagonal."""
        self._points = np.concatenate([self._points, points])
        self._owners = np.concatenate([self._owners, np.full(len(points), owner)])
        self._radii = np.concatenate(
            [self._radii, np.full(len(points), MATCH_RADIUS * self.diagonal)]
        )
        self._tree = cKDTree(self._points)

    def _set_through(self, landscape: Landscape, point: np.ndarray, kind: Kind) -> int:
        """The id of a known attractor of a set (dimension ≥ 1) of ``kind`` that runs through
        ``point``, the sample nearest it joined to it along the set
        (:func:`~gradflow._critical.merging.joined_on_set`); ``-1`` for none.  An endpoint where a surface of minima is sparsely sampled is a point of
        the component it lies on, not a new attractor.  A point on a closed-form piece of the
        candidates' sets is decided along the pieces alone (:func:`_joined_on_piece`, exact):
        the canonical ``Γ*`` has a branch on each side of the line of critical points
        ``e = 0``, which no flow crosses, and an endpoint far out on the ``e < 0`` branch is
        joined to that branch's samples along its equation, never to the other branch by a
        path of critical points found numerically (whose steps can jump the narrow gap
        between the branches)."""
        loss = float(landscape.loss(point))
        scale = loss_scales(landscape).loss
        candidates = [
            a
            for a in self.attractors
            if a.kind == kind and a.dimension > 0 and same_loss(a.loss, loss, scale)
        ]
        samples = {a.id: self._points[self._owners == a.id] for a in candidates}
        samples = {i: s if len(s) else self.attractors[i].point[None] for i, s in samples.items()}
        box = _around(self._box, point)
        for a in candidates:
            if _joined_on_piece(landscape, point, a.set.split(" ∪ "), samples[a.id], box):
                return a.id
        names = {name for a in candidates for name in a.set.split(" ∪ ")}
        if any(
            piece.name in names and on_piece(landscape, piece, point[None])[0]
            for piece in landscape.closed_forms
        ):
            return -1
        for a in candidates:
            distance = np.linalg.norm(samples[a.id] - point, axis=1)
            if joined_on_set(landscape, point, samples[a.id][int(np.argmin(distance))], loss):
                return a.id
        return -1


def _joined_on_piece(
    landscape: Landscape, point: np.ndarray, names: list[str], samples: np.ndarray, box: np.ndarray
) -> bool:
    """Whether ``point`` lies on a closed-form piece of one of the sets ``names`` and is joined
    along it to one of ``samples`` (shape ``(n, dim)``): the straight path between their free
    coordinates stays on the piece, inside ``box``, past no pole (:func:`broken_edges`; the
    :data:`JOIN_CANDIDATES` samples of the piece nearest in free coordinates are tried).  Exact
    where the set is known in closed form, however far the samples are: the three-scalar
    canonical model's ``Γ*`` runs to ``a = ±∞`` at ``w = −1/√2``, and an endpoint between its
    last samples and that asymptote lies on it, away from every sample and from the straight
    segment to the nearest one (along which :func:`joined_on_set` looks)."""
    for piece in landscape.closed_forms:
        if piece.name not in names or not on_piece(landscape, piece, point[None])[0]:
            continue
        on = samples[on_piece(landscape, piece, samples)]
        free = list(piece.free)
        order = np.argsort(np.linalg.norm(on[:, free] - point[free], axis=1))[:JOIN_CANDIDATES]
        for k in order:
            ends = np.stack([point[free], on[k, free]])
            if not broken_edges(piece, box, ends, np.array([[0, 1]]), EDGE_SAMPLES)[0]:
                return True
    return False


def _edge_length(points: np.ndarray, edge: tuple[int, int]) -> float:
    """The length of the edge ``(i, j)`` between two of ``points``."""
    return float(np.linalg.norm(points[edge[0]] - points[edge[1]]))


def _around(box: np.ndarray, point: np.ndarray) -> np.ndarray:
    """``box`` (shape ``(dim, 2)``) grown to hold ``point`` with a margin of a tenth of its width
    on every side: a closed-form set runs on outside the searched box, and an endpoint there (the
    flow in the induced metric carries the canonical model's starts at the box's corners out to
    ``(e, w) = (0, 6.28)`` on the line ``e = 0``) lies on it all the same."""
    lo, hi = np.minimum(box[:, 0], point), np.maximum(box[:, 1], point)
    pad = 0.1 * (hi - lo)
    return np.stack([lo - pad, hi + pad], axis=1)


def _linked(
    landscape: Landscape,
    parts: list[tuple[CriticalSet, np.ndarray]],
    spacings: list[np.ndarray],
    point_link: float,
) -> list[list[int]]:
    """Group the parts (components of the sets) of one kind that touch into attractors.

    Two parts of one kind and loss touch when their nearest samples ``a``, ``b`` coincide (within
    ``point_link``), or lie within 1.5 times the local sampling gap of each other and the
    critical point found from their midpoint (Levenberg–Marquardt on ``∇L = 0``) lies within that
    gap of both and has their loss: the set runs between them.  So the two halves
    ``y = ±√(1 - x²)`` that ``sympy.solve`` returns for a circle are one attractor, while the two
    branches ``±e`` of the canonical model's Γ*, which come close but are separated by the line
    ``e = 0`` (critical, with another loss), stay two.  Returns the groups as lists of part
    indices, in the order of their first part.
    """
    linked = DisjointSet(range(len(parts)))
    trees = [cKDTree(part) for _, part in parts]
    scale = loss_scales(landscape).loss
    for i, j in itertools.combinations(range(len(parts)), 2):
        (si, pi), (sj, pj) = parts[i], parts[j]
        if si.kind != sj.kind or not same_loss(si.loss, sj.loss, scale):
            continue
        distance, nearest = trees[i].query(pj)
        k = int(np.argmin(distance))
        a, b = pi[nearest[k]], pj[k]
        gap = 1.5 * max(spacings[i][nearest[k]], spacings[j][k])
        if distance[k] <= point_link or (
            distance[k] <= gap and runs_between(landscape, a, b, gap, si.loss)
        ):
            linked.merge(i, j)
    groups: dict[int, list[int]] = {}
    for i in range(len(parts)):
        groups.setdefault(linked[i], []).append(i)
    return list(groups.values())


def _class(kind: Kind) -> str:
    """A kind with the two minima as one: ``"minimum"``, ``"saddle"``, ``"local_max"``,
    ``"degenerate"``."""
    return "minimum" if kind in (Kind.GLOBAL_MIN, Kind.LOCAL_MIN) else str(kind)


def _sample_if_on(s: CriticalSet, part: np.ndarray) -> np.ndarray | None:
    """The first of the set's representative points (:attr:`CriticalSet.samples`) whose nearest
    sample lies in ``part``, else ``None``: an attractor is shown at the point the critical-set
    report prints, where it can be, and otherwise at its component's own point nearest the
    centre, found the same way (mirror images for mirror-image components)."""
    for sample in s.samples:
        nearest = s.points[int(np.argmin(np.linalg.norm(s.points - sample, axis=1)))]
        if np.any(np.all(part == nearest, axis=1)):
            return sample
    return None


def _spacing(points: np.ndarray) -> np.ndarray:
    """Each sample's distance to its nearest other sample (the local gap of the sampling)."""
    if len(points) < 2:
        return np.zeros(len(points))
    distance, _ = cKDTree(points).query(points, k=2)
    return distance[:, 1]
