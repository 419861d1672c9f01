"""A proof that a box holds no critical points beyond those reported: branch and bound.

The box is cut in halves, breadth first, and each piece ``X`` is settled by interval arithmetic
on the SymPy gradient ``G = ∇L`` and its Jacobian ``J = ∇²L`` (:mod:`gradflow._interval`):

1. **cleared**: some component of the enclosure ``G(X)`` excludes 0, so ``∇L ≠ 0`` on ``X``;
2. **isolated**: the Krawczyk operator ``K(X) = m - Y G(m) + (I - Y J(X))(X - m)``
   (``m`` the midpoint, ``Y ≈ J(m)⁻¹``) lies inside ``X``: ``X`` holds exactly one zero of
   ``∇L``, inside ``K(X)``; if ``K(X)`` misses ``X``, there is none (Krawczyk 1969; Moore,
   Kearfott & Cloud, *Introduction to Interval Analysis*, SIAM 2009, §8.4).  A zero on a cut
   between two pieces is caught by ε-inflation: Newton's method from the midpoint, then the
   Krawczyk test on a box around its limit, grown while the test passes;
3. **explained**: a closed-form critical set ``θ_D = g(θ_F)`` (a graph over its free
   parameters ``F``) meets ``X``, its points are critical across ``X`` (the set's condition
   holds on all of ``X`` in interval arithmetic, or ``∇L`` vanishes identically on the graph),
   and every zero of ``∇L`` in ``X`` is shown to lie on it, by either test:

   a. *uniqueness along D*: with ``D'`` the hull of ``X_D`` and ``g(X_F)``, the block
      ``J_DD`` over ``X_F × D'`` satisfies ``‖I - C J_DD‖∞ < 1`` (``C`` the inverse of its
      midpoint), so for each ``f`` the map ``d ↦ G_D(f, d)`` has at most one zero in ``D'``,
      and ``g(f)`` is one;
   b. *a factor*: some component ``G_j = (θ_d - g_d)^k Q`` in SymPy with ``Q(X)`` excluding 0,
      so ``G_j = 0`` forces ``θ_d = g_d`` (for each dependent ``d``).  This settles degenerate
      points on a set, such as the canonical model's saddle on ``e = 0``, where ``J`` vanishes;
4. otherwise ``X`` is cut along its widest side (relative to the box), until the budget of
   boxes is spent or a side is below ``min_width`` of the box: what is left is **unresolved**.

The certificate is complete only when nothing is unresolved.  Two trust assumptions remain,
both explicit: a declared closed-form set is critical where its condition holds (the engine
checks it at sample points), and the floating-point hyperparameters are the exact ones.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp

from ._budget import OutOfTime, within
from ._classify import classify_points
from ._errors import GradflowError
from ._interval import Arithmetic, arithmetic, decide, interval_function
from ._landscape import Landscape
from ._lowering import lambdify_numpy
from ._model import BoundModel, ReducedModel, _solved_specs
from ._symbolic import real_point
from ._text import format_point

__all__ = ["MAX_BOXES", "MIN_WIDTH", "CertifiedPoint", "Certificate", "Explanation", "certify"]

MAX_BOXES = 40_000
"""Default budget: boxes examined before the rest is reported unresolved."""
MIN_WIDTH = 1e-7
"""Default: a box whose every side is below this fraction of the searched box is not cut."""
NEWTON_STEPS = 12
"""Newton steps from a box's midpoint before ε-inflation."""
INFLATE_START = 1e-9
"""First half-width of the inflated box, relative to the searched box's widest side."""
INFLATE_GROWTH = 4.0
"""Factor by which a certified box around a zero is grown while the Krawczyk test passes."""
POINT_TOL = 1e-6
"""A reported critical point within this distance (relative to ``max(1, |θ|)``) of a certified
enclosure, an explained or an unresolved box is accounted for."""
NO_ZERO = np.array([[np.inf, -np.inf]])
"""What :meth:`_Search.krawczyk` answers where the mean-value form excludes 0."""
SHOWN_BOXES = 1000
"""At most this many unresolved boxes (the largest) are listed in a report."""


