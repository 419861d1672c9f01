"""The interval form of a model's critical-point equations, once per model: ``∇L`` and ``∇²L``
cleaned of spurious sign and Dirac terms, and each closed-form critical set as a graph
``θ_D = g(θ_F)`` with its conditions and the factors of ``∇L`` that force a point onto it
(the systems :mod:`.branch_bound` works on).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp

from .._errors import GradflowError
from .._symbolic.budget import OutOfTime, budgeted_cache, within
from .._symbolic.closed_forms import solved_specs
from .._symbolic.facts import real_point
from .._symbolic.interval import Arithmetic, arithmetic, decide, interval_function
from .._symbolic.lowering import lambdify_numpy
from .._symbolic.model import BoundModel, ReducedModel

__all__ = ["Graph", "System", "bound_system", "interval_system"]


@dataclass
class Graph:
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
class System:
    """The interval gradient, Jacobian and closed-form graphs of a model."""

    arith: Arithmetic
    dim: int
    grad: Callable[..., list[Any]]
    jac: Callable[..., list[Any]]
    float_grad: Callable[..., Any]
    float_jac: Callable[..., Any]
    graphs: list[Graph]


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


def bound_system(
    landscape: BoundModel, interval: str = "arb", seconds: float | None = None
) -> tuple[System, list[float]]:
    """:func:`interval_system` of ``landscape``'s model, built within ``seconds`` of CPU time
    (default the symbolic budget, :func:`gradflow._symbolic.budget.within`), and the
    hyperparameters' values in the model's order: what every interval proof at the landscape's
    hyperparameters starts from.

    Raises:
        OutOfTime: the interval form took longer.
        GradflowError: a loss with no interval form.
    """
    model = landscape.model
    system = within("the interval form of ∇L", interval_system, model, interval, seconds=seconds)
    return system, [float(landscape.values[s.name]) for s in model.hyperparams]


@budgeted_cache
def interval_system(model: ReducedModel, interval: str) -> System:
    """Interval functions of ``∇L``, ``∇²L`` and the closed-form sets, once per model."""
    arith = arithmetic(interval)
    params, hyper = list(model.params), list(model.hyperparams)
    symbols = [*params, *hyper]
    grad = [sp.factor_terms(_clean(sp.diff(model.loss, s), params)) for s in params]
    jac = _hessian(grad, params)
    graphs: dict[tuple, Graph] = {}
    for spec in (*model.critical_sets, *solved_specs(model)):
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
        graphs[key] = Graph(
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
    return System(
        arith=arith,
        dim=len(params),
        grad=interval_function(grad, symbols, arith, params),
        jac=interval_function(jac, symbols, arith, params),
        float_grad=lambdify_numpy(symbols, grad),
        float_jac=lambdify_numpy(symbols, jac),
        graphs=list(graphs.values()),
    )


def _hessian(grad: Sequence[sp.Expr], params: Sequence[sp.Symbol]) -> list[sp.Expr]:
    """``∇²L`` row by row (``dim²`` entries) from the cleaned ``∇L``: each entry above the
    diagonal worked out once and used for its mirror below it too (``∂²L/∂θ_i∂θ_j`` is
    symmetric; the forms differ, the functions do not), which halves the symbolic work off
    the diagonal."""
    n = len(params)
    upper = {
        (i, j): sp.factor_terms(_clean(sp.diff(grad[i], params[j]), params))
        for i in range(n)
        for j in range(i, n)
    }
    return [upper[min(i, j), max(i, j)] for i in range(n) for j in range(n)]


def _exact_point(
    model: ReducedModel, written: tuple[tuple[sp.Symbol, sp.Expr], ...], hyper: tuple[float, ...]
) -> np.ndarray | None:
    """Bounds ``(dim, 2)`` on the closed-form point ``written`` at the hyperparameter values
    ``hyper``, proven real (:func:`gradflow._symbolic.facts.real_point`), or ``None``."""
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
