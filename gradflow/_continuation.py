"""Critical points followed across hyperparameters: branches, and the bifurcations between cells.

Along every line of a sweep's grid of hyperparameter values (a 1-D path, or each row and column
of a 2-D grid), each isolated critical point of a cell is continued to the next cell by a
predictor–corrector step: the predictor is the secant through the branch's last two points, or
at a branch's first step the tangent ``dθ/dh = -H⁻¹ ∂ₕ∇L`` of the implicit function theorem
(``∂ₕ`` by central differences in ``h``); the corrector is Newton's method on ``∇L = 0`` at the
next cell's values.  The corrected point is matched to that cell's points from the fresh search
(a point the search missed is added), and the points no branch reaches start new branches.  A
branch keeps its identity and the name of the closed-form set it lies on.

Between two cells, where a branch changes kind, ends or begins, the hyperparameter is located by
bisection to :data:`H_TOL` (the branch re-continued by Newton at each midpoint), and the events
at one place are typed as in Kuznetsov, *Elements of Applied Bifurcation Theory* (3rd ed.),
§3.3 and §7.1 (the potential, gradient case):

- **fold**: a minimum and a saddle (or a saddle and a maximum) meet and disappear, or appear;
- **pitchfork**: a branch changes kind as two new branches split off it symmetrically;
  *supercritical* where the new branches are more stable than the centre they flank (the
  normal form ``ẋ = μx - x³``, potential ``x⁴/4 - μx²/2``: minima beside a saddle),
  *subcritical* where they are less stable (``ẋ = μx + x³``: saddles beside a minimum), on
  whichever side of the bifurcation value they exist;
- **transcritical**: two branches cross and exchange their kinds (stability);
- **degenerate crossing**: a critical set changes kind alone (e.g. the two halves of a line of
  critical points trade kinds as the transverse curvature changes sign along the whole line).

Kinds are compared as minimum, saddle, maximum or degenerate (a global and a local minimum are
the same kind here: that difference is about other critical values, not about this point).  An
event that only exists at one cell (a set degenerate exactly there, with the same kind on both
sides) is no bifurcation and is dropped; a change of kind whose point is degenerate exactly at
a cell, with the same Morse index on both sides (two branches crossing on a grid value), is
placed at that cell instead of bisected; so the answer does not depend on whether a grid value
falls on it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._classify import classify_points
from ._landscape import Landscape
from ._pieces import GRADIENT_TOL

__all__ = [
    "BIFURCATION_TYPES",
    "CRITICALITIES",
    "Bifurcation",
    "Branch",
    "CellPoints",
    "Continuation",
    "follow_branches",
    "stability",
]

H_TOL = 1e-7
"""Width of the bracket in the hyperparameter at which bisection stops (the issue's 1e-6 with a
margin: the reported value is the bracket's middle)."""
NEWTON_STEPS = 80
"""Newton iterations of one corrector step (linear convergence at a degenerate point needs
more than the quadratic case)."""
STEP_TOL = 1e-11
"""A Newton run has converged when its last step is below this (relative to ``1 + |θ|``) and
``‖∇L‖ ≤ GRADIENT_TOL``."""
MATCH = 1e-4
"""A continued point is the fresh point within this fraction of the box diagonal."""
GUARD = 0.05
"""A corrector may move at most this fraction of the box diagonal (plus twice the predicted
step) from its predictor; farther, it has jumped to another branch."""
COINCIDE = 1e-8
"""Two continued points closer than this (relative to ``1 + |θ|``) are the same point."""
EVENT_H = 1e-5
"""Events closer than this in the hyperparameter (relative to ``1 + |h|``) are one bifurcation."""
EVENT_POINT = 0.05
"""… and closer than this fraction of the box diagonal in parameter space."""
BIFURCATION_TYPES = ("fold", "pitchfork", "transcritical", "degenerate crossing")
"""The types of :attr:`Bifurcation.type`."""
CRITICALITIES = ("supercritical", "subcritical")
"""The values of :attr:`Bifurcation.criticality` for a pitchfork the kinds tell apart."""
STABILITY_RANK = {"min": 0, "saddle": 1, "max": 2}
"""Stabilities in order of unstable directions (a minimum none, a maximum all)."""

Family = Callable[[Mapping[str, float]], Landscape]
"""The landscape at given hyperparameter values (e.g. ``lambda v: model.bind(**v)``)."""


def stability(kind: str) -> str:
    """``"min"``, ``"saddle"``, ``"max"`` or ``"degenerate"`` for a kind of :data:`KINDS`."""
    return {"global_min": "min", "local_min": "min", "local_max": "max"}.get(kind, kind)


@dataclass(frozen=True)
class CellPoints:
    """What continuation needs of one cell of a sweep.

    Attributes:
        values: the hyperparameter values of the cell.
        points: its isolated critical points, shape ``(n, dim)``.
        kinds: their kinds (:data:`gradflow.KINDS`), ``n`` entries.
        names: the closed-form set each lies on, or ``"numerical"``.
        curves: ``(name, kind, sample)`` of each closed-form critical set of dimension ≥ 1.
    """

    values: Mapping[str, float]
    points: np.ndarray
    kinds: tuple[str, ...]
    names: tuple[str, ...]
    curves: tuple[tuple[str, str, np.ndarray], ...] = ()


@dataclass(frozen=True)
class Branch:
    """One isolated critical point followed across cells.

    Attributes:
        id: the branch's number.
        name: the closed-form set it lies on (``"numerical"`` where none).
        cells: the cells it passes through (indices into the sweep's cells), ascending.
        points: its point in each, shape ``(len(cells), dim)``.
        kinds: its kind in each.
    """

    id: int
    name: str
    cells: tuple[int, ...]
    points: np.ndarray
    kinds: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{"id", "name", "cells", "points", "kinds"}``."""
        return {
            "id": self.id,
            "name": self.name,
            "cells": list(self.cells),
            "points": self.points.tolist(),
            "kinds": list(self.kinds),
        }


@dataclass(frozen=True)
class Bifurcation:
    """A bifurcation located between two cells of a sweep.

    Attributes:
        type: one of :data:`BIFURCATION_TYPES`.
        at: every hyperparameter's value there (the swept one located to :data:`H_TOL`).
        axis: the hyperparameter along which it was located.
        point: the critical point where it happens, shape ``(dim,)``.
        branches: the ids of the branches involved (empty for a closed-form set of
            dimension ≥ 1).
        set: the closed-form set that changes kind (``None`` for isolated points).
        changes: ``(before, after)`` stability of each set or branch that changes kind.
        exact: the exact values ``{symbol: expression}`` where SymPy solves for them, else
            ``None`` (filled in by the caller that knows the loss symbolically): the
            hyperparameter and the point for isolated points, the hyperparameter for a set.
        curve: where the swept hyperparameter's exact value depends on the others, the curve
            in the hyperparameters' plane, e.g. ``"q = 1 - p"``, else ``None``.
        criticality: for a pitchfork, ``"supercritical"`` or ``"subcritical"``
            (:data:`CRITICALITIES`, see the module's docstring), ``None`` where the kinds do not
            tell (new branches and centre both saddles) and for every other type.
    """

    type: str
    at: dict[str, float]
    axis: str
    point: np.ndarray
    branches: tuple[int, ...] = ()
    set: str | None = None
    changes: tuple[tuple[str, str], ...] = ()
    exact: dict[str, str] | None = None
    curve: str | None = None
    criticality: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{"type", "criticality", "at", "axis", "point", "branches", "set",
        "changes", "exact", "curve"}``."""
        return {
            "type": self.type,
            "criticality": self.criticality,
            "at": self.at,
            "axis": self.axis,
            "point": self.point.tolist(),
            "branches": list(self.branches),
            "set": self.set,
            "changes": [list(c) for c in self.changes],
            "exact": self.exact,
            "curve": self.curve,
        }

    def text(self, names: Sequence[str]) -> str:
        """One line: type, where, the point and what changes."""
        at = ", ".join(f"{k} = {v:.7g}" for k, v in self.at.items())
        point = ", ".join(f"{n} = {x:.4g}" for n, x in zip(names, self.point))
        what = f" of {self.set}" if self.set else ""
        change = "; ".join(f"{a} → {b}" for a, b in self.changes)
        exact = ", ".join(f"{k} = {v}" for k, v in (self.exact or {}).items())
        kind = f"{self.criticality} {self.type}" if self.criticality else self.type
        return (
            f"{kind}{what} at {at}, ({point})"
            + (f": {change}" if change else "")
            + (f" (exact: {exact})" if exact else "")
            + (f" on the curve {self.curve}" if self.curve else "")
        )


@dataclass(frozen=True)
class Continuation:
    """The branches of a sweep and its bifurcations, ordered by where they are."""

    branches: tuple[Branch, ...]
    bifurcations: tuple[Bifurcation, ...]


@dataclass
class _Event:
    """One located change of one branch or set along one line, before typing."""

    what: str  # "change", "start" or "end"
    h: float
    point: np.ndarray
    branch: int | None = None
    set: str | None = None
    before: str = ""
    after: str = ""


@dataclass
class _Track:
    """A branch along one line: the line positions it is at and its node in each."""

    line: list[int]
    steps: list[int]
    nodes: list[int]
    ended: bool = False
    left_box: bool = False


class _Nodes:
    """Every cell's isolated points, with those continuation adds."""

    def __init__(self, cells: Sequence[CellPoints], dim: int, radius: float) -> None:
        self.points: list[np.ndarray] = []
        self.kinds: list[list[str]] = []
        self.names: list[list[str]] = []
        for c in cells:
            points = np.asarray(c.points, dtype=float).reshape(-1, dim)
            keep = [
                i
                for i in range(len(points))
                if not np.any(np.linalg.norm(points[:i] - points[i], axis=1) <= radius)
            ]
            self.points.append(points[keep])
            self.kinds.append([c.kinds[i] for i in keep])
            self.names.append([c.names[i] for i in keep])

    def add(self, cell: int, point: np.ndarray, kind: str, name: str) -> int:
        """Add a point to a cell; returns its index there."""
        self.points[cell] = np.vstack([self.points[cell], point[None]])
        self.kinds[cell].append(kind)
        self.names[cell].append(name)
        return len(self.kinds[cell]) - 1


def follow_branches(
    family: Family,
    cells: Sequence[CellPoints],
    shape: tuple[int, ...],
    axes: Sequence[str],
    box: np.ndarray,
) -> Continuation:
    """Continue every isolated critical point across a sweep's cells and locate bifurcations.

    Args:
        family: the landscape at given hyperparameter values.
        cells: the cells, in the order of ``itertools.product`` over the axes.
        shape: cells along each axis.
        axes: the swept hyperparameters, in order.
        box: the searched box, shape ``(dim, 2)``: continuation stops where a branch leaves it.

    Returns:
        The branches (a 1-D sweep: one per continued point; a 2-D sweep: the pieces followed
        along rows and columns joined where they share a point) and the bifurcations, each
        located along one line of the grid.
    """
    diagonal = float(np.linalg.norm(box[:, 1] - box[:, 0]))
    nodes = _Nodes(cells, box.shape[0], MATCH * diagonal)
    index = np.arange(len(cells)).reshape(shape)
    landscapes = _Landscapes(family)
    tracks: list[tuple[int, _Track]] = []
    events: list[tuple[int, _Event]] = []
    lines = [
        (name, [int(i) for i in line])
        for axis, name in enumerate(axes)
        for line in np.moveaxis(index, axis, -1).reshape(-1, shape[axis])
    ]
    for number, (name, line) in enumerate(lines):
        walker = _Line(landscapes, cells, nodes, line, name, box, diagonal)
        found = walker.run()
        for e in walker.events(found):
            if e.branch is not None:
                e.branch += len(tracks)
            events.append((number, e))
        tracks += [(number, t) for t in found]
    branches, owner = _branches(nodes, tracks)
    bifurcations = _typed(events, owner, landscapes, diagonal, lines, cells)
    return Continuation(branches=branches, bifurcations=bifurcations)


class _Landscapes:
    """The family's landscapes, each built once."""

    def __init__(self, family: Family) -> None:
        self.family = family
        self.made: dict[tuple[tuple[str, float], ...], Landscape] = {}

    def __call__(self, values: Mapping[str, float]) -> Landscape:
        key = tuple(sorted((k, float(v)) for k, v in values.items()))
        if key not in self.made:
            self.made[key] = self.family(values)
        return self.made[key]


class _Line:
    """Continuation and event location along one line of cells."""

    def __init__(
        self,
        family: Family,
        cells: Sequence[CellPoints],
        nodes: _Nodes,
        line: list[int],
        axis: str,
        box: np.ndarray,
        diagonal: float,
    ) -> None:
        self.family, self.cells, self.nodes, self.line = family, cells, nodes, line
        self.axis, self.box, self.diagonal = axis, box, diagonal
        self.h = np.array([cells[c].values[axis] for c in line], dtype=float)

    def values(self, h: float) -> dict[str, float]:
        """The hyperparameters of the line at ``h`` on its axis."""
        return {**self.cells[self.line[0]].values, self.axis: float(h)}

    def point(self, track: _Track, i: int) -> np.ndarray:
        """The track's point at its ``i``-th step."""
        return self.nodes.points[self.line[track.steps[i]]][track.nodes[i]]

    def kind(self, track: _Track, i: int) -> str:
        return stability(self.nodes.kinds[self.line[track.steps[i]]][track.nodes[i]])

    def run(self) -> list[_Track]:
        """Follow every point from the line's first cell to its last."""
        first = self.line[0]
        tracks = [_Track(self.line, [0], [j]) for j in range(len(self.nodes.kinds[first]))]
        for k in range(len(self.line) - 1):
            alive = [t for t in tracks if not t.ended and t.steps[-1] == k]
            claimed = self._step(k, alive)
            cell = self.line[k + 1]
            tracks += [
                _Track(self.line, [k + 1], [j])
                for j in range(len(self.nodes.kinds[cell]))
                if j not in claimed
            ]
        return tracks

    def _predict(self, k: int, alive: list[_Track]) -> np.ndarray:
        """Secant through each track's last two points, or the tangent at its first."""
        starts = np.array([self.point(t, -1) for t in alive])
        dh = self.h[k + 1] - self.h[k]
        out = starts.copy()
        fresh = [i for i, t in enumerate(alive) if len(t.steps) < 2]
        if fresh:
            out[fresh] += dh * _tangent(
                self.family, self.values(self.h[k]), self.axis, starts[fresh]
            )
        for i, t in enumerate(alive):
            if len(t.steps) >= 2:
                previous = self.point(t, -2)
                back = self.h[k] - self.h[t.steps[-2]]
                out[i] += (starts[i] - previous) * dh / back
        return out

    def _step(self, k: int, alive: list[_Track]) -> set[int]:
        """Continue the tracks at position ``k`` to ``k + 1``; returns the nodes they reach.

        Tracks whose correctors converge to one point of the next cell, where its Hessian is
        not singular, cannot all be on it: the branches that are not there any more (two
        pitchfork branches folding into the centre before it is reached) reach the point
        farthest from their predictors, and end; the track nearest its predictor goes on.
        At a singular point (branches crossing, or meeting at a bifurcation exactly on the
        cell) every track goes on."""
        if not alive:
            return set()
        cell = self.line[k + 1]
        landscape = self.family(self.cells[cell].values)
        predicted = self._predict(k, alive)
        starts = np.array([self.point(t, -1) for t in alive])
        corrected, ok = _newton(landscape, predicted)
        reach = GUARD * self.diagonal + 2 * np.linalg.norm(predicted - starts, axis=1)
        ok &= np.linalg.norm(corrected - predicted, axis=1) <= reach
        inside = np.all((corrected >= self.box[:, 0]) & (corrected <= self.box[:, 1]), axis=1)
        targets: dict[int, int] = {}
        new_kinds = None
        for i, t in enumerate(alive):
            if not ok[i]:
                t.ended = True
                continue
            if not inside[i]:
                t.ended, t.left_box = True, True
                continue
            j = self._match(cell, corrected[i])
            if j is None:
                if new_kinds is None:
                    new_kinds = classify_points(landscape, corrected, None).kinds
                name = self.nodes.names[self.line[t.steps[-1]]][t.nodes[-1]]
                j = self.nodes.add(cell, corrected[i], str(new_kinds[i]), name)
            targets[i] = j
        miss = np.linalg.norm(corrected - predicted, axis=1)
        for j in set(targets.values()):
            rivals = sorted((i for i in targets if targets[i] == j), key=lambda i: miss[i])
            if len(rivals) > 1 and not _singular(landscape, self.nodes.points[cell][j]):
                for i in rivals[1:]:
                    alive[i].ended = True
                    del targets[i]
        for i, j in targets.items():
            alive[i].steps.append(k + 1)
            alive[i].nodes.append(j)
        return set(targets.values())

    def _match(self, cell: int, point: np.ndarray) -> int | None:
        points = self.nodes.points[cell]
        if not len(points):
            return None
        distance = np.linalg.norm(points - point, axis=1)
        j = int(np.argmin(distance))
        return j if distance[j] <= MATCH * self.diagonal else None

    def events(self, tracks: list[_Track]) -> list[_Event]:
        """Every change of kind, end and start along the line, located by bisection."""
        out: list[_Event | None] = []
        last = len(self.line) - 1
        for number, t in enumerate(tracks):
            kinds = [self.kind(t, i) for i in range(len(t.steps))]
            for i in range(len(t.steps) - 1):
                if kinds[i] != kinds[i + 1] and not _blip(t.steps, kinds, i):
                    out.append(self._locate_change(number, t, i, kinds[i], kinds[i + 1]))
            if t.ended and not t.left_box and t.steps[-1] < last:
                out.append(self._locate_existence(number, t, tracks, -1, "end"))
            if t.steps[0] > 0:
                out.append(self._locate_existence(number, t, tracks, 0, "start"))
        out += self._curve_events()
        return [e for e in out if e is not None]

    def _locate_change(
        self, number: int, t: _Track, i: int, before: str, after: str
    ) -> _Event | None:
        """Bisection on the branch's kind between its ``i``-th and ``i+1``-th points (``None``:
        see :meth:`_side`)."""
        k0, k1 = t.steps[i], t.steps[i + 1]
        p0, p1 = self.point(t, i), self.point(t, i + 1)
        h0, h1 = self.h[k0], self.h[k1]
        at_cell = self._degenerate_end(k0, p0, k1, p1)
        if at_cell is not None:
            point = p0 if at_cell == k0 else p1
            return _Event(
                "change", self.h[at_cell], point, branch=number, before=before, after=after
            )
        best = {"point": p0}
        side = self._side(k0, p0, k1, p1, before)
        if side is None:
            return None

        def same(h: float) -> bool:
            s = (h - h0) / (h1 - h0)
            landscape = self.family(self.values(h))
            point, ok = _newton(landscape, ((1 - s) * p0 + s * p1)[None])
            if not ok[0]:
                return s < 0.5
            best["point"] = point[0]
            return side(landscape, point[0])

        h = _bisect(same, h0, h1)
        return _Event("change", h, best["point"], branch=number, before=before, after=after)

    def _degenerate_end(self, k0: int, p0: np.ndarray, k1: int, p1: np.ndarray) -> int | None:
        """The line position, ``k0`` or ``k1``, of a change of kind that happens exactly on that
        cell: the Morse index is the same at both ends and the point at that end has a singular
        Hessian (two branches crossing on a grid value, where they meet in one degenerate
        point: a bisection by the kind would stop where the classifier's tolerance does, on
        each side of the cell, and the crossing would be reported as two changes).  ``None``
        otherwise, and at an end of the line (see :meth:`_side`)."""
        if {0, len(self.line) - 1} & {k0, k1}:
            return None
        ends = [(k, p, self.family(self.values(self.h[k]))) for k, p in ((k0, p0), (k1, p1))]
        if morse_index(ends[0][2], p0) != morse_index(ends[1][2], p1):
            return None
        return next((k for k, p, landscape in ends if _singular(landscape, p)), None)

    def _side(
        self, k0: int, p0: np.ndarray, k1: int, p1: np.ndarray, before: str
    ) -> Callable[[Landscape, np.ndarray], bool] | None:
        """Whether a point is on the side of line position ``k0`` of a change of kind: by its
        Morse index where the two ends' indices differ (an eigenvalue's sign, exact to the last
        digits), else by its kind (a change that only probing the loss sees, as at a point whose
        whole Hessian vanishes).  ``None`` for the latter at an end of the line: a kind seen
        only on the last cell cannot be told from a point degenerate exactly there."""
        h0, h1 = self.h[k0], self.h[k1]
        start = morse_index(self.family(self.values(h0)), p0)
        if start != morse_index(self.family(self.values(h1)), p1):
            return lambda landscape, point: morse_index(landscape, point) == start
        if {0, len(self.line) - 1} & {k0, k1}:
            return None
        return lambda landscape, point: (
            stability(str(classify_points(landscape, point[None], None).kinds[0])) == before
        )

    def _locate_existence(
        self, number: int, t: _Track, tracks: list[_Track], end: int, what: str
    ) -> _Event | None:
        """Bisection on whether the track's point still exists (Newton converges near it, apart
        from every track that runs through the same interval).  ``None`` where it is missing
        only at the line's first or last cell (it exists to within :data:`H_TOL` of it): as at
        a cell inside the line (:func:`_blip`), a point missing at one cell only is part of a
        set degenerate exactly there (the canonical saddle on ``p + q = 1``), no fold."""
        k = t.steps[end]
        k_gone = k + 1 if what == "end" else k - 1
        h_here, h_gone = self.h[k], self.h[k_gone]
        through = [
            (
                self.point(u, u.steps.index(min(k, k_gone))),
                self.point(u, u.steps.index(max(k, k_gone))),
            )
            for u in tracks
            if u is not t and min(k, k_gone) in u.steps and max(k, k_gone) in u.steps
        ]
        lo, hi = min(h_here, h_gone), max(h_here, h_gone)
        last = {"point": self.point(t, end)}

        def exists(h: float) -> bool:
            landscape = self.family(self.values(h))
            start = last["point"]
            point, ok = _newton(landscape, start[None])
            if not ok[0] or np.linalg.norm(point[0] - start) > GUARD * self.diagonal:
                return False
            if not np.all((point[0] >= self.box[:, 0]) & (point[0] <= self.box[:, 1])):
                return False
            if through:
                s = (h - lo) / (hi - lo)
                others, fine = _newton(
                    landscape, np.array([(1 - s) * a + s * b for a, b in through])
                )
                near = np.linalg.norm(others - point[0], axis=1)
                if np.any(fine & (near <= COINCIDE * (1 + np.linalg.norm(point[0])))):
                    return False
            last["point"] = point[0]
            return True

        h = _bisect(exists, h_here, h_gone)
        if k_gone in (0, len(self.line) - 1) and abs(h - h_gone) <= H_TOL:
            return None
        kind = self.kind(t, end)
        before, after = (kind, "none") if what == "end" else ("none", kind)
        return _Event(what, h, last["point"], branch=number, before=before, after=after)

    def _curve_events(self) -> list[_Event]:
        """Where a closed-form set of dimension ≥ 1 changes kind between neighbouring cells.

        The samples of the sets of both cells are moved along their set (same free
        coordinates) into each cell and classified there; where the kind at a sample differs,
        the kind along the set is bisected.  Neighbours whose sets all keep their kinds
        (:func:`_kinds_may_change`) are not classified again.
        """
        out = []
        for k in range(len(self.line) - 1):
            a, b = self.cells[self.line[k]], self.cells[self.line[k + 1]]
            if not _kinds_may_change(a, b):
                continue
            samples: list[tuple[str, np.ndarray]] = []
            for name, _, sample in (*a.curves, *b.curves):
                point = np.asarray(sample, dtype=float)
                if not any(n == name and np.allclose(p, point) for n, p in samples):
                    samples.append((name, point))
            if not samples:
                continue
            before = self._kinds_on_sets(self.h[k], samples)
            after = self._kinds_on_sets(self.h[k + 1], samples)
            for (name, sample), x, y in zip(samples, before, after):
                if x is not None and y is not None and x != y:
                    out.append(self._locate_curve(k, name, sample, x, y))
        return out

    def _kinds_on_sets(self, h: float, samples: list[tuple[str, np.ndarray]]) -> list[str | None]:
        """The stability at each sample moved onto its set at ``h`` (``None``: not on it)."""
        landscape = self.family(self.values(h))
        points = [_on_set(landscape, name, sample) for name, sample in samples]
        found = [p for p in points if p is not None]
        if not found:
            return [None] * len(points)
        kinds = iter(classify_points(landscape, np.array(found), None).kinds)
        return [None if p is None else stability(str(next(kinds))) for p in points]

    def _locate_curve(
        self, k: int, name: str, sample: np.ndarray, before: str, after: str
    ) -> _Event | None:
        """Bisection on the kind at ``sample`` moved along the set ``name``."""
        h0, h1 = self.h[k], self.h[k + 1]
        p0 = _on_set(self.family(self.values(h0)), name, sample)
        p1 = _on_set(self.family(self.values(h1)), name, sample)
        side = self._side(k, p0, k + 1, p1, before)
        if side is None:
            return None
        best = {"point": sample}

        def same(h: float) -> bool:
            landscape = self.family(self.values(h))
            point = _on_set(landscape, name, sample)
            if point is None:
                return False
            best["point"] = point
            return side(landscape, point)

        h = _bisect(same, h0, h1)
        return _Event("change", h, best["point"], set=name, before=before, after=after)


MORSE_ZERO = 1e-12
"""In :func:`morse_index`, an eigenvalue counts as negative below ``-MORSE_ZERO · max(1, max|λ|)``
(rounding only: near a bifurcation the eigenvalue that crosses zero is tiny)."""


def morse_index(landscape: Landscape, point: np.ndarray) -> int:
    """The number of negative eigenvalues of ``∇²L`` at ``point`` (shape ``(dim,)``), ``-1``
    where the Hessian is not finite."""
    with np.errstate(all="ignore"):
        h = landscape.hessian(point[None])[0]
    if not np.all(np.isfinite(h)):
        return -1
    lam = np.linalg.eigvalsh(h)
    return int(np.sum(lam < -MORSE_ZERO * max(1.0, float(np.abs(lam).max()))))


def _kinds_may_change(a: CellPoints, b: CellPoints) -> bool:
    """Whether a closed-form set of one cell has, in the other cell, a set of its name whose
    sample nearest to its own has another stability (as the halves of a line that trade kinds
    do).  Where none has, every set keeps its kind from one cell to the other: no sample needs
    to be classified again."""
    for one, other in ((a, b), (b, a)):
        for name, kind, sample in one.curves:
            same = [(k, s) for n, k, s in other.curves if n == name]
            if same:
                near, _ = min(same, key=lambda c: float(np.linalg.norm(c[1] - sample)))
                if stability(near) != stability(kind):
                    return True
    return False


def _blip(steps: list[int], kinds: list[str], i: int) -> bool:
    """Whether the change between positions ``i`` and ``i + 1`` is half of a kind seen at one
    cell only, between neighbours of one kind (a point degenerate exactly on a grid value): no
    bifurcation, so not located."""
    one = [j for j in (i, i + 1) if 0 < j < len(kinds) - 1]
    return any(
        kinds[j - 1] == kinds[j + 1] != kinds[j] and steps[j + 1] - steps[j - 1] == 2 for j in one
    )


def _on_set(landscape: Landscape, name: str, sample: np.ndarray) -> np.ndarray | None:
    """The point of the closed-form set ``name`` with the free coordinates of ``sample``."""
    families = landscape.set_families
    for piece in landscape.closed_forms:
        if families.get(piece.name, piece.name) != name:
            continue
        full, ok = piece.complete(sample[list(piece.free)][None])
        if ok[0] and np.all(np.isfinite(full[0])):
            return full[0]
    return None


def _bisect(test: Callable[[float], bool], h_true: float, h_false: float) -> float:
    """The middle of the bracket, narrowed to :data:`H_TOL`, where ``test`` turns false."""
    while abs(h_false - h_true) > H_TOL:
        mid = 0.5 * (h_true + h_false)
        if test(mid):
            h_true = mid
        else:
            h_false = mid
    return 0.5 * (h_true + h_false)


def _newton(landscape: Landscape, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Newton's method on ``∇L = 0`` from each start (least squares where ``H`` is singular).

    Returns the points, shape ``(m, dim)``, and where each converged: finite, the last step below
    :data:`STEP_TOL` and ``‖∇L‖ ≤ GRADIENT_TOL``.
    """
    x = np.array(starts, dtype=float)
    step = np.full(len(x), np.inf)
    with np.errstate(all="ignore"):
        for _ in range(NEWTON_STEPS):
            g = landscape.grad(x)
            h = landscape.hessian(x)
            bad = ~np.all(np.isfinite(h), axis=(1, 2)) | ~np.all(np.isfinite(g), axis=1)
            h[bad], g[bad] = np.eye(x.shape[1]), 0.0
            delta = np.einsum("mij,mj->mi", np.linalg.pinv(h, rcond=1e-13, hermitian=True), g)
            delta[bad] = np.nan
            x = x - delta
            step = np.linalg.norm(delta, axis=1)
            if not np.any(step > STEP_TOL * (1 + np.linalg.norm(x, axis=1))):
                break
        g = np.linalg.norm(landscape.grad(x), axis=1)
    ok = np.all(np.isfinite(x), axis=1) & (g <= GRADIENT_TOL)
    ok &= step <= np.sqrt(STEP_TOL) * (1 + np.linalg.norm(x, axis=1))
    return x, ok


def _tangent(
    family: Family, values: Mapping[str, float], axis: str, points: np.ndarray
) -> np.ndarray:
    """``dθ/dh = -H⁻¹ ∂ₕ∇L`` at each point (central differences in ``h``; zero where ``H`` is
    singular)."""
    h = float(values[axis])
    delta = 1e-6 * max(1.0, abs(h))
    plus = family({**values, axis: h + delta}).grad(points)
    minus = family({**values, axis: h - delta}).grad(points)
    dg = (plus - minus) / (2 * delta)
    hess = family(values).hessian(points)
    with np.errstate(all="ignore"):
        out = -np.einsum("mij,mj->mi", np.linalg.pinv(hess, rcond=1e-8, hermitian=True), dg)
    return np.where(np.isfinite(out), out, 0.0)


def _branches(
    nodes: _Nodes, tracks: list[tuple[int, _Track]]
) -> tuple[tuple[Branch, ...], list[int]]:
    """The branches, and the branch of each track.

    Tracks of different lines that share a point (which no other track of their lines holds)
    are one branch; along one line, two tracks that meet at a point stay two branches.
    """
    parent = list(range(len(tracks)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    holders: dict[tuple[int, int], list[int]] = {}
    for i, (_, t) in enumerate(tracks):
        for step, j in zip(t.steps, t.nodes):
            holders.setdefault((t.line[step], j), []).append(i)
    for held in holders.values():
        lines = [tracks[i][0] for i in held]
        if len(held) == 2 and lines[0] != lines[1]:
            parent[root(held[0])] = root(held[1])
    groups: dict[int, list[int]] = {}
    for i in range(len(tracks)):
        groups.setdefault(root(i), []).append(i)
    made = []
    for members in groups.values():
        visits = sorted(
            {
                (tracks[i][1].line[step], j)
                for i in members
                for step, j in zip(tracks[i][1].steps, tracks[i][1].nodes)
            }
        )
        made.append((members, visits))
    made.sort(key=lambda m: (m[1][0][0], tuple(nodes.points[m[1][0][0]][m[1][0][1]])))
    owner = [0] * len(tracks)
    branches = []
    for number, (members, visits) in enumerate(made):
        for i in members:
            owner[i] = number
        cell, j = visits[0]
        branches.append(
            Branch(
                id=number,
                name=nodes.names[cell][j],
                cells=tuple(c for c, _ in visits),
                points=np.array([nodes.points[c][j] for c, j in visits]),
                kinds=tuple(nodes.kinds[c][j] for c, j in visits),
            )
        )
    return tuple(branches), owner


def _typed(
    events: list[tuple[int, _Event]],
    owner: list[int],
    landscapes: _Landscapes,
    diagonal: float,
    lines: list[tuple[str, list[int]]],
    cells: Sequence[CellPoints],
) -> tuple[Bifurcation, ...]:
    """Group each line's events by place and type each group (see the module's docstring)."""
    clusters: list[tuple[int, list[_Event]]] = []
    for number, e in sorted(events, key=lambda x: (x[0], x[1].h)):
        for line, group in clusters:
            first = group[0]
            if (
                line == number
                and abs(e.h - first.h) <= EVENT_H * (1 + abs(first.h))
                and np.linalg.norm(e.point - first.point) <= EVENT_POINT * diagonal
            ):
                group.append(e)
                break
        else:
            clusters.append((number, [e]))
    out = []
    for number, group in clusters:
        axis, line = lines[number]
        base = dict(cells[line[0]].values)

        def at(events: list[_Event], axis: str = axis, base: dict = base) -> dict[str, float]:
            return {**base, axis: float(np.mean([e.h for e in events]))}

        out += _type_group(group, owner, at, axis, landscapes)
    out.sort(key=lambda b: (b.axis, tuple(b.at.values()), b.type))
    return tuple(out)


def _type_group(
    group: list[_Event],
    owner: list[int],
    at: Callable[[list[_Event]], dict[str, float]],
    axis: str,
    landscapes: _Landscapes,
) -> list[Bifurcation]:
    """The bifurcations of one place: a typed event of the isolated points, and a degenerate
    crossing per closed-form set that changes kind."""
    changes: dict[int, list[str]] = {}
    existence: list[_Event] = []
    curves: dict[str, list[_Event]] = {}
    for e in group:
        if e.set is not None:
            curves.setdefault(e.set, []).append(e)
        elif e.what == "change":
            branch = owner[e.branch]
            changes.setdefault(branch, [e.before, e.after])[1] = e.after
        else:
            existence.append(e)
    changed = {b: (x, y) for b, (x, y) in changes.items() if x != y}
    ends = {owner[e.branch] for e in existence if e.what == "end"}
    starts = {owner[e.branch] for e in existence if e.what == "start"}
    existence = [e for e in existence if owner[e.branch] not in ends & starts]
    out = [
        Bifurcation(
            type="degenerate crossing",
            at=at(events),
            axis=axis,
            point=events[0].point,
            set=name,
            changes=tuple((e.before, e.after) for e in events),
        )
        for name, events in curves.items()
    ]
    branch_events = [
        e
        for e in existence + [e for e in group if e.what == "change" and e.set is None]
        if e.what != "change" or owner[e.branch] in changed
    ]
    if not branch_events:
        return out
    if changed and len(existence) >= 2:
        kind = "pitchfork"
    elif len(changed) >= 2:
        kind = "transcritical"
    elif changed:
        kind = "degenerate crossing"
    else:
        kind = "fold"
    anchor = [e for e in branch_events if e.what == "change"] or branch_events
    point = np.mean([e.point for e in anchor], axis=0)
    where = at(anchor)
    if kind == "fold" and not _singular(landscapes(where), point):
        return out
    involved = sorted({*changed, *(owner[e.branch] for e in existence)})
    moves = [changed[b] for b in sorted(changed)] + [(e.before, e.after) for e in existence]
    out.append(
        Bifurcation(
            type=kind,
            at=where,
            axis=axis,
            point=point,
            branches=tuple(involved),
            changes=tuple(moves),
            criticality=_criticality(changed, existence) if kind == "pitchfork" else None,
        )
    )
    return out


def _criticality(changed: dict[int, tuple[str, str]], existence: list[_Event]) -> str | None:
    """``"supercritical"`` where the pitchfork's new branches are more stable than the centre
    on the side where they exist, ``"subcritical"`` where less, ``None`` where that is not
    told (several centres, branches on both sides, or equal ranks)."""
    sides = {e.what for e in existence}
    if len(changed) != 1 or len(sides) != 1:
        return None
    (before, after), (side,) = next(iter(changed.values())), sides
    centre = before if side == "end" else after
    new = {e.before if side == "end" else e.after for e in existence}
    ranks = {STABILITY_RANK.get(k) for k in new}
    rank = STABILITY_RANK.get(centre)
    if len(ranks) != 1 or None in ranks or rank is None or ranks == {rank}:
        return None
    return "supercritical" if ranks.pop() < rank else "subcritical"


FOLD_EIGENVALUE = 1e-2
"""At a fold the Hessian is singular: where the smallest ``|λ|`` at the located point exceeds
this fraction of the largest, a branch was lost by the corrector and no fold is reported."""


def _singular(landscape: Landscape, point: np.ndarray) -> bool:
    """Whether the Hessian at ``point`` is (nearly) singular."""
    with np.errstate(all="ignore"):
        lam = np.abs(np.linalg.eigvalsh(landscape.hessian(point[None])[0]))
    return bool(np.all(np.isfinite(lam)) and lam.min() <= FOLD_EIGENVALUE * max(lam.max(), 1e-300))