@dataclass(frozen=True)
class CertifiedPoint:
    """A critical point proven to be the only zero of ``∇L`` in a box.

    Attributes:
        point: Newton's approximation, shape ``(dim,)``.
        enclosure: a box holding the zero, shape ``(dim, 2)`` (tight: a few ulps wide).
        unique_in: the largest box found in which it is the only zero, shape ``(dim, 2)``.
        loss: ``L`` at ``point``.
        kind: its classification (:func:`gradflow.classify_points`).
        morse_index: the number of negative Hessian eigenvalues, proven on ``enclosure`` by the
            interval Hessian and Weyl's inequality; ``None`` where not proven.
    """

    point: np.ndarray
    enclosure: np.ndarray
    unique_in: np.ndarray
    loss: float
    kind: str
    morse_index: int | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the fields above, arrays as lists."""
        return {
            "point": self.point.tolist(),
            "enclosure": self.enclosure.tolist(),
            "unique_in": self.unique_in.tolist(),
            "loss": self.loss,
            "kind": self.kind,
            "morse_index": self.morse_index,
        }


@dataclass(frozen=True)
class Explanation:
    """The boxes whose zeros all lie on one closed-form critical set.

    Attributes:
        name: the set's name(s) (pieces sharing one graph, e.g. the two halves of ``e = 0``).
        equation: the graph's equation.
        boxes: shape ``(n, dim, 2)``.
        points: the closed-form critical points (pieces of dimension 0) inside these boxes.
    """

    name: str
    equation: str
    boxes: np.ndarray
    points: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the equation, the count, volume and hull of the boxes, the points."""
        return {
            "equation": self.equation,
            "count": len(self.boxes),
            "volume": _volume(self.boxes),
            "hull": _hull(self.boxes),
            "points": list(self.points),
        }


