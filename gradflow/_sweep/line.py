"""Continuation along one line of a sweep's cells: every cell's isolated points (with those the
corrector adds), the tracks followed by predictor and corrector from cell to cell, and the changes
of kind, ends and starts along them located by bisection (the events :mod:`.events` types).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .._critical.classify import classify_points
from .._landscape.base import Landscape
from .._outcome import Kind
from .branches import CellPoints, stability
from .corrector import H_TOL, Family, bisect, morse_index, newton, on_set, singular, tangent

__all__ = ["MATCH", "Event", "Landscapes", "Line", "Nodes", "Track"]

MATCH = 1e-4
"""A continued point is the fresh point within this fraction of the box diagonal."""
GUARD = 0.05
"""A corrector may move at most this fraction of the box diagonal (plus twice the predicted
step) from its predictor; farther, it has jumped to another branch."""
COINCIDE = 1e-8
"""Two continued points closer than this (relative to ``1 + |θ|``) are the same point."""
CONTINUOUS = 1e-3
"""A step of :meth:`Line._follow` is taken where Newton's point lies within this fraction of the
box diagonal, plus a tenth of the predicted move, of its predictor."""
MIN_SUBSTEP = 1e-9
""":meth:`Line._follow` gives up (the branch ends: a fold) below this step in the
hyperparameter, relative to ``1 + |h|``, or below :data:`MIN_SHARE` of the way it follows."""
MIN_SHARE = 1e-7
"""… the share of ``|h1 − h0|`` below which :meth:`Line._follow` gives up, from one cell to the
next: a branch through a cusp (``x ∝ (t/10)^{1/3}`` at ``t = 0``) moves fast in ``θ``, and only
steps of about ``10⁻⁶`` of a cell keep each move within :data:`CONTINUOUS` of the box."""
MAX_SUBSTEPS = 400
"""Steps :meth:`Line._follow` may take between two cells."""
BISECTION_SHARE = 1e-2
"""The :data:`MIN_SHARE` of the follows that locate a branch's start or end by bisection: each
covers half the bracket, and a give-up within this share of a fold only moves the answer
within the bracket, which shrinks to :data:`~gradflow._sweep.corrector.H_TOL`."""
FOLLOW_NEWTON = 20
"""Newton iterations of one step of :meth:`Line._follow` (its predictor is close; a step whose
Newton run needs more is halved)."""


@dataclass
class Event:
    """One located change of one branch or set along one line, before typing."""

    what: str  # "change", "start" or "end"
    h: float
    point: np.ndarray
    branch: int | None = None
    set: str | None = None
    before: str = ""
    after: str = ""


@dataclass
class Track:
    """A branch along one line: the line positions it is at and its node in each."""

    line: list[int]
    steps: list[int]
    nodes: list[int]
    ended: bool = False
    left_box: bool = False


class Nodes:
    """Every cell's isolated points, with those continuation adds."""

    def __init__(self, cells: Sequence[CellPoints], dim: int, radius: float) -> None:
        self.points: list[np.ndarray] = []
        self.kinds: list[list[Kind]] = []
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

    def add(self, cell: int, point: np.ndarray, kind: Kind, name: str) -> int:
        """Add a point to a cell; returns its index there."""
        self.points[cell] = np.vstack([self.points[cell], point[None]])
        self.kinds[cell].append(kind)
        self.names[cell].append(name)
        return len(self.kinds[cell]) - 1


class Landscapes:
    """The family's landscapes, each built once."""

    def __init__(self, family: Family) -> None:
        self.family = family
        self.made: dict[tuple[tuple[str, float], ...], Landscape] = {}

    def __call__(self, values: Mapping[str, float]) -> Landscape:
        key = tuple(sorted((k, float(v)) for k, v in values.items()))
        if key not in self.made:
            self.made[key] = self.family(values)
        return self.made[key]


