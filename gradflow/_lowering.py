"""SymPy building blocks for reduced losses and their translation to JAX and NumPy.

The losses of the reduced models are cross-entropies of logistic or softmax outputs.  Written
naively, ``log(1 + exp(x))`` overflows for large logits and its gradient becomes NaN.  This module
provides

- SymPy functions whose derivatives are known symbolically and which are printed as the
  numerically stable primitives: :class:`Sigmoid`, :class:`LogSigmoid`, :class:`Softplus`,
  :class:`LogAddExp`;
- :func:`stabilize`, which rewrites the unstable forms of these functions (``log(1 + exp(u))``,
  ``exp(u)/(1 + exp(u))``, …) into them, before the loss is differentiated;
- :func:`lambdify_jax` and :func:`lambdify_numpy`, which translate an expression built from the
  functions of :data:`LOWERED_FUNCTIONS` (and ``+``, ``·``, powers, ``Piecewise``) and raise
  :class:`GradflowError` naming anything else.

Powers are SymPy's principal powers: ``x**(1/3)`` and ``sqrt(x)`` are NaN for ``x < 0``, where
their principal value is not real; the real odd root is ``sympy.real_root(x, 3)``
(``sign(x)·|x|^{1/3}``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from types import ModuleType

import jax
import jax.numpy as jnp
import jax.scipy.special as jax_special
import numpy as np
import scipy.special as scipy_special
import sympy as sp
from sympy.core.logic import fuzzy_and
from sympy.functions.elementary.piecewise import ExprCondPair
from sympy.logic.boolalg import BooleanAtom
from sympy.printing.numpy import JaxPrinter, NumPyPrinter

from ._errors import GradflowError

__all__ = [
    "LOWERED_FUNCTIONS",
    "LogAddExp",
    "LogSigmoid",
    "Sigmoid",
    "Softplus",
    "binary_cross_entropy",
    "lambdify_jax",
    "lambdify_numpy",
    "stabilize",
]


class Sigmoid(sp.Function):
    """The logistic function ``σ(x) = 1 / (1 + e^{-x})``; printed as ``jax.nn.sigmoid``."""

    nargs = 1

    def fdiff(self, argindex: int = 1) -> sp.Expr:
        x = self.args[0]
        return Sigmoid(x) * Sigmoid(-x)

    def _eval_rewrite_as_exp(self, x: sp.Expr, **kwargs: object) -> sp.Expr:
        return 1 / (1 + sp.exp(-x))

    def _eval_evalf(self, prec: int) -> sp.Expr:
        return self.rewrite(sp.exp)._eval_evalf(prec)

    def _eval_is_real(self) -> bool | None:
        return self.args[0].is_real


class LogSigmoid(sp.Function):
    """``log σ(x) = -softplus(-x)``; printed as ``jax.nn.log_sigmoid`` (stable for any ``x``)."""

    nargs = 1

    def fdiff(self, argindex: int = 1) -> sp.Expr:
        return Sigmoid(-self.args[0])

    def _eval_rewrite_as_exp(self, x: sp.Expr, **kwargs: object) -> sp.Expr:
        return -sp.log(1 + sp.exp(-x))

    def _eval_evalf(self, prec: int) -> sp.Expr:
        return self.rewrite(sp.exp)._eval_evalf(prec)

    def _eval_is_real(self) -> bool | None:
        return self.args[0].is_real


class Softplus(sp.Function):
    """``softplus(x) = log(1 + e^x)``, derivative ``σ(x)``; printed as ``jax.nn.softplus``
    (``x + log(1 + e^{-x})`` for large ``x``: no overflow)."""

    nargs = 1

    def fdiff(self, argindex: int = 1) -> sp.Expr:
        return Sigmoid(self.args[0])

    def _eval_rewrite_as_exp(self, x: sp.Expr, **kwargs: object) -> sp.Expr:
        return sp.log(1 + sp.exp(x))

    def _eval_evalf(self, prec: int) -> sp.Expr:
        return self.rewrite(sp.exp)._eval_evalf(prec)

    def _eval_is_real(self) -> bool | None:
        return self.args[0].is_real


class LogAddExp(sp.Function):
    """``logaddexp(a, b) = log(e^a + e^b)``, ``∂/∂a = σ(a - b)``; printed as ``jnp.logaddexp``
    (``max(a, b) + log(1 + e^{-|a - b|})``: no overflow)."""

    nargs = 2

    def fdiff(self, argindex: int = 1) -> sp.Expr:
        a, b = self.args if argindex == 1 else self.args[::-1]
        return Sigmoid(a - b)

    def _eval_rewrite_as_exp(self, a: sp.Expr, b: sp.Expr, **kwargs: object) -> sp.Expr:
        return sp.log(sp.exp(a) + sp.exp(b))

    def _eval_evalf(self, prec: int) -> sp.Expr:
        return self.rewrite(sp.exp)._eval_evalf(prec)

    def _eval_is_real(self) -> bool | None:
        return fuzzy_and(arg.is_real for arg in self.args)


def binary_cross_entropy(y: sp.Expr, logit: sp.Expr) -> sp.Expr:
    """Expected cross-entropy ``ℓ_y(f) = -y ln σ(f) - (1 - y) ln σ(-f)`` in nats.

    ``y`` is the probability that the target is 1 and ``f`` the logit of the prediction.  At
    ``σ(f) = y`` the value is the binary entropy ``h(y)``.
    """
    return -y * LogSigmoid(logit) - (1 - y) * LogSigmoid(-logit)


# --- stabilize: unstable forms → the functions above ---------------------------------------------


def stabilize(expr: sp.Expr) -> sp.Expr:
    """Rewrite the numerically unstable forms in ``expr`` into equal, stable functions.

    Bottom-up, wherever they occur (terms and factors in any order, ``u`` any expression):

    - ``log(1 + e^u)`` → ``Softplus(u)``; ``log(e^a + e^b + …)`` → ``LogAddExp(a, b, …)`` (folded
      pairwise); positive constant factors of the terms become summands of the exponents
      (``log(2 + e^u)`` → ``LogAddExp(log 2, u)``);
    - ``e^a / (e^a + e^c)`` → ``Sigmoid(a - c)`` and ``1 / (1 + e^u)`` → ``Sigmoid(-u)`` (so
      ``e^u/(1 + e^u)``, ``e^u/(e^u + 1)`` and ``1/(1 + e^{-u})`` all become ``Sigmoid(u)``);
      with more terms in the denominator, ``e^{a - LogAddExp(a, c, …)}``;
    - ``log σ(u)`` → ``LogSigmoid(u)``, ``log(1 - σ(u))`` → ``LogSigmoid(-u)``;
    - the log of a product or power of such factors (and of ``e^u`` and of factors SymPy proves
      positive) → the sum of their logs: ``log(e^u / (1 + e^v)^2)`` → ``u - 2 Softplus(v)``.

    - a square root ``√b`` (or a power ``b^{k/2}``) of a sum that is a ratio ``N/D`` whose
      numerator factors with a square, ``√(N/D)`` → ``|s|·√(N/s²)/√D``: the cancellation in
      ``1 - (p/q)²`` near ``p/q = ±1`` is done in algebra, ``1 - x²/(x² + y²)`` →
      ``y²/(x² + y²)`` and ``√(…)`` → ``|y|/√(x² + y²)``; then ``acos(u)`` →
      ``atan2(√(1 - u²), u)`` and ``asin(u)`` → ``atan2(u, √(1 - u²))`` where that root
      simplifies so (the angle between two vectors, ``acos(a·b/(‖a‖‖b‖))``, whose derivative
      is infinite at ``u = ±1`` while a loss built from it may be smooth there).

    The parameters of a loss are real, so the rewrites are identities.  Applied to a loss before
    it is differentiated, they make the symbolic gradient stable too (``d softplus(u)/du = σ(u)``,
    ``d|y|/dy = sign(y)``, which is right at ``y = 0`` wherever the loss is differentiable
    there, the loss being even in ``y`` near it: ``sign(0) = 0``).

    Args:
        expr: a SymPy expression.

    Returns:
        An expression equal to ``expr``; unchanged where no form matches.  ``stabilize`` is
        idempotent.
    """
    return _stabilize(sp.sympify(expr), {})


def _stabilize(expr: sp.Basic, done: dict[sp.Basic, sp.Basic]) -> sp.Basic:
    """:func:`stabilize` with a memo of the subexpressions already rewritten.

    A factor ``1/(…)`` of a product is rewritten together with its numerator (with the product),
    not on its own first.
    """
    if expr.is_Atom or not expr.args:
        return expr
    if expr not in done:
        args = tuple(
            arg.func(*(_stabilize(a, done) for a in arg.args))
            if expr.is_Mul and arg.is_Pow
            else _stabilize(arg, done)
            for arg in expr.args
        )
        node = expr.func(*args) if args != expr.args else expr
        done[expr] = _rewrite(node)
    return done[expr]


def _rewrite(node: sp.Basic) -> sp.Basic:
    """One node with stable children, rewritten where it is an unstable log, ratio, root or
    inverse cosine or sine."""
    if isinstance(node, sp.log):
        stable = _stable_log(node.args[0])
        return node if stable is None else stable
    if isinstance(node, (sp.acos, sp.asin)):
        (u,) = node.args
        root = _stable_root(1 - u**2)
        if root is None:
            return node
        return sp.atan2(root, u) if isinstance(node, sp.acos) else sp.atan2(u, root)
    if node.is_Pow and node.exp.is_Rational and node.exp.q == 2:
        root = _stable_root(node.base)
        if root is not None:
            return root ** (2 * node.exp)
    if isinstance(node, (sp.Mul, sp.Pow)):
        while (ratio := _stable_ratio(node)) is not None:
            node = ratio
    return node


def _stable_root(base: sp.Expr) -> sp.Expr | None:
    """``√base`` with the cancellation in ``base`` done in algebra, or ``None``: ``base`` a sum
    that is a ratio ``N/D`` of expressions in the parameters whose factored numerator yields a
    factor out of the root (``√(y²) = |y|`` for real ``y``), ``√base = √N/√D``.  A sum that is
    no ratio, or whose numerator has no square factor, keeps its root (nothing cancels, or
    nothing would be gained)."""
    if not base.is_Add:
        return None
    numerator, denominator = sp.fraction(sp.together(base))
    if not denominator.free_symbols:
        return None
    root = sp.sqrt(sp.factor(numerator))
    pulled = [
        f
        for f in sp.Mul.make_args(root)
        if f.free_symbols and not (f.is_Pow and f.exp == sp.Rational(1, 2))
    ]
    return root / sp.sqrt(sp.factor(denominator)) if pulled else None


def _exponent(term: sp.Expr) -> sp.Expr | None:
    """``a`` with ``term = e^a`` (``c·e^b`` with ``c > 0`` gives ``b + log c``), or ``None``."""
    coeff, rest = term.as_coeff_Mul()
    if not coeff.is_positive:
        return None
    exponent = sp.log(coeff)
    for factor in sp.Mul.make_args(rest):
        if isinstance(factor, sp.exp):
            exponent += factor.args[0]
        elif factor.is_positive:
            exponent += sp.log(factor)
        else:
            return None
    return exponent


def _exponents(total: sp.Expr) -> list[sp.Expr] | None:
    """The exponents ``a_i`` with ``total = Σ e^{a_i}``, or ``None`` if ``total`` is not such a
    sum with an exponential in it."""
    if not total.has(sp.exp):
        return None
    exponents = [_exponent(term) for term in sp.Add.make_args(total)]
    return None if any(a is None for a in exponents) else exponents


def _log_sum_exp(exponents: Sequence[sp.Expr]) -> sp.Expr:
    """``log Σ e^{a_i}`` as ``Softplus`` / nested ``LogAddExp`` (a zero exponent first)."""
    first, *rest = sorted(exponents, key=lambda a: a != 0)
    for a in rest:
        first = Softplus(a) if first == 0 else LogAddExp(first, a)
    return first


def _stable_log(arg: sp.Expr) -> sp.Expr | None:
    """``log(arg)`` as the sum of the logs of its factors, or ``None`` unless every factor has a
    stable log and one of them needed rewriting (an exponential or a sigmoid)."""
    logs = [_factor_log(factor) for factor in sp.Mul.make_args(arg)]
    if any(log is None for log in logs) or all(isinstance(log, sp.log) for log in logs):
        return None
    return sp.Add(*logs)


def _factor_log(factor: sp.Expr) -> sp.Expr | None:
    """The stable log of one factor ``base**power``, or ``None`` if it has none."""
    if isinstance(factor, sp.exp):
        return factor.args[0]
    base, power = factor.as_base_exp()
    exponents = _exponents(base)
    if exponents is not None:
        return power * _log_sum_exp(exponents)
    if isinstance(base, Sigmoid):
        return power * LogSigmoid(base.args[0])
    if isinstance(1 - base, Sigmoid):
        return power * LogSigmoid(-(1 - base).args[0])
    return sp.log(factor) if factor.is_positive else None


def _stable_ratio(node: sp.Expr) -> sp.Expr | None:
    """``node`` with one factor ``1 / Σ_i e^{a_i}`` and its numerator ``e^{a_j}`` (or 1, where
    some ``a_j = 0``) replaced by ``σ(a_j - a_k)`` for two terms, ``e^{a_j - logΣ_i e^{a_i}}``
    for more; ``None`` if it has no such factor."""
    factors = sp.Mul.make_args(node)
    exps = [f for f in factors if isinstance(f, sp.exp)]
    numerators = [(sp.Add(*(f.args[0] for f in exps)), exps)] if exps else []
    for factor in factors:
        exponents = _exponents(factor.base) if factor.is_Pow and factor.exp == -1 else None
        if exponents is None:
            continue
        rest = [f for f in factors if f is not factor]
        for b, used in [*numerators, (sp.S.Zero, [])]:
            for j, a in enumerate(exponents):
                if sp.expand(b - a) != 0:
                    continue
                others = exponents[:j] + exponents[j + 1 :]
                if len(others) == 1:
                    stable = Sigmoid(a - others[0])
                else:
                    stable = sp.exp(a - _log_sum_exp(exponents))
                return sp.Mul(*(f for f in rest if f not in used)) * stable
    return None


# --- lowering: the supported functions, checked, printed by name -------------------------------

_LOWERINGS: dict[type[sp.Basic], Callable[[ModuleType, ModuleType], Callable[..., object]]] = {
    sp.exp: lambda xp, special: xp.exp,
    sp.log: lambda xp, special: xp.log,
    sp.sin: lambda xp, special: xp.sin,
    sp.cos: lambda xp, special: xp.cos,
    sp.tan: lambda xp, special: xp.tan,
    sp.cot: lambda xp, special: lambda x: 1 / xp.tan(x),
    sp.sec: lambda xp, special: lambda x: 1 / xp.cos(x),
    sp.csc: lambda xp, special: lambda x: 1 / xp.sin(x),
    sp.asin: lambda xp, special: xp.arcsin,
    sp.acos: lambda xp, special: xp.arccos,
    sp.atan: lambda xp, special: xp.arctan,
    sp.acot: lambda xp, special: lambda x: xp.arctan(1 / x),
    sp.asec: lambda xp, special: lambda x: xp.arccos(1 / x),
    sp.acsc: lambda xp, special: lambda x: xp.arcsin(1 / x),
    sp.atan2: lambda xp, special: xp.arctan2,
    sp.sinh: lambda xp, special: xp.sinh,
    sp.cosh: lambda xp, special: xp.cosh,
    sp.tanh: lambda xp, special: xp.tanh,
    sp.coth: lambda xp, special: lambda x: 1 / xp.tanh(x),
    sp.sech: lambda xp, special: lambda x: 1 / xp.cosh(x),
    sp.csch: lambda xp, special: lambda x: 1 / xp.sinh(x),
    sp.asinh: lambda xp, special: xp.arcsinh,
    sp.acosh: lambda xp, special: xp.arccosh,
    sp.atanh: lambda xp, special: xp.arctanh,
    sp.acoth: lambda xp, special: lambda x: xp.arctanh(1 / x),
    sp.asech: lambda xp, special: lambda x: xp.arccosh(1 / x),
    sp.acsch: lambda xp, special: lambda x: xp.arcsinh(1 / x),
    sp.erf: lambda xp, special: special.erf,
    sp.erfc: lambda xp, special: special.erfc,
    sp.erfinv: lambda xp, special: special.erfinv,
    sp.gamma: lambda xp, special: special.gamma,
    sp.loggamma: lambda xp, special: special.gammaln,
    sp.polygamma: lambda xp, special: special.polygamma,
    sp.Abs: lambda xp, special: lambda x: x * xp.sign(x),
    sp.sign: lambda xp, special: xp.sign,
    sp.Max: lambda xp, special: lambda *args: functools.reduce(xp.maximum, args),
    sp.Min: lambda xp, special: lambda *args: functools.reduce(xp.minimum, args),
    sp.Heaviside: lambda xp, special: xp.heaviside,
    sp.DiracDelta: lambda xp, special: lambda x, order=0: xp.zeros_like(x),
    Sigmoid: lambda xp, special: special.expit,
    LogSigmoid: lambda xp, special: lambda x: -xp.logaddexp(0.0, -x),
    Softplus: lambda xp, special: lambda x: xp.logaddexp(0.0, x),
    LogAddExp: lambda xp, special: xp.logaddexp,
}
"""How each supported SymPy function is computed, given the array module and its special
functions (``jax.numpy``/``jax.scipy.special`` or ``numpy``/``scipy.special``).