@dataclass(frozen=True)
class Certificate:
    """What the branch and bound proved about the zeros of ``∇L`` in a box.

    Attributes:
        box: the searched box, shape ``(dim, 2)``.
        param_names: the parameter order.
        isolated: the certified isolated critical points.
        explained: the closed-form sets that account for the zeros of their boxes.
        unresolved: the boxes left when the budget ran out, shape ``(n, dim, 2)``.
        cleared: the number of boxes proven free of critical points.
        examined: the number of boxes examined.
        method: the arithmetic and the tests used.
        seconds: wall-clock time of the proof.
    """

    box: np.ndarray
    param_names: tuple[str, ...]
    isolated: tuple[CertifiedPoint, ...]
    explained: tuple[Explanation, ...]
    unresolved: np.ndarray
    cleared: int
    examined: int
    method: str
    seconds: float

    @property
    def complete(self) -> bool:
        """Whether every critical point in the box is certified or explained."""
        return len(self.unresolved) == 0

    def accounts_for(self, points: np.ndarray) -> np.ndarray:
        """Which ``points`` (shape ``(n, dim)``) lie in a certified point's ``unique_in`` box,
        an explained box or an unresolved box (within :data:`POINT_TOL`); a critical point
        that does not contradicts the certificate."""
        boxes = [c.unique_in[None] for c in self.isolated]
        boxes += [e.boxes for e in self.explained] + [self.unresolved]
        stacked = np.concatenate([b.reshape(-1, self.box.shape[0], 2) for b in boxes])
        return _inside_any(points, stacked)

    def holds(self, point: CertifiedPoint, points: np.ndarray) -> bool:
        """Whether all ``points`` (``(n, dim)``, ``n ≥ 1``) lie in the certified point's
        ``unique_in`` box (within :data:`POINT_TOL`): they approximate that one zero."""
        return len(points) > 0 and bool(np.all(_inside_any(points, point.unique_in[None])))

    def missing(self, points: np.ndarray) -> tuple[CertifiedPoint, ...]:
        """The certified points whose ``unique_in`` box holds none of ``points`` (``(n, dim)``)."""
        return tuple(c for c in self.isolated if not np.any(_inside_any(points, c.unique_in[None])))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``complete``, ``isolated``, ``explained`` (by set), ``unresolved``
        (count, volume, share of the box, hull and the largest boxes), ``method``, ``seconds``."""
        largest = self.unresolved[np.argsort(-_volumes(self.unresolved))][:SHOWN_BOXES]
        return {
            "complete": self.complete,
            "isolated": [c.to_dict() for c in self.isolated],
            "explained": {e.name: e.to_dict() for e in self.explained},
            "unresolved": {
                "count": len(self.unresolved),
                "volume": _volume(self.unresolved),
                "share": _volume(self.unresolved) / _volume(self.box[None]),
                "hull": _hull(self.unresolved),
                "boxes": largest.tolist(),
            },
            "cleared": self.cleared,
            "examined": self.examined,
            "method": self.method,
            "seconds": self.seconds,
        }

    def text(self) -> str:
        """A few lines for the command line: the verdict first."""
        names = ", ".join(self.param_names)
        if self.complete:
            verdict = "complete: proven (no other critical point in the box)"
        else:
            share = _volume(self.unresolved) / _volume(self.box[None])
            hull = " × ".join(f"[{lo:.6g}, {hi:.6g}]" for lo, hi in _hull(self.unresolved))
            verdict = (
                f"NOT complete: {len(self.unresolved)} unresolved boxes, volume "
                f"{_volume(self.unresolved):.3g} ({share:.3g} of the box), within {hull}"
            )
        lines = [
            f"certificate ({self.method}; {self.examined} boxes, {self.seconds:.2f} s): {verdict}"
        ]
        for c in self.isolated:
            width = float(np.max(c.enclosure[:, 1] - c.enclosure[:, 0]))
            index = "unproven" if c.morse_index is None else str(c.morse_index)
            lines.append(
                f"  isolated {c.kind} at ({names}) = {format_point(c.point, 10)} "
                f"(enclosure width {width:.1e}, Morse index {index}), L = {c.loss:.6g}"
            )
        for e in self.explained:
            on = f"; holds {', '.join(e.points)}" if e.points else ""
            named = e.name if e.equation in e.name else f"{e.name} ({e.equation})"
            lines.append(f"  explained by {named}: {len(e.boxes)} boxes{on}")
        return "\n".join(lines)


def certify(
    landscape: Landscape,
    box: np.ndarray,
    *,
    max_boxes: int = MAX_BOXES,
    min_width: float = MIN_WIDTH,
    interval: str = "arb",
) -> Certificate:
    """Prove where the critical points of ``L`` in ``box`` are (see the module docstring).

    Args:
        landscape: a loss known in SymPy (a reduced model, or a loss written as text).
        box: shape ``(dim, 2)``, ``lo < hi`` on every parameter.
        max_boxes: boxes examined before the rest is reported unresolved (≥ 1).
        min_width: a box narrower than this fraction of ``box`` on every side is not cut
            (in ``(0, 1)``).
        interval: the interval arithmetic, ``"arb"`` (python-flint) or ``"mpmath"``.

    Returns:
        The certificate; its isolated points are classified.

    Raises:
        GradflowError: a landscape without a SymPy loss, a pinned parameter (a slice), a
            budget or width out of range, a function without an interval form, a SymPy setup
            (differentiating, factoring) that runs out of the symbolic time budget.
    """
    if not isinstance(landscape, BoundModel):
        raise GradflowError(
            f"certify needs a loss known in SymPy (a model or --loss); {landscape.name} is not"
        )
    if np.any(box[:, 0] >= box[:, 1]):
        raise GradflowError("certify works on the whole parameter space, not on a slice")
    if max_boxes < 1:
        raise GradflowError(f"max_boxes = {max_boxes} must be at least 1")
    if not 0 < min_width < 1:
        raise GradflowError(f"min_width = {min_width!r} must be in (0, 1)")
    start = time.perf_counter()
    try:
        system = within("the certificate's SymPy setup", _system, landscape.model, interval)
    except OutOfTime as out:
        raise GradflowError(f"certify: {out}") from None
    hyper = [landscape.values[s.name] for s in landscape.model.hyperparams]
    search = _Search(system, hyper, np.asarray(box, dtype=float), max_boxes, min_width)
    search.run()
    points = np.array([c.point for c in search.isolated]).reshape(-1, landscape.dim)
    classes = classify_points(landscape, points, landscape.global_min_loss)
    losses = landscape.loss(points) if len(points) else np.zeros(0)
    isolated = tuple(
        CertifiedPoint(
            c.point,
            c.enclosure,
            c.unique_in,
            float(loss),
            _proven_kind(str(kind), c.morse_index, landscape.dim),
            c.morse_index,
        )
        for c, kind, loss in zip(search.isolated, classes.kinds, losses)
    )
    return Certificate(
        box=np.asarray(box, dtype=float),
        param_names=landscape.param_names,
        isolated=tuple(sorted(isolated, key=lambda c: tuple(c.point))),
        explained=search.explanations(),
        unresolved=np.array(search.unresolved).reshape(-1, landscape.dim, 2),
        cleared=search.cleared,
        examined=search.examined,
        method=f"{system.arith.description}; gradient exclusion, Krawczyk, closed-form sets",
        seconds=time.perf_counter() - start,
    )


@dataclass
class _Graph:
    """Closed-form pieces sharing one graph ``θ_D = g(θ_F)``, in interval form.

    ``values`` is ``None`` where ``g`` has no real interval form (``sympy.solve`` writes the
    real roots of a cubic with ``I``); a point (no free parameter) then has ``exact``, which
    gives its proven real bounds at the hyperparameters' values (or ``None``)."""

    names: list[str]
    equation: str
    free: list[int]
    dependent: list[int]
    values: Callable[..., list[Any]] | None
    conditions: list[Callable[..., bool | None]]
    identically_critical: bool
    factor_source: Callable[[], list[tuple[int, Callable[..., list[Any]]]]]
    exact: Callable[[tuple[float, ...]], np.ndarray | None] | None = None
    found_factors: list[tuple[int, Callable[..., list[Any]]]] | None = None

    @property
    def factors(self) -> list[tuple[int, Callable[..., list[Any]]]]:
        """``(d, Q)`` of test (b), worked out in SymPy on first use (none where that runs out
        of the symbolic time budget)."""
        if self.found_factors is None:
            try:
                self.found_factors = within("the factors of ∇L", self.factor_source)
            except OutOfTime:
                self.found_factors = []
        return self.found_factors


