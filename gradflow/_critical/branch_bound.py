"""The breadth-first branch and bound of :mod:`.certify` over one box: each piece cleared by the
gradient's enclosure, isolated by the Krawczyk operator (with ε-inflation around Newton's
limit), explained by a closed-form set, or cut in halves; and the box geometry it needs.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .certificate import Explanation, inside_any
from .interval_system import Graph, System

__all__ = ["Isolated", "Search"]

NEWTON_STEPS = 12
"""Newton steps from a box's midpoint before ε-inflation."""
INFLATE_START = 1e-9
"""First half-width of the inflated box, relative to the searched box's widest side."""
INFLATE_GROWTH = 4.0
"""Factor by which a certified box around a zero is grown while the Krawczyk test passes."""
NO_ZERO = np.array([[np.inf, -np.inf]])
"""What :meth:`Search.krawczyk` answers where the mean-value form excludes 0."""


@dataclass
class Isolated:
    point: np.ndarray
    enclosure: np.ndarray
    unique_in: np.ndarray
    morse_index: int | None


class Search:
    """The breadth-first branch and bound over one box."""

    def __init__(
        self,
        system: System,
        hyper: list[float],
        box: np.ndarray,
        max_boxes: int,
        min_width: float,
    ) -> None:
        self.system = system
        self.arith = system.arith
        self.hyper = [self.arith.number(float(h)) for h in hyper]
        self.hyper_values = [float(h) for h in hyper]
        self.box = box
        self.width = box[:, 1] - box[:, 0]
        self.max_boxes = max_boxes
        self.min_width = min_width
        self.graphs = [g for g in map(self.resolved, system.graphs) if g is not None]
        self.isolated: list[Isolated] = []
        self.explained: dict[int, list[np.ndarray]] = {}
        self.unresolved: list[np.ndarray] = []
        self.cleared = 0
        self.examined = 0

    def resolved(self, graph: Graph) -> Graph | None:
        """``graph`` as this search uses it: a point whose interval form is not finite here
        takes the bounds its exact value is proven to have (:mod:`.interval_system`); a point
        not proven real is not used."""
        if graph.free:
            return graph
        if graph.values is not None:
            bounds = self.bounds(graph.values(*self.hyper))
            if np.all(np.isfinite(bounds)):
                return graph
        exact = graph.exact(tuple(self.hyper_values)) if graph.exact is not None else None
        if exact is None:
            return None
        point = [self.arith.interval(lo, hi) for lo, hi in exact]
        return dataclasses.replace(graph, values=lambda *hyper: point)

    def intervals(self, box: np.ndarray) -> list[Any]:
        return [self.arith.interval(lo, hi) for lo, hi in box]

    def bounds(self, values: Sequence[Any]) -> np.ndarray:
        return np.array([self.arith.bounds(v) for v in values]).reshape(-1, 2)

    def gradient(self, box: np.ndarray) -> np.ndarray:
        return self.bounds(self.system.grad(*self.intervals(box), *self.hyper))

    def jacobian(self, box: np.ndarray) -> np.ndarray:
        n = self.system.dim
        return self.bounds(self.system.jac(*self.intervals(box), *self.hyper)).reshape(n, n, 2)

    def run(self) -> None:
        queue = deque([self.box])
        while queue:
            box = queue.popleft()
            if self.examined >= self.max_boxes:
                self.unresolved += [box, *queue]
                return
            self.examined += 1
            verdict = self.settle(box)
            if verdict == "cut":
                if np.all((box[:, 1] - box[:, 0]) < self.min_width * self.width):
                    self.unresolved.append(box)
                else:
                    queue.extend(halves(box, self.width))

    def settle(self, box: np.ndarray) -> str:
        """``cleared``, ``isolated``, ``explained`` or ``cut``."""
        if any(
            np.all((c.unique_in[:, 0] <= box[:, 0]) & (box[:, 1] <= c.unique_in[:, 1]))
            for c in self.isolated
        ):
            return "isolated"
        g = self.gradient(box)
        if np.any((g[:, 0] > 0) | (g[:, 1] < 0)):
            self.cleared += 1
            return "cleared"
        k = self.krawczyk(box)
        if k is not None and _disjoint(k, box):
            self.cleared += 1
            return "cleared"
        if k is not None and _strictly_inside(k, box):
            self.record(box)
            return "isolated"
        for i, graph in enumerate(self.graphs):
            if not self.explains(graph, box):
                continue
            if graph.free:
                self.explained.setdefault(i, []).append(box)
                return "explained"
            point = self.bounds(graph.values(*self.hyper))
            self.record(box, point.mean(axis=1), point)
            return "isolated"
        self.inflate(box)
        return "cut"

    def krawczyk(self, box: np.ndarray) -> np.ndarray | None:
        """``K(box)`` as bounds ``(dim, 2)``, or ``None`` where ``J`` is not finite/regular.

        The mean-value form ``G(m) + J(X)(X - m)`` is tried first: where it excludes 0, the
        answer is :data:`NO_ZERO` (a box disjoint from every box)."""
        n = self.system.dim
        j = self.system.jac(*self.intervals(box), *self.hyper)
        y = midpoint_inverse(self.bounds(j).reshape(n, n, 2))
        if y is None:
            return None
        m = box.mean(axis=1)
        a = self.arith
        g_mid = self.system.grad(*[a.interval(v, v) for v in m], *self.hyper)
        yy = [[a.number(float(y[i, k])) for k in range(n)] for i in range(n)]
        offset = [a.interval(lo, hi) - a.number(float(v)) for (lo, hi), v in zip(box, m)]
        centered = self.bounds(
            [g_mid[i] + sum((j[i * n + k] * offset[k] for k in range(n)), 0) for i in range(n)]
        )
        if np.any((centered[:, 0] > 0) | (centered[:, 1] < 0)):
            return NO_ZERO
        out = []
        for i in range(n):
            value = a.number(float(m[i])) - sum((yy[i][k] * g_mid[k] for k in range(n)), 0)
            for col in range(n):
                yj = sum((yy[i][k] * j[k * n + col] for k in range(n)), 0)
                value = value + ((1 if i == col else 0) - yj) * offset[col]
            out.append(value)
        k = self.bounds(out)
        return k if np.all(np.isfinite(k)) else None

    def explains(self, graph: Graph, box: np.ndarray) -> bool:
        """Whether every zero of ``∇L`` in ``box`` lies on the graph (module docstring, 3)."""
        a = self.arith
        free = [a.interval(*box[i]) for i in graph.free]
        g = self.bounds(graph.values(*free, *self.hyper))
        dep = box[graph.dependent]
        if not np.all(np.isfinite(g)) or np.any((g[:, 1] < dep[:, 0]) | (g[:, 0] > dep[:, 1])):
            return False
        on_graph = box.copy()
        on_graph[graph.dependent] = g
        theta = [*self.intervals(on_graph), *self.hyper]
        if not graph.identically_critical and not any(c(*theta) is True for c in graph.conditions):
            return False
        grad_on = self.bounds(self.system.grad(*theta))
        if np.any((grad_on[:, 0] > 0) | (grad_on[:, 1] < 0)):
            return False
        return self.unique_along(graph, box, g) or self.factored(graph, box)

    def unique_along(self, graph: Graph, box: np.ndarray, g: np.ndarray) -> bool:
        """Test (a): ``‖I - C J_DD‖∞ < 1`` over ``X_F × hull(X_D, g(X_F))``."""
        wide = box.copy()
        d = graph.dependent
        wide[d, 0] = np.minimum(box[d, 0], g[:, 0])
        wide[d, 1] = np.maximum(box[d, 1], g[:, 1])
        block = self.jacobian(wide)[np.ix_(d, d)]
        c = midpoint_inverse(block)
        if c is None:
            return False
        lo = np.einsum("ik,kj->ij", np.maximum(c, 0), block[..., 0]) + np.einsum(
            "ik,kj->ij", np.minimum(c, 0), block[..., 1]
        )
        hi = np.einsum("ik,kj->ij", np.maximum(c, 0), block[..., 1]) + np.einsum(
            "ik,kj->ij", np.minimum(c, 0), block[..., 0]
        )
        eye = np.eye(len(d))
        residual = np.maximum(np.abs(eye - lo), np.abs(eye - hi))
        rounding = 1e-12 * (np.abs(c) @ np.abs(block).max(axis=2))
        return bool(np.max(np.sum(residual + rounding, axis=1)) < 1)

    def factored(self, graph: Graph, box: np.ndarray) -> bool:
        """Test (b): each dependent coordinate forced by a factor whose quotient excludes 0."""
        theta = [*self.intervals(box), *self.hyper]
        forced = set()
        for d, quotient in graph.factors:
            if d in forced:
                continue
            lo, hi = self.arith.bounds(quotient(*theta)[0])
            if lo > 0 or hi < 0:
                forced.add(d)
        return forced == set(graph.dependent)

    def point_values(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``∇L`` and ``∇²L`` at a point, in floating point (for Newton's method)."""
        n = self.system.dim
        g = np.asarray(self.system.float_grad(*z, *self.hyper_values), dtype=float)
        h = np.asarray(self.system.float_jac(*z, *self.hyper_values), dtype=float)
        return g.reshape(n), h.reshape(n, n)

    def inflate(self, box: np.ndarray) -> None:
        """Newton from the midpoint, then a Krawczyk-certified box around its limit, grown by
        :data:`INFLATE_GROWTH` while the test passes and it meets no other certified box."""
        z = box.mean(axis=1)
        width = box[:, 1] - box[:, 0]
        last = np.inf
        with np.errstate(all="ignore"):
            for _ in range(NEWTON_STEPS):
                g, h = self.point_values(z)
                if not (np.all(np.isfinite(g)) and np.all(np.isfinite(h))):
                    return
                try:
                    step = np.linalg.solve(h, g)
                except np.linalg.LinAlgError:
                    return
                z = z - step
                size = float(np.max(np.abs(step) / width))
                if size > 2 * last or np.any(np.abs(z - box.mean(axis=1)) > width):
                    return
                last = size
                if np.max(np.abs(step)) <= 1e-15 * (1 + np.max(np.abs(z))):
                    break
            else:
                return
        inside = np.all((z >= self.box[:, 0]) & (z <= self.box[:, 1]))
        if not inside or any(_contains(c.unique_in, z) for c in self.isolated):
            return
        radius = INFLATE_START * float(self.width.max()) * (1 + float(np.abs(z).max()))
        best = None
        while radius <= float(self.width.max()):
            candidate = np.stack([z - radius, z + radius], axis=1)
            if any(not _disjoint(candidate, c.unique_in) for c in self.isolated):
                break
            k = self.krawczyk(candidate)
            if k is None or not _strictly_inside(k, candidate):
                break
            best = candidate
            radius *= INFLATE_GROWTH
        if best is not None:
            self.record(best, z)

    def record(
        self, box: np.ndarray, z: np.ndarray | None = None, tight: np.ndarray | None = None
    ) -> None:
        """Add the unique zero of ``box`` (unless a certified box already holds it).

        Without ``tight``, its enclosure is ``box`` narrowed by Krawczyk steps
        ``X ← K(X) ∩ X`` (every zero in ``X`` lies in ``K(X)``)."""
        if tight is None:
            tight = box
            for _ in range(30):
                k = self.krawczyk(tight)
                if k is None or _disjoint(k, tight):
                    break
                narrower = np.stack(
                    [np.maximum(k[:, 0], tight[:, 0]), np.minimum(k[:, 1], tight[:, 1])], axis=1
                )
                if np.array_equal(narrower, tight):
                    break
                tight = narrower
        point = tight.mean(axis=1) if z is None else np.clip(z, tight[:, 0], tight[:, 1])
        if any(_contains(c.unique_in, point) for c in self.isolated):
            return
        self.isolated.append(Isolated(point, tight, box, self.morse_index(tight)))

    def morse_index(self, tight: np.ndarray) -> int | None:
        """Negative eigenvalues of every symmetric matrix in the interval Hessian on ``tight``,
        if their signs are proven (Weyl: ``|λᵢ(A) - λᵢ(M)| ≤ ‖A - M‖_F``)."""
        hess = self.jacobian(tight)
        if not np.all(np.isfinite(hess)):
            return None
        mid = hess.mean(axis=2)
        mid = (mid + mid.T) / 2
        spread = float(np.linalg.norm(hess[..., 1] - hess[..., 0])) / 2
        eig = np.linalg.eigvalsh(mid)
        margin = spread + 1e-13 * float(np.abs(eig).max(initial=0.0))
        if np.any(np.abs(eig) <= margin):
            return None
        return int(np.sum(eig < 0))

    def explanations(self) -> tuple[Explanation, ...]:
        """The explained boxes by set name (the two branches ``e = ±…`` of Γ* are one set),
        with the closed-form points they hold."""
        by_name: dict[str, tuple[str, list[np.ndarray]]] = {}
        for i, boxes in sorted(self.explained.items()):
            graph = self.graphs[i]
            name = " / ".join(dict.fromkeys(graph.names))
            by_name.setdefault(name, (graph.equation, []))[1].extend(boxes)
        out = []
        for name, (equation, boxes) in by_name.items():
            stacked = np.array(boxes)
            held = []
            for graph in (g for g in self.graphs if not g.free):
                point = self.bounds(graph.values(*self.hyper)).mean(axis=1)
                theta = [*self.intervals(np.stack([point, point], 1)), *self.hyper]
                if not np.any(inside_any(point[None], stacked)):
                    continue
                for point_name, condition in zip(graph.names, graph.conditions):
                    if condition(*theta) is not False:
                        held.append(point_name)
            out.append(Explanation(name, equation, stacked, tuple(held)))
        return tuple(out)


def midpoint_inverse(matrix: np.ndarray) -> np.ndarray | None:
    """The inverse of the midpoint of an interval matrix (bounds, shape ``(k, k, 2)``), or
    ``None`` where it is not finite or its condition number exceeds 10¹²."""
    if not np.all(np.isfinite(matrix)):
        return None
    mid = matrix.mean(axis=2)
    return None if np.linalg.cond(mid) > 1e12 else np.linalg.inv(mid)


def halves(box: np.ndarray, width: np.ndarray) -> list[np.ndarray]:
    """``box`` cut in two across its widest side relative to ``width``."""
    axis = int(np.argmax((box[:, 1] - box[:, 0]) / width))
    cut = 0.5 * (box[axis, 0] + box[axis, 1])
    low, high = box.copy(), box.copy()
    low[axis, 1] = cut
    high[axis, 0] = cut
    return [low, high]


def _disjoint(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.any((a[:, 1] < b[:, 0]) | (a[:, 0] > b[:, 1])))


def _strictly_inside(inner: np.ndarray, outer: np.ndarray) -> bool:
    return inner.shape == outer.shape and bool(
        np.all((inner[:, 0] > outer[:, 0]) & (inner[:, 1] < outer[:, 1]))
    )


def _contains(box: np.ndarray, point: np.ndarray) -> bool:
    return bool(np.all((box[:, 0] <= point) & (point <= box[:, 1])))
