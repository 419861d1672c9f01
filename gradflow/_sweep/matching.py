"""Attractors matched from cell to cell of a sweep, so one attractor's basin can be followed.

Each cell's basin map numbers its attractors on its own.  Between neighbouring cells an attractor
is matched first by its representative point (same closed-form set or the same point, nearest
point within :data:`POINT_RADIUS` of the box diagonal, each the other's nearest), then, for those left, by the
overlap of their basins (the Jaccard index of the grid points that reach each, at least
:data:`BASIN_OVERLAP`) — the two criteria of Attractors.jl's ``global_continuation`` (Datseris,
Rossi & Wagemakers, *Chaos* 33, 2023).  Matched attractors form one track; its fraction of the
grid is then defined in every cell it is present in (0 where it is absent).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.cluster.hierarchy import DisjointSet

from .._outcome import Kind

__all__ = ["AttractorTrack", "CellAttractors", "cell_attractors", "match_attractors"]

POINT_RADIUS = 0.05
"""Representative points farther apart than this fraction of the box diagonal never match."""
SAME_POINT = 1e-6
"""Representative points this close (fraction of the box diagonal) match whatever their sets are
called (pieces that meet at one value and are reported under one name there)."""
BASIN_OVERLAP = 0.5
"""Two basins match when the Jaccard index of their grid points is at least this."""


@dataclass(frozen=True)
class CellAttractors:
    """One cell's attractors.

    Attributes:
        ids: each attractor's id in the cell's basin map.
        sets: the name of the set each lies on, the same at every hyperparameter value.
        kinds: their kinds.
        points: their representative points, shape ``(n, dim)``.
        fractions: the share of the grid that reaches each.
        labels: the attractor id reached from each grid point (``-1`` none), shape ``(ny, nx)``.
    """

    ids: tuple[int, ...]
    sets: tuple[str, ...]
    kinds: tuple[Kind, ...]
    points: np.ndarray
    fractions: tuple[float, ...]
    labels: np.ndarray


@dataclass(frozen=True)
class AttractorTrack:
    """One attractor followed across cells.

    Attributes:
        id: the track's number.
        set: the set it lies on (in the first cell it is found in).
        kind: its kind there.
        ids: its id in each cell's basin map, ``-1`` where absent, shape ``(cells,)``.
        fractions: the share of each cell's grid that reaches it, shape ``(cells,)``.
    """

    id: int
    set: str
    kind: Kind
    ids: np.ndarray
    fractions: np.ndarray

    def metadata(self) -> dict[str, Any]:
        """JSON-ready: ``{"id", "set", "kind", "ids", "fractions"}``."""
        return {
            "id": self.id,
            "set": self.set,
            "kind": self.kind,
            "ids": self.ids.tolist(),
            "fractions": self.fractions.tolist(),
        }


def match_attractors(
    cells: Sequence[CellAttractors], shape: tuple[int, ...], diagonal: float
) -> tuple[AttractorTrack, ...]:
    """Match attractors between every pair of neighbouring cells and join them into tracks.

    Args:
        cells: the cells, in the order of ``itertools.product`` over the sweep's axes.
        shape: cells along each axis.
        diagonal: the basin box's diagonal (the scale of :data:`POINT_RADIUS`).

    Returns:
        The tracks, ordered by the first cell they appear in and their id there.
    """
    nodes = [(c, i) for c, cell in enumerate(cells) for i in range(len(cell.ids))]
    joined = DisjointSet(nodes)
    index = np.arange(len(cells)).reshape(shape)
    for axis in range(len(shape)):
        first = np.take(index, range(shape[axis] - 1), axis=axis).ravel()
        second = np.take(index, range(1, shape[axis]), axis=axis).ravel()
        for a, b in zip(first, second):
            for i, j in _pairs(cells[a], cells[b], diagonal):
                joined.merge((int(a), i), (int(b), j))
    tracks = []
    for members in sorted(sorted(subset) for subset in joined.subsets()):
        ids = np.full(len(cells), -1)
        fractions = np.zeros(len(cells))
        for c, i in members:
            ids[c] = cells[c].ids[i]
            fractions[c] += cells[c].fractions[i]
        c, i = members[0]
        tracks.append(
            AttractorTrack(
                id=len(tracks),
                set=cells[c].sets[i],
                kind=cells[c].kinds[i],
                ids=ids,
                fractions=fractions,
            )
        )
    return tuple(tracks)


def _pairs(a: CellAttractors, b: CellAttractors, diagonal: float) -> list[tuple[int, int]]:
    """The matched ``(i, j)``: attractor ``i`` of ``a`` is attractor ``j`` of ``b``."""
    pairs: list[tuple[int, int]] = []
    if not len(a.ids) or not len(b.ids):
        return pairs
    distance = np.linalg.norm(a.points[:, None, :] - b.points[None, :, :], axis=2)
    same = np.array([[s == t for t in b.sets] for s in a.sets])
    same |= distance <= SAME_POINT * diagonal
    distance = np.where(same & (distance <= POINT_RADIUS * diagonal), distance, np.inf)
    for i in range(len(a.ids)):
        j = int(np.argmin(distance[i]))
        if np.isfinite(distance[i, j]) and int(np.argmin(distance[:, j])) == i:
            pairs.append((i, j))
    left_a = [i for i in range(len(a.ids)) if i not in {p[0] for p in pairs}]
    left_b = [j for j in range(len(b.ids)) if j not in {p[1] for p in pairs}]
    overlaps = sorted(
        (
            (_jaccard(a.labels == a.ids[i], b.labels == b.ids[j]), i, j)
            for i in left_a
            for j in left_b
        ),
        reverse=True,
    )
    for overlap, i, j in overlaps:
        if overlap < BASIN_OVERLAP:
            break
        if i in left_a and j in left_b:
            pairs.append((i, j))
            left_a.remove(i)
            left_b.remove(j)
    return pairs


def _jaccard(x: np.ndarray, y: np.ndarray) -> float:
    union = np.count_nonzero(x | y)
    return np.count_nonzero(x & y) / union if union else 0.0


def cell_attractors(record: Mapping[str, Any], labels: np.ndarray, dim: int) -> CellAttractors:
    """A sweep cell's attractors from its record (``attractors`` and ``critical_sets``, whose
    ``family`` names a set the same way in every cell) and its attractor-id map."""
    family = {s["name"]: s.get("family", s["name"]) for s in record["critical_sets"]}
    attractors = record["attractors"]
    return CellAttractors(
        ids=tuple(int(a["id"]) for a in attractors),
        sets=tuple(family.get(a["set"], a["set"]) for a in attractors),
        kinds=tuple(Kind(a["kind"]) for a in attractors),
        points=np.asarray([a["point"] for a in attractors], dtype=float).reshape(-1, dim),
        fractions=tuple(float(a["fraction"]) for a in attractors),
        labels=np.asarray(labels),
    )
