"""Interval evaluation of SymPy expressions: arb balls (python-flint) or mpmath's ``iv``.

:func:`interval_function` turns expressions into a Python function of intervals whose result
encloses every value the expressions take on the argument box (outward rounding throughout):
the basis of the certificate in :mod:`gradflow._critical.certify`.  Constants are enclosed exactly
(a rational ``1/3`` becomes a ball around it, not the double nearest it), so nothing is lost to
the float conversion of the expression.

Two arithmetics implement :class:`Arithmetic`: ``"arb"`` (python-flint's ball arithmetic, the
default: C code, about 25 times faster on the double well, see ``docs/certify.md``) and
``"mpmath"`` (``mpmath.iv``, pure Python).  A function without an interval form here (a
``Piecewise``, a special function) is refused with a :class:`~gradflow.GradflowError`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import sympy as sp

from .._errors import GradflowError

__all__ = [
    "ARITHMETICS",
    "Arithmetic",
    "arithmetic",
    "complex_enclosure",
    "decide",
    "interval_function",
]


@dataclass(frozen=True, eq=False)
class Arithmetic:
    """One interval arithmetic.

    Attributes:
        name: ``"arb"`` or ``"mpmath"``.
        description: what it is, for reports.
        interval: ``interval(lo, hi)``: the interval ``[lo, hi]`` of two floats.
        bounds: ``bounds(x)``: floats ``(lo, hi)`` enclosing ``x``, rounded outward;
            ``(-inf, inf)`` where ``x`` is not finite (an undefined value, a division by an
            interval holding 0).
        number: ``number(value)``: the exact float, or the rational ``(p, q)``, or the named
            constant ``"pi"``/``"E"``, enclosed.
        functions: the interval form of each SymPy function, by its SymPy name.
        endpoints: ``endpoints(x)``: the two ends of ``x`` as exact degenerate intervals.
        hull: ``hull(a, b)``: the smallest interval holding both.
    """

    name: str
    description: str
    interval: Callable[[float, float], Any]
    bounds: Callable[[Any], tuple[float, float]]
    number: Callable[[Any], Any]
    functions: dict[str, Callable[..., Any]]
    endpoints: Callable[[Any], tuple[Any, Any]]
    hull: Callable[[Any, Any], Any]


def _outward(lo: float, hi: float) -> tuple[float, float]:
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        return -math.inf, math.inf
    return math.nextafter(lo, -math.inf), math.nextafter(hi, math.inf)


def _arb() -> Arithmetic:
    from flint import arb

    def interval(lo: float, hi: float) -> Any:
        return arb(lo).union(arb(hi))

    def bounds(x: Any) -> tuple[float, float]:
        if isinstance(x, int):
            return float(x), float(x)
        if not x.is_finite():
            return -math.inf, math.inf
        return _outward(float(x.lower()), float(x.upper()))

    def number(value: Any) -> Any:
        if isinstance(value, tuple):
            return arb(value[0]) / value[1]
        if value == "pi":
            return arb.pi()
        if value == "E":
            return arb(1).exp()
        return arb(value)

    def power(x: Any, n: int) -> Any:
        """``x**n`` by squaring (arb's ``**`` answers NaN on a ball around 0)."""
        result, base, k = arb(1), x, n
        while k:
            if k & 1:
                result = result * base
            base, k = base * base, k >> 1
        return result if n % 2 else result.nonnegative_part()

    def monotone(f: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """A monotone function on the two endpoints of a ball (tight, where arb's own
        enclosure of a wide ball is not)."""

        def at(x: Any) -> Any:
            if x.rad() == 0 or not x.is_finite():
                return f(x)
            return f(x.lower()).union(f(x.upper()))

        return at

    def step(u: Any) -> Any:
        return (u.sgn() + 1) / 2

    def delta(u: Any) -> Any:
        return arb(0) if u > 0 or u < 0 else arb.nan()

    functions = {
        "pow": power,
        "exp": monotone(lambda x: x.exp()),
        "log": monotone(lambda x: x.log()),
        "sqrt": monotone(lambda x: x.sqrt()),
        "Abs": lambda x: abs(x).nonnegative_part(),
        "sign": lambda x: x.sgn(),
        "Heaviside": step,
        "DiracDelta": delta,
        "Max": lambda a, b: a.max(b),
        "Min": lambda a, b: a.min(b),
        "sin": lambda x: x.sin(),
        "cos": lambda x: x.cos(),
        "tan": lambda x: x.tan(),
        "atan": monotone(lambda x: x.atan()),
        "sinh": monotone(lambda x: x.sinh()),
        "cosh": lambda x: x.cosh(),
        "tanh": monotone(lambda x: x.tanh()),
        "asinh": monotone(lambda x: x.asinh()),
        "erf": monotone(lambda x: x.erf()),
        "Sigmoid": monotone(lambda x: 1 / (1 + (-x).exp())),
        "LogSigmoid": monotone(lambda x: -((-x).exp().log1p())),
        "Softplus": monotone(lambda x: x.exp().log1p()),
        "LogAddExp": lambda a, b: (a.exp() + b.exp()).log(),
    }
    return Arithmetic(
        "arb",
        "arb balls (python-flint), 53 bits",
        interval,
        bounds,
        number,
        functions,
        lambda x: (x.lower(), x.upper()),
        lambda a, b: a.union(b),
    )


def _mpmath() -> Arithmetic:
    import mpmath
    from mpmath import iv

    iv.prec = 53

    def interval(lo: float, hi: float) -> Any:
        return iv.mpf([lo, hi])

    def bounds(x: Any) -> tuple[float, float]:
        if isinstance(x, int):
            return float(x), float(x)
        return _outward(float(x.a), float(x.b))

    def number(value: Any) -> Any:
        if isinstance(value, tuple):
            return iv.mpf(value[0]) / value[1]
        if value == "pi":
            return iv.pi
        if value == "E":
            return iv.e
        return iv.mpf(value)

    def power(x: Any, n: int) -> Any:
        return x**n

    def monotone(f: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """An increasing function on the endpoints, at 20 more bits and then widened."""

        def at(x: Any) -> Any:
            with mpmath.workprec(73):
                lo, hi = f(x.a), f(x.b)
            return iv.mpf([lo, hi]) + iv.mpf([-1, 1]) * (abs(lo) + abs(hi)) * 2.0**-60

        return at

    def sgn(u: Any) -> Any:
        if u.a > 0:
            return iv.mpf(1)
        if u.b < 0:
            return iv.mpf(-1)
        return iv.mpf([-1 if u.a < 0 else 0, 1 if u.b > 0 else 0])

    def delta(u: Any) -> Any:
        return iv.mpf(0) if u.a > 0 or u.b < 0 else iv.mpf([-math.inf, math.inf])

    def log(x: Any) -> Any:
        return iv.log(x) if x.a > 0 else iv.mpf([-math.inf, math.inf])

    def sqrt(x: Any) -> Any:
        return iv.sqrt(x) if x.a >= 0 else iv.mpf([-math.inf, math.inf])

    sigmoid = monotone(lambda t: 1 / (1 + mpmath.exp(-t)))
    functions = {
        "pow": power,
        "exp": iv.exp,
        "log": log,
        "sqrt": sqrt,
        "Abs": abs,
        "sign": sgn,
        "Heaviside": lambda u: (sgn(u) + 1) / 2,
        "DiracDelta": delta,
        "Max": lambda a, b: iv.mpf([max(a.a, b.a), max(a.b, b.b)]),
        "Min": lambda a, b: iv.mpf([min(a.a, b.a), min(a.b, b.b)]),
        "sin": iv.sin,
        "cos": iv.cos,
        "tan": iv.tan,
        "atan": monotone(mpmath.atan),
        "sinh": monotone(mpmath.sinh),
        "cosh": lambda x: monotone(mpmath.cosh)(abs(x)),
        "tanh": monotone(mpmath.tanh),
        "asinh": monotone(mpmath.asinh),
        "erf": monotone(mpmath.erf),
        "Sigmoid": sigmoid,
        "LogSigmoid": monotone(lambda t: -mpmath.log1p(mpmath.exp(-t))),
        "Softplus": monotone(lambda t: mpmath.log1p(mpmath.exp(t))),
        "LogAddExp": lambda a, b: log(iv.exp(a) + iv.exp(b)),
    }
    return Arithmetic(
        "mpmath",
        "mpmath.iv intervals, 53 bits",
        interval,
        bounds,
        number,
        functions,
        lambda x: (iv.mpf(x.a), iv.mpf(x.b)),
        lambda a, b: iv.mpf([min(a.a, b.a), max(a.b, b.b)]),
    )


ARITHMETICS: dict[str, Callable[[], Arithmetic]] = {"arb": _arb, "mpmath": _mpmath}
"""The interval arithmetics by name."""


def arithmetic(name: str) -> Arithmetic:
    """The interval arithmetic ``name`` (``"arb"`` or ``"mpmath"``).

    Raises:
        GradflowError: an unknown name.
    """
    if name not in ARITHMETICS:
        raise GradflowError(f"interval arithmetic {name!r}: choose one of {', '.join(ARITHMETICS)}")
    return ARITHMETICS[name]()


class _Code:
    """Python source of expressions over intervals, with their constants enclosed once."""

    def __init__(self, arith: Arithmetic, names: dict[sp.Symbol, str]) -> None:
        self.arith = arith
        self.names = dict(names)
        self.constants: list[Any] = []
        self.seen: dict[sp.Basic, str] = {}

    def constant(self, expr: sp.Basic, value: Any) -> str:
        if expr not in self.seen:
            self.constants.append(self.arith.number(value))
            self.seen[expr] = f"K[{len(self.constants) - 1}]"
        return self.seen[expr]

    def __call__(self, expr: sp.Basic) -> str:
        if expr in self.names:
            return self.names[expr]
        if expr.is_Rational:
            return self.constant(expr, (int(expr.p), int(expr.q)))
        if expr.is_Float:
            return self.constant(expr, float(expr))
        if expr in (sp.pi, sp.E):
            return self.constant(expr, str(expr))
        if expr.is_Add:
            return "(" + " + ".join(self(a) for a in expr.args) + ")"
        if expr.is_Mul:
            return "(" + " * ".join(self(a) for a in expr.args) + ")"
        if expr.is_Pow:
            return self.power(*expr.args)
        if isinstance(expr, sp.Function) and type(expr).__name__ in self.arith.functions:
            args = ", ".join(self(a) for a in expr.args)
            return f"F[{type(expr).__name__!r}]({args})"
        raise GradflowError(f"certify: no interval form of {sp.sstr(expr)[:60]!r}")

    def power(self, base: sp.Expr, exponent: sp.Expr) -> str:
        b = self(base)
        if exponent.is_Integer:
            n = int(exponent)
            raised = f"F['pow']({b}, {abs(n)})"
            return raised if n >= 0 else f"(1 / {raised})"
        if exponent == sp.S.Half:
            return f"F['sqrt']({b})"
        if exponent == -sp.S.Half:
            return f"(1 / F['sqrt']({b}))"
        return f"F['exp']({self(exponent)} * F['log']({b}))"


def interval_function(
    exprs: Sequence[sp.Expr],
    symbols: Sequence[sp.Symbol],
    arith: Arithmetic,
    variables: Sequence[sp.Symbol] | None = None,
) -> Callable[..., list[Any]]:
    """``f(*intervals) -> [interval, …]``: enclosures of ``exprs`` over a box of ``symbols``.

    Common subexpressions are evaluated once (``sympy.cse``).  Given ``variables`` (the other
    symbols are constants, such as hyperparameters), a subexpression that depends on them
    only through one other subexpression ``u`` is a function ``φ(u)`` of one variable; where
    the enclosure of ``φ'`` over ``u`` excludes 0, ``φ`` is monotone there and its enclosure is
    ``φ`` at the two endpoints of ``u`` — which undoes the overestimation of a sum such as
    ``-c/2 - asinh(k e^{-c/2})`` whose terms cancel (the dependency problem).

    Raises:
        GradflowError: an expression with a function that has no interval form.
    """
    replacements, reduced = sp.cse(list(exprs), optimizations=None)
    names = {s: f"a{i}" for i, s in enumerate(symbols)}
    constants = [s for s in symbols if variables is not None and s not in variables]
    univariate = {} if variables is None else _univariate(replacements, reduced, set(variables))
    code = _Code(arith, names)
    lines = [f"def f({', '.join(names.values())}):"]
    scope: dict[str, Any] = {"K": code.constants, "F": arith.functions, "M": _monotone(arith)}
    for k, (sym, sub) in enumerate(replacements):
        lines.append(f"    t{k} = {code(sub)}")
        if sym in univariate:
            u, phi = univariate[sym]
            scope[f"P{k}"] = interval_function([phi], [u, *constants], arith)
            scope[f"D{k}"] = interval_function([sp.diff(phi, u)], [u, *constants], arith)
            args = ", ".join([code.names[u], *(names[c] for c in constants)])
            lines.append(f"    t{k} = M(t{k}, P{k}, D{k}, {args})")
        code.names[sym] = f"t{k}"
    lines.append(f"    return [{', '.join(code(e) for e in reduced)}]")
    exec("\n".join(lines), scope)  # noqa: S102 - source generated above from SymPy trees
    return scope["f"]


def _univariate(
    replacements: Sequence[tuple[sp.Symbol, sp.Expr]],
    reduced: Sequence[sp.Expr],
    variables: set[sp.Symbol],
) -> dict[sp.Symbol, tuple[sp.Symbol, sp.Expr]]:
    """The subexpressions ``t = φ(u)`` of one other subexpression ``u`` that some subexpression
    of several arguments (or a result) uses: ``{t: (u, φ)}`` with ``φ`` written in ``u``.

    A subexpression is its own base where it uses a variable or mixes two bases; otherwise it
    has the base of what it uses (none for a constant), and is a function of that base alone."""
    definitions = dict(replacements)
    base: dict[sp.Symbol, set[sp.Symbol]] = {}
    for sym, sub in replacements:
        deps = sub.free_symbols
        inner = set().union(*(base[d] for d in deps if d in base))
        base[sym] = inner if len(inner) <= 1 and not deps & variables else {sym}
    single = {s for s, b in base.items() if len(b) == 1 and s not in b}
    inlined = {s for s, b in base.items() if s not in b}
    used_outside = set().union(*(e.free_symbols for e in reduced), set())
    for sym, sub in replacements:
        if sym not in single:
            used_outside |= sub.free_symbols

    @functools.cache
    def inline(sym: sp.Symbol) -> sp.Expr:
        sub = definitions[sym]
        return sub.xreplace({d: inline(d) for d in sub.free_symbols if d in inlined})

    return {s: (next(iter(base[s])), inline(s)) for s in single if s in used_outside}


def _monotone(arith: Arithmetic) -> Callable[..., Any]:
    """``M(natural, φ, φ', u, *constants)``: an enclosure of ``φ(u)`` for ``φ`` of one variable.

    Where ``φ'(u)`` excludes 0, ``φ`` on the two endpoints of ``u``.  Otherwise ``u`` is covered
    by at most :data:`CELLS` cells of a dyadic grid (width a power of two), ``φ`` is enclosed on
    each the same way (or naturally), and the hull is kept where it is narrower than the
    natural enclosure.  Cells are remembered, so neighbouring boxes of a branch and bound share
    them."""
    cache: dict[tuple, Any] = {}

    def endpoints_or_natural(phi: Callable, slope: Callable, u: Any, constants: tuple) -> Any:
        d_lo, d_hi = arith.bounds(slope(u, *constants)[0])
        if d_lo > 0 or d_hi < 0:
            a, b = arith.endpoints(u)
            return arith.hull(phi(a, *constants)[0], phi(b, *constants)[0])
        return phi(u, *constants)[0]

    def tighten(natural: Any, phi: Callable, slope: Callable, u: Any, *constants: Any) -> Any:
        lo, hi = arith.bounds(u)
        if lo == hi or not (math.isfinite(lo) and math.isfinite(hi)):
            return natural
        d_lo, d_hi = arith.bounds(slope(u, *constants)[0])
        if d_lo > 0 or d_hi < 0:
            a, b = arith.endpoints(u)
            return arith.hull(phi(a, *constants)[0], phi(b, *constants)[0])
        width = 2.0 ** math.ceil(math.log2((hi - lo) / CELLS))
        first, last = math.floor(lo / width), math.ceil(hi / width)
        key = (phi, tuple(arith.bounds(c) for c in constants), width)
        hull = None
        for i in range(first, last):
            if (*key, i) not in cache:
                cell = arith.interval(i * width, (i + 1) * width)
                cache[(*key, i)] = endpoints_or_natural(phi, slope, cell, constants)
            value = cache[(*key, i)]
            hull = value if hull is None else arith.hull(hull, value)
        n_lo, n_hi = arith.bounds(natural)
        h_lo, h_hi = arith.bounds(hull)
        return hull if h_hi - h_lo < n_hi - n_lo else natural

    return tighten


CELLS = 16
"""At most this many cells of a dyadic grid cover the argument of a non-monotone function of
one variable (:func:`_monotone`)."""


def decide(
    condition: sp.Basic, symbols: Sequence[sp.Symbol], arith: Arithmetic
) -> Callable[..., bool | None]:
    """``d(*intervals)``: whether ``condition`` (a SymPy boolean of relations) holds on the whole
    box (``True``), nowhere on it (``False``), or neither is shown (``None``)."""
    if condition in (sp.true, True):
        return lambda *box: True
    if condition in (sp.false, False):
        return lambda *box: False
    if isinstance(condition, (sp.And, sp.Or, sp.Not)):
        parts = [decide(c, symbols, arith) for c in condition.args]
        kind = type(condition)

        def combined(*box: Any) -> bool | None:
            values = [p(*box) for p in parts]
            if kind is sp.Not:
                return None if values[0] is None else not values[0]
            if kind is sp.And:
                return False if False in values else (True if all(values) else None)
            return True if True in values else (False if all(v is False for v in values) else None)

        return combined
    if not isinstance(condition, sp.core.relational.Relational):
        return lambda *box: None
    gap = interval_function([condition.lhs - condition.rhs], symbols, arith)
    op = condition.rel_op

    def relation(*box: Any) -> bool | None:
        lo, hi = arith.bounds(gap(*box)[0])
        above = {">": lo > 0, ">=": lo >= 0, "<": hi < 0, "<=": hi <= 0}
        below = {">": hi <= 0, ">=": hi < 0, "<": lo >= 0, "<=": lo > 0}
        if op in above:
            return True if above[op] else (False if below[op] else None)
        equal = lo == hi == 0
        apart = lo > 0 or hi < 0
        if op == "==":
            return True if equal else (False if apart else None)
        return True if apart else (False if equal else None)

    return relation


COMPLEX_FUNCTIONS = {"exp": "exp", "log": "log", "sin": "sin", "cos": "cos", "atan": "atan"}
"""SymPy functions (by name) that :func:`complex_enclosure` evaluates, and their acb methods."""


def complex_enclosure(expr: sp.Expr, prec: int = 128) -> Any | None:
    """A complex ball (python-flint's ``acb``) holding the exact value of the constant ``expr``,
    or ``None`` for an expression it cannot evaluate (a symbol, an unknown function).

    Numbers are enclosed exactly (a ``Float`` is the binary fraction it holds), powers are
    SymPy's principal powers (``(-8)**(1/3) = 1 + √3 i``) and the arithmetic is arb's ball
    arithmetic at ``prec`` bits: the real root ``2cos(2π/9)`` of ``x³ − 3x + 1`` that
    ``sympy.solve`` writes with ``I`` comes out as a ball a few ulps wide whose imaginary part
    holds 0 (not, by itself, a proof that it is 0: :func:`gradflow._symbolic.facts.real_point`).
    """
    from flint import ctx

    before = ctx.prec
    ctx.prec = prec
    try:
        return _acb(expr)
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    finally:
        ctx.prec = before


def _acb(expr: sp.Basic) -> Any:
    from flint import acb, fmpq

    if expr.is_Rational or expr.is_Float:
        exact = sp.Rational(expr)
        return acb(fmpq(int(exact.p), int(exact.q)))
    if expr is sp.I:
        return acb(0, 1)
    if expr is sp.pi:
        return acb.pi()
    if expr is sp.E:
        return acb(1).exp()
    if expr.is_Add:
        return sum((_acb(a) for a in expr.args), acb(0))
    if expr.is_Mul:
        product = acb(1)
        for a in expr.args:
            product = product * _acb(a)
        return product
    if expr.is_Pow:
        base, exponent = expr.args
        if exponent.is_Integer:
            return _acb(base) ** int(exponent)
        if exponent == sp.S.Half:
            return _acb(base).sqrt()
        return _acb(base) ** _acb(exponent)
    name = type(expr).__name__
    if isinstance(expr, sp.Function) and name in COMPLEX_FUNCTIONS and len(expr.args) == 1:
        return getattr(_acb(expr.args[0]), COMPLEX_FUNCTIONS[name])()
    raise TypeError(f"no complex ball for {sp.sstr(expr)[:60]!r}")