class Line:
    """Continuation and event location along one line of cells."""

    def __init__(
        self,
        family: Family,
        cells: Sequence[CellPoints],
        nodes: Nodes,
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

    def point(self, track: Track, i: int) -> np.ndarray:
        """The track's point at its ``i``-th step."""
        return self.nodes.points[self.line[track.steps[i]]][track.nodes[i]]

    def kind(self, track: Track, i: int) -> str:
        return stability(self.nodes.kinds[self.line[track.steps[i]]][track.nodes[i]])

    def run(self) -> list[Track]:
        """Follow every point from the line's first cell to its last."""
        first = self.line[0]
        tracks = [Track(self.line, [0], [j]) for j in range(len(self.nodes.kinds[first]))]
        for k in range(len(self.line) - 1):
            alive = [t for t in tracks if not t.ended and t.steps[-1] == k]
            claimed = self._step(k, alive)
            cell = self.line[k + 1]
            tracks += [
                Track(self.line, [k + 1], [j])
                for j in range(len(self.nodes.kinds[cell]))
                if j not in claimed
            ]
        return tracks

    def _predict(self, k: int, alive: list[Track]) -> np.ndarray:
        """Secant through each track's last two points, or the tangent at its first."""
        starts = np.array([self.point(t, -1) for t in alive])
        dh = self.h[k + 1] - self.h[k]
        out = starts.copy()
        fresh = [i for i, t in enumerate(alive) if len(t.steps) < 2]
        if fresh:
            out[fresh] += dh * tangent(
                self.family, self.values(self.h[k]), self.axis, starts[fresh]
            )
        for i, t in enumerate(alive):
            if len(t.steps) >= 2:
                previous = self.point(t, -2)
                back = self.h[k] - self.h[t.steps[-2]]
                out[i] += (starts[i] - previous) * dh / back
        return out

    def _step(self, k: int, alive: list[Track]) -> set[int]:
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
        corrected, ok = newton(landscape, predicted)
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
                j = self.nodes.add(cell, corrected[i], new_kinds[i], name)
            if (
                stability(self.nodes.kinds[cell][j]) != self.kind(t, -1)
                or np.linalg.norm(corrected[i] - predicted[i])
                > CONTINUOUS * self.diagonal + 0.1 * np.linalg.norm(predicted[i] - starts[i])
                or singular(self.family(self.values(self.h[k])), starts[i])
            ):
                j = self._continuous(k, t, landscape)
                if j is None:
                    t.ended = True
                    continue
            targets[i] = j
        miss = np.linalg.norm(corrected - predicted, axis=1)
        for j in set(targets.values()):
            rivals = sorted((i for i in targets if targets[i] == j), key=lambda i: miss[i])
            if len(rivals) > 1 and not singular(landscape, self.nodes.points[cell][j]):
                for i in rivals[1:]:
                    alive[i].ended = True
                    del targets[i]
        for i, j in targets.items():
            alive[i].steps.append(k + 1)
            alive[i].nodes.append(j)
        return set(targets.values())

    def _continuous(self, k: int, t: Track, landscape: Landscape) -> int | None:
        """The node of the next cell that the track's branch reaches when followed with small
        steps (:meth:`_follow`), added if the cell's search missed it, or ``None`` where the
        branch ends or leaves the box on the way: asked where one step changed the kind,
        missed its prediction, or started from a singular Hessian (a cusp on a cell).  A single predictor–corrector step from a
        cell to the next may land on another branch (from the minimum of
        ``x⁴/4 − t x²/2 − t x/10`` at ``t = −1/6`` onto the saddle born in the fold at
        ``t = 27/400``), which would read as a change of kind; the branch itself keeps its kind
        unless an eigenvalue crosses zero on the way."""
        before = (self.h[t.steps[-2]], self.point(t, -2)) if len(t.steps) > 1 else None
        point = self._follow(self.point(t, -1), self.h[k], self.h[k + 1], before)
        if point is None or not np.all((point >= self.box[:, 0]) & (point <= self.box[:, 1])):
            return None
        cell = self.line[k + 1]
        j = self._match(cell, point)
        if j is None:
            kind = classify_points(landscape, point[None], None).kinds[0]
            j = self.nodes.add(
                cell, point, kind, self.nodes.names[self.line[t.steps[-1]]][t.nodes[-1]]
            )
        return j

    def _follow(
        self,
        point: np.ndarray,
        h0: float,
        h1: float,
        previous: tuple[float, np.ndarray] | None = None,
        share: float = MIN_SHARE,
    ) -> np.ndarray | None:
        """Natural continuation of the critical point ``point`` of ``h0`` to ``h1``: the tangent
        as first predictor (the secant from ``previous``, the branch's point at another value,
        where given), then the secant through the last two points (at a point where two
        branches cross, the tangent is not defined and the secant keeps the branch), Newton
        corrector, the step halved where Newton fails, lands farther than
        :data:`CONTINUOUS` allows from its predictor or moves the point by more than ten times
        that (near a fold the tangent is huge), doubled after a success; ``None`` where
        the step falls below :data:`MIN_SUBSTEP` (the branch ends in a fold) or the steps run
        out (or below ``share`` of ``|h1 − h0|``)."""
        h, p, dh = h0, point, h1 - h0
        for _ in range(MAX_SUBSTEPS):
            if h == h1:
                return p
            step = dh if abs(dh) < abs(h1 - h) else h1 - h
            if previous is None:
                move = step * tangent(self.family, self.values(h), self.axis, p[None])[0]
            else:
                move = (p - previous[1]) * step / (h - previous[0])
            predicted = p + move
            corrected, ok = newton(
                self.family(self.values(h + step)), predicted[None], FOLLOW_NEWTON
            )
            miss = float(np.linalg.norm(corrected[0] - predicted))
            moved = float(np.linalg.norm(corrected[0] - p))
            near = CONTINUOUS * self.diagonal
            if ok[0] and miss <= near + 0.1 * float(np.linalg.norm(move)) and moved <= 10 * near:
                previous = (h, p)
                h, p, dh = h + step, corrected[0], 2 * step
            else:
                dh = step / 2
                if abs(dh) < max(MIN_SUBSTEP * (1 + abs(h)), share * abs(h1 - h0)):
                    return None
        return None

    def _match(self, cell: int, point: np.ndarray) -> int | None:
        points = self.nodes.points[cell]
        if not len(points):
            return None
        distance = np.linalg.norm(points - point, axis=1)
        j = int(np.argmin(distance))
        return j if distance[j] <= MATCH * self.diagonal else None

    def events(self, tracks: list[Track]) -> list[Event]:
        """Every change of kind, end and start along the line, located by bisection."""
        out: list[Event | None] = []
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
        self, number: int, t: Track, i: int, before: str, after: str
    ) -> Event | None:
        """Bisection on the branch's kind between its ``i``-th and ``i+1``-th points (``None``:
        see :meth:`_side`)."""
        k0, k1 = t.steps[i], t.steps[i + 1]
        p0, p1 = self.point(t, i), self.point(t, i + 1)
        h0, h1 = self.h[k0], self.h[k1]
        at_cell = self._degenerate_end(k0, p0, k1, p1)
        if at_cell is not None:
            point = p0 if at_cell == k0 else p1
            return Event(
                "change", self.h[at_cell], point, branch=number, before=before, after=after
            )
        best = {"point": p0}
        side = self._side(k0, p0, k1, p1, before)
        if side is None:
            return None

        def same(h: float) -> bool:
            s = (h - h0) / (h1 - h0)
            landscape = self.family(self.values(h))
            point, ok = newton(landscape, ((1 - s) * p0 + s * p1)[None])
            if not ok[0]:
                return s < 0.5
            best["point"] = point[0]
            return side(landscape, point[0])

        h = bisect(same, h0, h1)
        return Event("change", h, best["point"], branch=number, before=before, after=after)

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
        return next((k for k, p, landscape in ends if singular(landscape, p)), None)

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
            stability(classify_points(landscape, point[None], None).kinds[0]) == before
        )

    def _locate_existence(
        self, number: int, t: Track, tracks: list[Track], end: int, what: str
    ) -> Event | None:
        """Bisection on whether the track's point still exists (it can be followed there with
        small steps, :meth:`_follow`, and lies apart from every track that runs through the same
        interval, followed there from the side where the point is gone).  ``None`` where it is missing
        only at the line's first or last cell (it exists to within :data:`H_TOL` of it): as at
        a cell inside the line (:func:`_blip`), a point missing at one cell only is part of a
        set degenerate exactly there (the canonical saddle on ``p + q = 1``), no fold."""
        k = t.steps[end]
        k_gone = k + 1 if what == "end" else k - 1
        h_here, h_gone = self.h[k], self.h[k_gone]
        through = [
            {h_gone: self.point(u, u.steps.index(k_gone))}
            for u in tracks
            if u is not t and k in u.steps and k_gone in u.steps
        ]
        last = {"point": self.point(t, end), "h": h_here}

        def exists(h: float) -> bool:
            point = self._follow(last["point"], last["h"], h, share=BISECTION_SHARE)
            if point is None or not np.all((point >= self.box[:, 0]) & (point <= self.box[:, 1])):
                return False
            for known in through:
                nearest = min(known, key=lambda g: abs(g - h))
                other = self._follow(known[nearest], nearest, h, share=BISECTION_SHARE)
                if other is None:
                    continue
                known[h] = other
                if np.linalg.norm(other - point) <= COINCIDE * (1 + np.linalg.norm(point)):
                    return False
            last["point"], last["h"] = point, h
            return True

        h = bisect(exists, h_here, h_gone)
        if k_gone in (0, len(self.line) - 1) and abs(h - h_gone) <= H_TOL:
            return None
        kind = self.kind(t, end)
        before, after = (kind, "none") if what == "end" else ("none", kind)
        return Event(what, h, last["point"], branch=number, before=before, after=after)

    def _curve_events(self) -> list[Event]:
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
        points = [on_set(landscape, name, sample) for name, sample in samples]
        found = [p for p in points if p is not None]
        if not found:
            return [None] * len(points)
        kinds = iter(classify_points(landscape, np.array(found), None).kinds)
        return [None if p is None else stability(next(kinds)) for p in points]

    def _locate_curve(
        self, k: int, name: str, sample: np.ndarray, before: str, after: str
    ) -> Event | None:
        """Bisection on the kind at ``sample`` moved along the set ``name``."""
        h0, h1 = self.h[k], self.h[k + 1]
        p0 = on_set(self.family(self.values(h0)), name, sample)
        p1 = on_set(self.family(self.values(h1)), name, sample)
        side = self._side(k, p0, k + 1, p1, before)
        if side is None:
            return None
        best = {"point": sample}

        def same(h: float) -> bool:
            landscape = self.family(self.values(h))
            point = on_set(landscape, name, sample)
            if point is None:
                return False
            best["point"] = point
            return side(landscape, point)

        h = bisect(same, h0, h1)
        return Event("change", h, best["point"], set=name, before=before, after=after)


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