Notes: ``Abs`` is ``x·sign(x)``, so that JAX differentiates it as SymPy does, ``sign(0) = 0``
(``jnp.abs`` has slope 1 at 0); ``loggamma`` is ``log|Γ(x)|`` (SymPy's value for ``x > 0``, its
real part for ``x < 0``, where ``d/dx = digamma`` holds too); ``digamma(x)`` is
``polygamma(0, x)`` in SymPy; ``DiracDelta`` (from differentiating ``sign`` or ``Heaviside``) is
0, its value away from the origin; ``Heaviside(0)`` is SymPy's ``H0`` (½ by default).  In JAX the
last four get derivative rules in terms of ``σ`` (:func:`_sigmoid`)."""

LOWERED_FUNCTIONS: tuple[str, ...] = tuple(
    sorted([cls.__name__ for cls in _LOWERINGS] + ["Piecewise"], key=str.lower)
)
"""The names of the SymPy functions a loss may use, besides ``+``, ``·`` and powers."""

_PREFIX = "_lowered_"
"""Prefix of the printed names of the lowered functions (never a symbol's name)."""

_STRUCTURE = (
    *(sp.Atom, sp.Add, sp.Mul, sp.Pow, sp.Piecewise, ExprCondPair),
    *(BooleanAtom, sp.Rel, sp.And, sp.Or, sp.Not),
)
"""Expression nodes the printers handle themselves (conditions of a ``Piecewise`` included)."""


def _unsupported(expr: sp.Basic) -> str | None:
    """The name of the first function or construct in ``expr`` that cannot be lowered."""
    for node in sp.preorder_traversal(expr):
        if not isinstance(node, _STRUCTURE) and type(node) not in _LOWERINGS:
            return type(node).__name__
    return None


def _check(exprs: Sequence[sp.Basic], target: str) -> None:
    """Raise :class:`GradflowError` naming the first unsupported function in ``exprs``."""
    for expr in exprs:
        name = _unsupported(expr)
        if name is not None:
            raise GradflowError(
                f"cannot lower {name} to {target} (supported: {', '.join(LOWERED_FUNCTIONS)}, "
                "+, *, powers)"
            )


class _Gate(sp.Function):
    """``_Gate(taken, x)``: ``x`` inside the branch of a ``Piecewise`` selected by ``taken``.

    Its value is ``x``; its derivative is ``dx`` where the branch is taken and 0 elsewhere, so
    reverse-mode differentiation never multiplies the zero cotangent of a branch not taken by an
    infinite derivative inside it (the ``where`` NaN trap).  Printed as
    ``where(taken, x, stop_gradient(x))``; forward mode needs no gate (``select`` picks tangents).
    """

    nargs = 2


def _gate_branches(expr: sp.Expr) -> sp.Expr:
    """Every ``Piecewise`` in ``expr`` with each symbol of each branch wrapped in a
    :class:`_Gate` taken exactly where that branch is selected (first true condition)."""

    def gated(piecewise: sp.Piecewise) -> sp.Piecewise:
        pairs, before = [], []
        for branch, condition in piecewise.args:
            taken = sp.And(condition, *(sp.Not(c) for c in before))
            gates = {s: _Gate(taken, s) for s in branch.free_symbols}
            pairs.append((branch.xreplace(gates), condition))
            before.append(condition)
        return sp.Piecewise(*pairs, evaluate=False)

    return expr.replace(lambda e: isinstance(e, sp.Piecewise), gated)


def _print_by_name(printer: NumPyPrinter, expr: sp.Function) -> str:
    """A lowered function applied to its printed arguments, by its namespace name."""
    args = ", ".join(printer._print(arg) for arg in expr.args)
    return f"{_PREFIX}{type(expr).__name__}({args})"


class _Printing:
    """Printer mixin: every function of :data:`_LOWERINGS` (and :class:`_Gate`) by its name in
    the namespace; ``And``/``Or`` as broadcasting reductions (SymPy stacks their arguments into
    one array, which fails for a condition on a batched parameter and a scalar
    hyperparameter)."""

    def _print_And(self, expr: sp.And) -> str:
        return self._print_reduction("logical_and", expr)

    def _print_Or(self, expr: sp.Or) -> str:
        return self._print_reduction("logical_or", expr)

    def _print_reduction(self, op: str, expr: sp.Basic) -> str:
        reduce = self._module_format("functools.reduce")
        function = self._module_format(f"{self._module}.{op}")
        return f"{reduce}({function}, [{', '.join(self._print(arg) for arg in expr.args)}])"


for _cls in (*_LOWERINGS, _Gate):
    setattr(_Printing, f"_print_{_cls.__name__}", _print_by_name)


class _JaxPrinter(_Printing, JaxPrinter):
    """SymPy's JAX printer with the lowered functions printed by name."""


class _NumPyPrinter(_Printing, NumPyPrinter):
    """SymPy's NumPy printer with the lowered functions printed by name."""


def _namespace(xp: ModuleType, special: ModuleType) -> dict[str, Callable[..., object]]:
    """The lowered functions by their printed names, computed with ``xp`` and ``special``."""
    return {f"{_PREFIX}{cls.__name__}": make(xp, special) for cls, make in _LOWERINGS.items()}


@jax.custom_jvp
def _sigmoid(x: jax.Array) -> jax.Array:
    """``jax.nn.sigmoid`` with derivative ``σ(x)σ(-x)``: JAX's own rule ``σ(1 - σ)`` loses all
    digits of ``1 - σ(x)`` for large ``x`` (relative error 1e-3 at ``x = 30``)."""
    return jax.nn.sigmoid(x)


@_sigmoid.defjvp
def _sigmoid_jvp(primals: tuple[jax.Array], tangents: tuple[jax.Array]) -> tuple[jax.Array, ...]:
    (x,), (t,) = primals, tangents
    return _sigmoid(x), _sigmoid(x) * _sigmoid(-x) * t


@jax.custom_jvp
def _softplus(x: jax.Array) -> jax.Array:
    """``log(1 + e^x)``, derivative :func:`_sigmoid`."""
    return jnp.logaddexp(0.0, x)


@_softplus.defjvp
def _softplus_jvp(primals: tuple[jax.Array], tangents: tuple[jax.Array]) -> tuple[jax.Array, ...]:
    (x,), (t,) = primals, tangents
    return _softplus(x), _sigmoid(x) * t


@jax.custom_jvp
def _logaddexp(a: jax.Array, b: jax.Array) -> jax.Array:
    """``log(e^a + e^b)``, partial derivatives ``σ(a - b)``, ``σ(b - a)`` (:func:`_sigmoid`)."""
    return jnp.logaddexp(a, b)


@_logaddexp.defjvp
def _logaddexp_jvp(
    primals: tuple[jax.Array, jax.Array], tangents: tuple[jax.Array, jax.Array]
) -> tuple[jax.Array, ...]:
    (a, b), (ta, tb) = primals, tangents
    return _logaddexp(a, b), _sigmoid(a - b) * ta + _sigmoid(b - a) * tb


_JAX_NAMESPACE = {
    **_namespace(jnp, jax_special),
    f"{_PREFIX}Sigmoid": _sigmoid,
    f"{_PREFIX}LogSigmoid": lambda x: -_softplus(-x),
    f"{_PREFIX}Softplus": _softplus,
    f"{_PREFIX}LogAddExp": _logaddexp,
    f"{_PREFIX}{_Gate.__name__}": lambda taken, x: jnp.where(taken, x, jax.lax.stop_gradient(x)),
}
_NUMPY_NAMESPACE = _namespace(np, scipy_special)
_PRINTER_SETTINGS = {
    "fully_qualified_modules": False,
    "inline": True,
    "allow_unknown_functions": True,
    "user_functions": {},
}


def lambdify_jax(
    args: Sequence[sp.Symbol | Sequence[sp.Symbol]], expr: sp.Expr | Sequence[sp.Expr]
) -> Callable[..., jax.Array]:
    """Translate SymPy expression(s) into a JAX function of ``args``.

    Uses SymPy's JAX printer with ``cse=True``; the functions of :data:`LOWERED_FUNCTIONS` become
    ``jax.numpy``, ``jax.scipy.special`` and stable ``jax.nn`` primitives (with derivative rules in
    terms of ``σ``, accurate in the tails), so the result works under ``jit``, ``vmap``,
    ``jacfwd`` and ``grad``.  The branches of a ``Piecewise`` are gated
    (:class:`_Gate`): a branch not taken contributes no NaN to any derivative.  A sequence of
    expressions returns a stacked array along the last axis, so the function broadcasts over
    leading axes of its arguments.  The expressions are lowered as they are: apply
    :func:`stabilize` first to rewrite unstable forms.

    Raises:
        GradflowError: ``expr`` uses a function that has no lowering (the message names it).
    """
    exprs = _leaves(expr)
    _check(exprs, "JAX")
    printer = _JaxPrinter(_PRINTER_SETTINGS)
    gated = [_gate_branches(e) for e in exprs]
    modules = [_JAX_NAMESPACE, "jax"]
    if isinstance(expr, sp.Basic):
        return sp.lambdify(args, gated[0], modules=modules, printer=printer, cse=True)
    components = sp.lambdify(args, gated, modules=modules, printer=printer, cse=True)

    def stacked(*values: jax.Array) -> jax.Array:
        parts = components(*values)
        shape = jnp.broadcast_shapes(*(jnp.shape(v) for v in parts))
        return jnp.stack([jnp.broadcast_to(v, shape) for v in parts], axis=-1)

    return stacked


def lambdify_numpy(
    args: Sequence[sp.Symbol], expr: sp.Expr | Sequence[sp.Expr] | Sequence[Sequence[sp.Expr]]
) -> Callable[..., np.ndarray]:
    """Translate SymPy expression(s) into a NumPy function of scalar ``args`` (``cse=True``).

    For per-point calls from Python (scipy root finding and ODE baselines), where a NumPy call
    costs microseconds and a JAX dispatch tens of them.  Supports the functions of
    :data:`LOWERED_FUNCTIONS` (``scipy.special`` for the special functions); ``DiracDelta``
    (from differentiating ``sign``) evaluates to 0, its value away from the origin.  As in JAX,
    a value that is not real or not finite is NaN or ±inf without a ``RuntimeWarning`` (a
    ``Piecewise`` evaluates every branch, also where it is not defined).

    Raises:
        GradflowError: ``expr`` uses a function that has no lowering (the message names it).
    """
    _check(_leaves(expr), "NumPy")
    printer = _NumPyPrinter(_PRINTER_SETTINGS)
    fn = sp.lambdify(args, expr, modules=[_NUMPY_NAMESPACE, "numpy"], printer=printer, cse=True)

    @functools.wraps(fn)
    def quiet(*values: float) -> np.ndarray:
        with np.errstate(all="ignore"):
            return fn(*values)

    return quiet


def _leaves(expr: object) -> list[sp.Basic]:
    """The SymPy expressions in ``expr`` or in a (nested) list or tuple of them."""
    if isinstance(expr, (list, tuple)):
        return [leaf for item in expr for leaf in _leaves(item)]
    return [sp.sympify(expr)]