@dataclass
class _System:
    """The interval gradient, Jacobian and closed-form graphs of a model."""

    arith: Arithmetic
    dim: int
    grad: Callable[..., list[Any]]
    jac: Callable[..., list[Any]]
    float_grad: Callable[..., Any]
    float_jac: Callable[..., Any]
    graphs: list[_Graph]


def _clean(expr: sp.Expr, params: Sequence[sp.Symbol]) -> sp.Expr:
    """``x·sign(x) → |x|`` and ``x·δ(x) → 0`` in every product: the derivatives of ``x|x|``
    without a spurious step or Dirac term (equal as functions, and as distributions)."""

    def product(term: sp.Mul) -> sp.Expr:
        args = list(term.args)
        for s in params:
            if s in args and sp.DiracDelta(s) in args:
                return sp.S.Zero
            if s in args and sp.sign(s) in args:
                args.remove(s)
                args.remove(sp.sign(s))
                args.append(sp.Abs(s))
        return sp.Mul(*args)

    return expr.replace(lambda t: t.is_Mul and t.has(sp.sign, sp.DiracDelta), product)


@functools.cache
def _system(model: ReducedModel, interval: str) -> _System:
    """Interval functions of ``∇L``, ``∇²L`` and the closed-form sets, once per model."""
    arith = arithmetic(interval)
    params, hyper = list(model.params), list(model.hyperparams)
    symbols = [*params, *hyper]
    grad = [sp.factor_terms(_clean(sp.diff(model.loss, s), params)) for s in params]
    jac = [sp.factor_terms(_clean(sp.diff(g, s), params)) for g in grad for s in params]
    graphs: dict[tuple, _Graph] = {}
    for spec in (*model.critical_sets, *_solved_specs(model)):
        solution = {s: sp.sympify(v) for s, v in spec.solution.items()}
        condition = decide(spec.condition, symbols, arith)
        dependent = [i for i, s in enumerate(params) if s in solution]
        equation = spec.equation or ", ".join(f"{s} = {v}" for s, v in solution.items())
        name = f"sympy.solve: {equation}" if spec.name == "sympy.solve" else spec.name
        key = tuple((str(s), sp.srepr(v)) for s, v in sorted(solution.items(), key=str))
        if key in graphs:
            graphs[key].names.append(name)
            graphs[key].conditions.append(condition)
            continue
        free = [i for i in range(len(params)) if i not in dependent]
        exprs = [solution[params[i]] for i in dependent]
        try:
            values = interval_function(exprs, [params[i] for i in free] + hyper, arith)
        except GradflowError:
            values = None
        written = tuple((params[i], solution[params[i]]) for i in dependent)
        exact = None if free else functools.partial(_exact_point, model, written)
        if values is None and exact is None:
            continue  # a graph with free parameters and no real interval form: not used
        graphs[key] = _Graph(
            names=[name],
            equation=equation,
            free=free,
            dependent=dependent,
            values=values,
            conditions=[condition],
            identically_critical=values is not None and all(g.subs(solution) == 0 for g in grad),
            factor_source=functools.partial(_factors, grad, params, solution, symbols, arith)
            if values is not None
            else list,
            exact=exact,
        )
    return _System(
        arith=arith,
        dim=len(params),
        grad=interval_function(grad, symbols, arith, params),
        jac=interval_function(jac, symbols, arith, params),
        float_grad=lambdify_numpy(symbols, grad),
        float_jac=lambdify_numpy(symbols, jac),
        graphs=list(graphs.values()),
    )


