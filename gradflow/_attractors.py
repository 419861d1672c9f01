"""Attractors: the connected components of the critical sets, and which one a point reached.

Every connected component of every classified critical set is an attractor with an integer id
(saddles and maxima too: a trajectory started on a stable manifold ends there).  The end of a
converged trajectory is assigned to the attractor whose sample points lie nearest, within a
tolerance set by the sampling; endpoints near no known set (a set outside the searched box) are
clustered and classified, and each cluster becomes a further attractor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial import cKDTree

from ._classify import classify_points
from ._critical import CriticalSet, local_dimension
from ._landscape import Landscape

__all__ = ["Attractor", "AttractorIndex", "MATCH_RADIUS"]

MATCH_RADIUS = 1e-2
"""An endpoint within this fraction of the box diagonal of a set's nearest sample reaches it
(sampled curves and surfaces allow their sample spacing besides)."""


@dataclass(frozen=True)
class Attractor:
    """One connected component of a critical set.

    Attributes:
        id: its number, ``0 … n - 1`` (global minima first, then by kind and loss).
        kind: the kind of its set (``global_min``, ``local_min``, ``saddle``, …).
        set: the name of its set (``"Γ*"``, ``"numerical"``, ``"found by the flow"``).
        equation: its set's equation, where known.
        point: a representative point of the component, shape ``(dim,)``.
        loss: ``L`` there.
        dimension: the dimension of its set.
        fraction: the share of a basin map's grid that reaches it (0 until a map is made).
    """

    id: int
    kind: str
    set: str
    equation: str | None
    point: np.ndarray
    loss: float
    dimension: int
    fraction: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{"id", "kind", "set", "equation", "point", "loss", "dimension",
        "fraction"}``."""
        return {
            "id": self.id,
            "kind": self.kind,
            "set": self.set,
            "equation": self.equation,
            "point": self.point.tolist(),
            "loss": self.loss,
            "dimension": self.dimension,
            "fraction": self.fraction,
        }


class AttractorIndex:
    """The attractors of a set of critical sets, and a nearest-sample lookup into them.

    Args:
        sets: the classified critical sets.
        box: the searched bounds, shape ``(dim, 2)`` (for the match radius).
        center: where representative points are taken nearest to (default the box centre).
    """

    def __init__(
        self, sets: Sequence[CriticalSet], box: np.ndarray, center: np.ndarray | None = None
    ) -> None:
        self.diagonal = float(np.linalg.norm(box[:, 1] - box[:, 0])) or 1.0
        center = box.mean(axis=1) if center is None else np.asarray(center, dtype=float)
        self.attractors: list[Attractor] = []
        points, owners, radii = [], [], []
        for s in sets:
            for label in range(s.n_components):
                part = s.component_points(label)
                if not len(part):
                    continue
                rep = part[int(np.argmin(np.linalg.norm(part - center, axis=1)))]
                self.attractors.append(
                    Attractor(
                        id=len(self.attractors),
                        kind=s.kind,
                        set=s.name,
                        equation=s.equation,
                        point=rep,
                        loss=s.loss,
                        dimension=s.dimension,
                    )
                )
                points.append(part)
                owners.append(np.full(len(part), len(self.attractors) - 1))
                spacing = _spacing(part) if s.dimension > 0 else np.zeros(len(part))
                radii.append(np.maximum(1.5 * spacing, MATCH_RADIUS * self.diagonal))
        self._points = np.concatenate(points) if points else np.zeros((0, box.shape[0]))
        self._owners = np.concatenate(owners) if owners else np.zeros(0, dtype=int)
        self._radii = np.concatenate(radii) if radii else np.zeros(0)
        self._tree = cKDTree(self._points) if len(self._points) else None

    def match(self, points: np.ndarray) -> np.ndarray:
        """The id of the attractor each point (shape ``(n, dim)``) lies on, ``-1`` for none."""
        ids = np.full(len(points), -1)
        if self._tree is None or not len(points):
            return ids
        finite = np.all(np.isfinite(points), axis=1)
        distance, nearest = self._tree.query(points[finite])
        close = distance <= self._radii[nearest]
        ids[np.flatnonzero(finite)[close]] = self._owners[nearest[close]]
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
        of the box diagonal); each cluster is classified at its member of least ``‖∇L‖`` and
        becomes an attractor of the set ``"found by the flow"``.
        """
        if not len(points):
            return np.zeros(0, dtype=int)
        labels = (
            fcluster(linkage(points, "single"), MATCH_RADIUS * self.diagonal, "distance")
            if len(points) > 1
            else np.ones(1, dtype=int)
        )
        gradient = np.linalg.norm(landscape.grad(points), axis=1)
        ids = np.empty(len(points), dtype=int)
        for label in np.unique(labels):
            members = np.flatnonzero(labels == label)
            best = members[np.argmin(gradient[members])]
            kind = str(classify_points(landscape, points[best][None], global_min_loss).kinds[0])
            ids[members] = len(self.attractors)
            self.attractors.append(
                Attractor(
                    id=len(self.attractors),
                    kind=kind,
                    set="found by the flow",
                    equation=None,
                    point=points[best],
                    loss=float(landscape.loss(points[best])),
                    dimension=local_dimension(points[members]) if members.size > 2 else 0,
                )
            )
        return ids


def _spacing(points: np.ndarray) -> np.ndarray:
    """Each sample's distance to its nearest other sample (the local gap of the sampling)."""
    if len(points) < 2:
        return np.zeros(len(points))
    distance, _ = cKDTree(points).query(points, k=2)
    return distance[:, 1]
