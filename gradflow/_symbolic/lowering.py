"""The translation of SymPy expressions to JAX and NumPy.

:func:`lambdify_jax` and :func:`lambdify_numpy` translate an expression built from the
functions of :data:`LOWERED_FUNCTIONS` (and ``+``, ``·``, powers, ``Piecewise``) and raise
:class:`GradflowError` naming anything else.  The stable functions (:mod:`.functions`) are
printed as the stable primitives, and :func:`~.stabilize.stabilize` rewrites the unstable forms
into them before a loss is differentiated.

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
from sympy.functions.elementary.piecewise import ExprCondPair
from sympy.logic.boolalg import BooleanAtom
from sympy.printing.numpy import JaxPrinter, NumPyPrinter

from .._errors import GradflowError
from .functions import LogAddExp, LogSigmoid, Sigmoid, Softplus

__all__ = ["LOWERED_FUNCTIONS", "check_lowering", "lambdify_jax", "lambdify_numpy"]

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


def check_lowering(exprs: Sequence[sp.Basic], target: str) -> None:
    """Raise :class:`GradflowError` naming the first function in ``exprs`` that has no
    lowering to ``target`` (``"JAX"`` or ``"NumPy"``)."""
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
    check_lowering(exprs, "JAX")
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
    check_lowering(_leaves(expr), "NumPy")
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