def _exact_point(
    model: ReducedModel, written: tuple[tuple[sp.Symbol, sp.Expr], ...], hyper: tuple[float, ...]
) -> np.ndarray | None:
    """Bounds ``(dim, 2)`` on the closed-form point ``written`` at the hyperparameter values
    ``hyper``, proven real (:func:`gradflow._symbolic.real_point`), or ``None``."""
    pairs = tuple(zip(model.hyperparams, hyper))
    return real_point(model.params, model.loss, written, pairs)


def _factors(
    grad: Sequence[sp.Expr],
    params: Sequence[sp.Symbol],
    solution: dict[sp.Symbol, sp.Expr],
    symbols: Sequence[sp.Symbol],
    arith: Arithmetic,
) -> list[tuple[int, Callable[..., list[Any]]]]:
    """``(d, Q)`` where a gradient component is ``(θ_d - g_d)^k Q`` (``k ≥ 1``, the common
    factor ``sympy.factor_terms`` pulls out): ``Q`` excluding 0 forces ``θ_d = g_d``."""
    out = []
    for d, s in enumerate(params):
        if s in solution:
            out += [(d, q) for q in _quotients(tuple(grad), s, solution[s], tuple(symbols), arith)]
    return out


@functools.cache
def _quotients(
    grad: tuple[sp.Expr, ...],
    s: sp.Symbol,
    value: sp.Expr,
    symbols: tuple[sp.Symbol, ...],
    arith: Arithmetic,
) -> list[Callable[..., list[Any]]]:
    """The interval quotients ``Q`` of the gradient components with a factor ``(s - value)^k``."""
    t = sp.Dummy("t")
    out = []
    for g in grad:
        shifted = g.subs(s, value + t)
        if shifted.subs(t, 0) != 0:
            continue
        factored = sp.factor_terms(shifted)
        power = [a for a in sp.Mul.make_args(factored) if a.as_base_exp()[0] == t]
        if not power or not power[0].as_base_exp()[1].is_positive:
            continue
        quotient = (factored / power[0]).subs(t, s - value)
        out.append(interval_function([quotient], symbols, arith))
    return out


@dataclass
class _Isolated:
    point: np.ndarray
    enclosure: np.ndarray
    unique_in: np.ndarray
    morse_index: int | None


class _Search:
    """The breadth-first branch and bound over one box."""

    def __init__(
        self,
        system: _System,
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
        self.isolated: list[_Isolated] = []
        self.explained: dict[int, list[np.ndarray]] = {}
        self.unresolved: list[np.ndarray] = []
        self.cleared = 0
        self.examined = 0

    def resolved(self, graph: _Graph) -> _Graph | None:
        """``graph`` as this search uses it: a point whose interval form is not finite here
        takes the bounds its exact value is proven to have (:func:`_exact_point`); a point
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
                    queue.extend(_halves(box, self.width))

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
        y = _midpoint_inverse(self.bounds(j).reshape(n, n, 2))
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

    def explains(self, graph: _Graph, box: np.ndarray) -> bool:
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

    def unique_along(self, graph: _Graph, box: np.ndarray, g: np.ndarray) -> bool:
        """Test (a): ``‖I - C J_DD‖∞ < 1`` over ``X_F × hull(X_D, g(X_F))``."""
        wide = box.copy()
        d = graph.dependent
        wide[d, 0] = np.minimum(box[d, 0], g[:, 0])
        wide[d, 1] = np.maximum(box[d, 1], g[:, 1])
        block = self.jacobian(wide)[np.ix_(d, d)]
        c = _midpoint_inverse(block)
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

    def factored(self, graph: _Graph, box: np.ndarray) -> bool:
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
        self.isolated.append(_Isolated(point, tight, box, self.morse_index(tight)))

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
                if not np.any(_inside_any(point[None], stacked)):
                    continue
                for point_name, condition in zip(graph.names, graph.conditions):
                    if condition(*theta) is not False:
                        held.append(point_name)
            out.append(Explanation(name, equation, stacked, tuple(held)))
        return tuple(out)


def _proven_kind(kind: str, morse_index: int | None, dim: int) -> str:
    """The kind, corrected by a proven Morse index: a point with a negative Hessian eigenvalue
    is no minimum, however close its loss is to the lower bound (``L = 6.25e-14`` at the
    saddle between two wells ``10⁻³`` apart); a positive-definite one is a minimum."""
    if morse_index is None:
        return kind
    if morse_index == 0:
        return kind if kind in ("global_min", "local_min") else "local_min"
    return "local_max" if morse_index == dim else "saddle"


def _midpoint_inverse(matrix: np.ndarray) -> np.ndarray | None:
    """The inverse of the midpoint of an interval matrix (bounds, shape ``(k, k, 2)``), or
    ``None`` where it is not finite or its condition number exceeds 10¹²."""
    if not np.all(np.isfinite(matrix)):
        return None
    mid = matrix.mean(axis=2)
    return None if np.linalg.cond(mid) > 1e12 else np.linalg.inv(mid)


def _halves(box: np.ndarray, width: np.ndarray) -> list[np.ndarray]:
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


def _inside_any(points: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Which points (``(n, dim)``) lie within :data:`POINT_TOL` of one of ``boxes``."""
    if not len(boxes) or not len(points):
        return np.zeros(len(points), dtype=bool)
    tol = POINT_TOL * np.maximum(1.0, np.abs(points).max(axis=1))[:, None, None]
    p = points[:, None, :]
    inside = (p >= boxes[None, :, :, 0] - tol) & (p <= boxes[None, :, :, 1] + tol)
    return np.any(np.all(inside, axis=2), axis=1)


def _volumes(boxes: np.ndarray) -> np.ndarray:
    return np.prod(boxes[..., 1] - boxes[..., 0], axis=-1) if len(boxes) else np.zeros(0)


def _volume(boxes: np.ndarray) -> float:
    return float(np.sum(_volumes(boxes)))


def _hull(boxes: np.ndarray) -> list[list[float]] | None:
    if not len(boxes):
        return None
    return np.stack([boxes[..., 0].min(axis=0), boxes[..., 1].max(axis=0)], axis=1).tolist()
