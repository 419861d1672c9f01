"""SymPy → JAX lowering: every supported function under jit, vmap and jacfwd; one-line errors for
the rest; no NaN from branches not taken; the automatic rewrites of unstable forms."""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
import sympy as sp
from scipy.optimize import brentq
from scipy.special import erf, expit

import gradflow
from gradflow import (
    LOWERED_FUNCTIONS,
    GradflowError,
    LogAddExp,
    LogSigmoid,
    ReducedModel,
    Sigmoid,
    Softplus,
    lambdify_jax,
    lambdify_numpy,
    loss_scales,
    stabilize,
)

x, y, u, v, w = sp.symbols("x y u v w", real=True)
PRECISION = 40
"""Decimal digits of the SymPy/mpmath reference values."""
MAX_PRECISION = 3000
"""Digits SymPy may use on the way (``σ(u) - σ(u)²`` at ``u = 1000`` cancels 435 of them)."""


def reference(expr: sp.Expr, point: float, symbol: sp.Symbol = x) -> float:
    """``expr`` at ``symbol = point`` (the float's exact binary value) by SymPy/mpmath."""
    exact = expr.subs(symbol, sp.Rational(float(point)))
    return float(sp.N(exact, PRECISION, maxn=MAX_PRECISION))


def references(expr: sp.Expr, points: np.ndarray, symbol: sp.Symbol = x) -> np.ndarray:
    return np.array([reference(expr, p, symbol) for p in points])


def mpmath_references(expr: sp.Expr, points: np.ndarray) -> np.ndarray:
    """``expr`` (in ``u``, with exponentials, logs and sigmoids) evaluated by mpmath with 1000
    working digits: enough for the cancellations of the naive forms at ``|u| = 1000``."""
    fn = sp.lambdify(u, expr.rewrite(sp.exp), "mpmath")
    with mpmath.workdps(1000):
        return np.array([float(fn(mpmath.mpf(float(p)))) for p in points])


# --- every supported function, under jit, vmap and jacfwd ------------------------------------


@dataclass(frozen=True)
class Row:
    """One supported function: an expression in ``x`` using it, and points of its domain."""

    name: str
    expr: sp.Expr
    points: tuple[float, ...]


TRIG = (-0.7, 0.4, 1.1)
HYPERBOLIC = (-1.2, 0.3, 2.0)
UNIT = (-0.6, 0.2, 0.8)
OUTSIDE_UNIT = (-3.0, 1.5, 4.0)
TABLE = [
    Row("exp", sp.exp(x), (-1.3, 0.4, 2.0)),
    Row("log", sp.log(x), (0.3, 1.7, 40.0)),
    Row("sin", sp.sin(x), TRIG),
    Row("cos", sp.cos(x), TRIG),
    Row("tan", sp.tan(x), TRIG),
    Row("cot", sp.cot(x), TRIG),
    Row("sec", sp.sec(x), TRIG),
    Row("csc", sp.csc(x), TRIG),
    Row("asin", sp.asin(x), UNIT),
    Row("acos", sp.acos(x), UNIT),
    Row("atan", sp.atan(x), (-2.0, 0.3, 5.0)),
    Row("acot", sp.acot(x), (-2.0, 0.3, 5.0)),
    Row("asec", sp.asec(x), OUTSIDE_UNIT),
    Row("acsc", sp.acsc(x), OUTSIDE_UNIT),
    Row("atan2", sp.atan2(x, 1 - x), (-0.5, 0.3, 2.0)),  # 4th, 1st and 2nd quadrants
    Row("sinh", sp.sinh(x), HYPERBOLIC),
    Row("cosh", sp.cosh(x), HYPERBOLIC),
    Row("tanh", sp.tanh(x), HYPERBOLIC),
    Row("coth", sp.coth(x), HYPERBOLIC),
    Row("sech", sp.sech(x), HYPERBOLIC),
    Row("csch", sp.csch(x), HYPERBOLIC),
    Row("asinh", sp.asinh(x), (-2.0, 0.3, 4.0)),
    Row("acosh", sp.acosh(x), (1.2, 3.0)),
    Row("atanh", sp.atanh(x), UNIT),
    Row("acoth", sp.acoth(x), OUTSIDE_UNIT),
    Row("asech", sp.asech(x), (0.2, 0.6, 0.9)),
    Row("acsch", sp.acsch(x), (-2.0, 0.3, 4.0)),
    Row("erf", sp.erf(x), (-1.5, 0.2, 2.5)),
    Row("erfc", sp.erfc(x), (-1.5, 0.2, 2.5)),
    Row("erfinv", sp.erfinv(x), (-0.9, 0.1, 0.7)),
    Row("gamma", sp.gamma(x), (-1.5, 0.5, 3.2)),
    Row("loggamma", sp.loggamma(x), (0.3, 2.5, 7.0)),
    Row("polygamma", sp.digamma(x), (-1.5, 0.5, 3.2)),  # SymPy writes digamma(x) polygamma(0, x)
    Row("Abs", sp.Abs(x), (-1.5, 0.7)),
    Row("sign", sp.sign(x), (-1.5, 0.7)),
    Row("Max", sp.Max(x, 1 - x), (-1.0, 0.2, 2.0)),
    Row("Min", sp.Min(x, 1 - x), (-1.0, 0.2, 2.0)),
    Row("Heaviside", sp.Heaviside(x), (-1.0, 2.0)),
    Row("DiracDelta", sp.DiracDelta(x), (-1.0, 0.5)),
    Row("Piecewise", sp.Piecewise((x**2, x > 0), (sp.sqrt(-x), True)), (-2.0, -0.3, 0.5, 1.5)),
    Row("Sigmoid", Sigmoid(x), (-30.0, -1.0, 0.5, 40.0)),
    Row("LogSigmoid", LogSigmoid(x), (-30.0, -1.0, 0.5, 40.0)),
    Row("Softplus", Softplus(x), (-30.0, -1.0, 0.5, 40.0)),
    Row("LogAddExp", LogAddExp(x, 1 - 2 * x), (-3.0, 0.4, 5.0)),
]
POWERS = [
    Row("sqrt(x)", sp.sqrt(x), (0.3, 2.0)),
    Row("x**(1/3)", x ** sp.Rational(1, 3), (0.3, 8.0)),
    Row("x**(-3/2)", x ** sp.Rational(-3, 2), (0.5, 2.0)),
    Row("x**(-2)", x**-2, (-1.5, 0.5)),
    Row("(1 + x**2)**(1/3)", (1 + x**2) ** sp.Rational(1, 3), (-2.0, 0.5)),
    Row("real_root(x, 3)", sp.real_root(x, 3), (-8.0, -0.5, 0.5)),
]


def test_the_table_lists_every_supported_function() -> None:
    assert sorted(row.name for row in TABLE) == sorted(LOWERED_FUNCTIONS)


@pytest.mark.parametrize("row", TABLE + POWERS, ids=lambda row: row.name)
def test_function_lowers_under_jit_vmap_and_jacfwd(row: Row) -> None:
    """Values, first and second derivatives against SymPy/mpmath at 40 digits.

    The first derivative two ways: JAX's forward mode through the lowered function, and the
    lowered symbolic derivative (what the engine's gradient is); the second derivative as the
    engine's Hessian, ``jacfwd`` of the lowered symbolic derivative.  The four go through one
    jitted program (a program of their own each cost three more compilations per function).
    """
    points = np.array(row.points)
    first, second = sp.diff(row.expr, x), sp.diff(row.expr, x, 2)
    f, df = lambdify_jax([x], row.expr), lambdify_jax([x], first)
    tol = {"rtol": 1e-10, "atol": 1e-13}
    values, forward, derivative, hessian = jax.jit(
        lambda p: tuple(jax.vmap(g)(p) for g in (f, jax.jacfwd(f), df, jax.jacfwd(df)))
    )(points)
    np.testing.assert_allclose(values, references(row.expr, points), **tol)
    np.testing.assert_allclose(forward, references(first, points), **tol)
    np.testing.assert_allclose(derivative, references(first, points), **tol)
    np.testing.assert_allclose(hessian, references(second, points), **tol)
    numpy_f = lambdify_numpy([x], row.expr)
    np.testing.assert_allclose(
        [numpy_f(p) for p in row.points], references(row.expr, points), **tol
    )


@pytest.mark.parametrize(
    ("expr", "name"),
    [
        (sp.besselj(0, x), "besselj"),
        (sp.zeta(x), "zeta"),
        (sp.Function("f")(x), "f"),
        (x + sp.LambertW(x) ** 2, "LambertW"),
        (sp.floor(x), "floor"),
        (sp.Integral(sp.exp(-(y**2)), (y, 0, x)), "Integral"),
    ],
)
def test_an_unsupported_function_is_a_one_line_error_naming_it(expr: sp.Expr, name: str) -> None:
    message = rf"^cannot lower {name} to (JAX|NumPy) \(supported: Abs, acos, .*\)$"
    with pytest.raises(GradflowError, match=message):
        lambdify_jax([x], expr)
    with pytest.raises(GradflowError, match=message):
        lambdify_jax([x], [x, expr])
    with pytest.raises(GradflowError, match=message):
        lambdify_numpy([x], [[x, expr]])
    model = ReducedModel(name="unsupported", params=(x,), loss=x**2 + expr)
    with pytest.raises(GradflowError, match=message):
        model.bind().loss([0.5])


# --- kinks and branches: no NaN in gradients or Hessians --------------------------------------


PIECEWISE = sp.Piecewise((x**2, x > 0), (sp.sqrt(-x), True))
THREE_BRANCHES = sp.Piecewise((sp.log(x), x > 1), (x - 1, x > -1), (sp.sqrt(-1 - x), True))
KINKS = {
    # expr: (x, L, L', L'') by hand; at a kink SymPy's conventions sign(0) = 0, H(0) = ½
    sp.Abs(x): [(0.0, 0.0, 0.0, 0.0), (-1.5, 1.5, -1.0, 0.0)],  # |x|' = sign(x)
    x * sp.Abs(x): [(0.0, 0.0, 0.0, 0.0), (-2.0, -4.0, 4.0, -2.0)],  # 2|x|, 2 sign(x)
    x * sp.sign(x): [(0.0, 0.0, 0.0, 0.0), (3.0, 3.0, 1.0, 0.0)],  # sign(x) + 2x δ(x), δ → 0
    # 2 max(x, 0) H(x), 2 H(x)² + 2 max(x, 0) δ(x): 2·½·½ at x = 0
    sp.Max(x, 0) ** 2: [(0.0, 0.0, 0.0, 0.5), (1.5, 2.25, 3.0, 2.0), (-1.0, 0.0, 0.0, 0.0)],
    sp.Min(x, 0) ** 2: [(0.0, 0.0, 0.0, 0.5), (-1.5, 2.25, -3.0, 2.0), (1.0, 0.0, 0.0, 0.0)],
    # 2x H(x) + x² δ(x), 2 H(x) + 4x δ(x) + x² δ'(x)
    sp.Heaviside(x) * x**2: [(0.0, 0.0, 0.0, 1.0), (3.0, 9.0, 6.0, 2.0), (-3.0, 0.0, 0.0, 0.0)],
    # the branch not taken is NaN (√x at x < 0) or has an infinite slope (√x at 0)
    sp.Piecewise((sp.sqrt(x), x > 0), (0, True)): [
        (0.0, 0.0, 0.0, 0.0),
        (-1.0, 0.0, 0.0, 0.0),
        (4.0, 2.0, 1 / 4, -1 / 32),  # (√x)' = 1/(2√x), (√x)'' = -1/(4 x^{3/2})
    ],
    # x² for x > 0, √(-x) else: L' = -1/(2√(-x)), L'' = -1/(4(-x)^{3/2}) for x < 0
    PIECEWISE: [(1.0, 1.0, 2.0, 2.0), (-4.0, 2.0, -1 / 4, -1 / 32)],
    # the middle branch x - 1 at 0, between log (-inf at 0) and √(-1 - x) (NaN at 0)
    THREE_BRANCHES: [(0.0, -1.0, 1.0, 0.0), (2.0, math.log(2), 1 / 2, -1 / 4)],
}


@pytest.mark.parametrize("expr", KINKS, ids=str)
def test_kinks_and_branches_give_no_nan(expr: sp.Expr) -> None:
    """The engine (symbolic gradient, ``jacfwd`` Hessian) and JAX's reverse mode through the
    lowered loss (``grad``, ``hessian``) agree with the hand values, NaN-free."""
    points, values, slopes, curvatures = np.array(KINKS[expr]).T
    model = ReducedModel(name="kink", params=(x,), loss=expr).bind()
    theta = points[:, None]
    np.testing.assert_allclose(model.loss(theta), values, atol=1e-15)
    np.testing.assert_allclose(model.grad(theta), slopes[:, None], atol=1e-15)
    np.testing.assert_allclose(model.hessian(theta), curvatures[:, None, None], atol=1e-15)
    f = lambdify_jax([x], expr)
    grads, hessians = jax.jit(lambda p: (jax.vmap(jax.grad(f))(p), jax.vmap(jax.hessian(f))(p)))(
        points
    )
    np.testing.assert_allclose(grads, slopes, atol=1e-15)
    np.testing.assert_allclose(hessians, curvatures, atol=1e-15)


def test_conditions_mixing_a_batched_parameter_and_a_hyperparameter() -> None:
    """``L = x²`` if ``h > 0``, else ``√x`` if ``x > 0``, else 0: the second branch is taken where
    ``x > 0 ∧ h ≤ 0``, a condition on a batch of ``x`` and a scalar ``h``.  At ``h = -1``:
    ``L = [0, 0, 2]``, ``L' = [0, 0, 1/4]``, ``L'' = [0, 0, -1/32]`` at ``x = [-1, 0, 4]``; at
    ``h = 1``: ``x²``, ``2x``, 2."""
    h = sp.Symbol("h", real=True)
    model = ReducedModel(
        name="switch",
        params=(x,),
        hyperparams=(h,),
        loss=sp.Piecewise((x**2, h > 0), (sp.sqrt(x), x > 0), (0, True)),
    )
    theta = np.array([[-1.0], [0.0], [4.0]])
    below, above = model.bind(h=-1.0), model.bind(h=1.0)
    np.testing.assert_allclose(below.loss(theta), [0.0, 0.0, 2.0], atol=1e-15)
    np.testing.assert_allclose(below.grad(theta)[:, 0], [0.0, 0.0, 1 / 4], atol=1e-15)
    np.testing.assert_allclose(below.hessian(theta)[:, 0, 0], [0.0, 0.0, -1 / 32], atol=1e-15)
    np.testing.assert_allclose(above.loss(theta), [1.0, 0.0, 16.0], atol=1e-15)
    np.testing.assert_allclose(above.grad(theta)[:, 0], [-2.0, 0.0, 8.0], atol=1e-15)
    np.testing.assert_allclose(above.hessian(theta)[:, 0, 0], [2.0, 2.0, 2.0], atol=1e-15)


def test_rational_powers_are_principal_and_real_root_is_the_real_root() -> None:
    """``x**(1/3)`` is SymPy's principal root: at ``x = -8`` it is ``1 + i√3``, not real, so
    NaN, as is ``sqrt(-1)``; ``x**(2/3)`` likewise (``-2 + 2i√3``).  The real cube root is
    ``real_root(x, 3) = sign(x)|x|^{1/3}``: ``-2`` at ``-8``, slope ``x^{-2/3}/3 = 1/12`` and,
    being odd, curvature ``-f''(8) = (2/9)·8^{-5/3} = 1/144``."""
    principal = lambdify_jax([x], [x ** sp.Rational(1, 3), x ** sp.Rational(2, 3), sp.sqrt(x)])
    assert np.isnan(principal(jnp.array(-8.0))).all()
    np.testing.assert_allclose(principal(jnp.array(8.0)), [2.0, 4.0, math.sqrt(8.0)], rtol=1e-15)
    model = ReducedModel(name="cube root", params=(x,), loss=sp.real_root(x, 3)).bind()
    np.testing.assert_allclose(model.loss([-8.0]), -2.0, rtol=1e-15)
    np.testing.assert_allclose(model.grad([-8.0]), [1 / 12], rtol=1e-15)
    np.testing.assert_allclose(model.hessian([-8.0]), [[1 / 144]], rtol=1e-14)


# --- stabilize -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "stable"),
    [
        (sp.log(1 + sp.exp(u)), Softplus(u)),
        (sp.log(sp.exp(u) + 1), Softplus(u)),
        (sp.log(1 + sp.exp(-10 * w)), Softplus(-10 * w)),
        (sp.log(sp.exp(u) + sp.exp(v)), LogAddExp(u, v)),
        (sp.log(2 + sp.exp(u)), LogAddExp(sp.log(2), u)),
        (sp.log(Sigmoid(u)), LogSigmoid(u)),
        (sp.log(1 / (1 + sp.exp(-u))), LogSigmoid(u)),
        (sp.log(sp.exp(u) / (1 + sp.exp(u))), LogSigmoid(u)),
        (sp.log(1 - Sigmoid(u)), LogSigmoid(-u)),
        (sp.log(1 - 1 / (1 + sp.exp(-u))), LogSigmoid(-u)),
        (sp.exp(u) / (1 + sp.exp(u)), Sigmoid(u)),
        (sp.exp(u) / (sp.exp(u) + 1), Sigmoid(u)),
        (1 / (1 + sp.exp(-u)), Sigmoid(u)),
        (3 * v / (1 + sp.exp(-u)), 3 * v * Sigmoid(u)),
        (sp.exp(u) / (sp.exp(u) + sp.exp(v)), Sigmoid(u - v)),
        (sp.log(1 + u**2), sp.log(1 + u**2)),
        (sp.log(sp.exp(u) - 1), sp.log(sp.exp(u) - 1)),
    ],
)
def test_stabilize_rewrites_the_unstable_forms(expr: sp.Expr, stable: sp.Expr) -> None:
    assert stabilize(expr) == stable
    assert stabilize(stable) == stable


LARGE = np.array([-1000.0, -30.0, 0.5, 30.0, 1000.0])


@pytest.mark.parametrize(
    "expr",
    [
        sp.log(1 + sp.exp(u)),
        sp.log(sp.exp(u) + sp.exp(-u)),
        sp.log(sp.exp(u) + sp.exp(2 * u) + 3),
        sp.log(1 / (1 + sp.exp(-u))),
        sp.log(Sigmoid(u)),
        sp.log(1 - 1 / (1 + sp.exp(-u))),
        sp.log(1 - Sigmoid(u)),
        sp.exp(u) / (1 + sp.exp(u)),
        1 / (1 + sp.exp(-u)),
        sp.exp(u) / (sp.exp(u) + sp.exp(2 * u) + 1),
    ],
    ids=str,
)
def test_stabilized_forms_are_exact_at_large_arguments(expr: sp.Expr) -> None:
    """At ``|u| = 1000`` ``e^u`` overflows float64; the stable form's value, its symbolic
    derivative and ``jacfwd`` of that derivative match the original expression evaluated by
    mpmath (whose exponent range is unbounded), at relative precision."""
    stable = stabilize(expr)
    f, df = lambdify_jax([u], stable), lambdify_jax([u], sp.diff(stable, u))
    tol = {"rtol": 1e-12, "atol": 1e-300}
    np.testing.assert_allclose(jax.jit(jax.vmap(f))(LARGE), mpmath_references(expr, LARGE), **tol)
    np.testing.assert_allclose(
        jax.jit(jax.vmap(df))(LARGE), mpmath_references(sp.diff(expr, u), LARGE), **tol
    )
    np.testing.assert_allclose(
        jax.jit(jax.vmap(jax.jacfwd(df)))(LARGE),
        mpmath_references(sp.diff(expr, u, 2), LARGE),
        **tol,
    )


def test_without_stabilize_the_naive_forms_overflow() -> None:
    """What the rewrite is for: ``log(1 + e^{1000})`` is ``inf`` and ``e^u/(1 + e^u)`` NaN."""
    naive = lambdify_jax([u], [sp.log(1 + sp.exp(u)), sp.exp(u) / (1 + sp.exp(u))])
    value = naive(1000.0)
    assert np.isinf(value[0]) and np.isnan(value[1])


def test_stabilize_keeps_values_at_moderate_arguments(rng: np.random.Generator) -> None:
    """A loss mixing every form: the rewritten expression equals the original."""
    loss = (
        sp.log(1 + sp.exp(u - v)) * v
        + sp.log(sp.exp(u) + sp.exp(v)) ** 2
        - y * sp.log(1 / (1 + sp.exp(-u)))
        - (1 - y) * sp.log(1 - 1 / (1 + sp.exp(-u)))
        + sp.exp(v) / (1 + sp.exp(v))
    )
    original, stable = lambdify_jax([u, v, y], loss), lambdify_jax([u, v, y], stabilize(loss))
    assert not stabilize(loss).has(sp.exp)
    points = rng.uniform(-4.0, 4.0, size=(3, 20))
    np.testing.assert_allclose(stable(*points), original(*points), rtol=1e-12)


def test_softplus_loss_at_large_logits_and_its_minimum() -> None:
    """``L = log(1 + e^{-10w}) + w²/2 + v²/2 = softplus(-10w) + w²/2 + v²/2``.

    At ``w = -100``: ``softplus(1000) = 1000 + log(1 + e^{-1000}) = 1000`` to float64, so
    ``L = 1000 + 5000 = 6000``; ``∂L/∂w = -10 σ(-10w) + w = -10 σ(1000) - 100 = -110``,
    ``∂L/∂v = v = 0``.  The minimum solves ``∂L/∂w = 0``, ``w = 10 σ(-10w)`` (found here by
    scipy's ``brentq`` with scipy's ``expit``: ``w* = 0.3359275…``), ``v = 0``, where
    ``∂²L/∂w² = 1 + 100 σ(10w) σ(-10w) = 4.2464…`` and ``∂²L/∂v² = 1``.  The flow from
    ``(-100, 1)`` ends there.
    """
    model = ReducedModel(
        name="softplus", params=(w, v), loss=sp.log(1 + sp.exp(-10 * w)) + w**2 / 2 + v**2 / 2
    ).bind()
    np.testing.assert_allclose(model.loss([-100.0, 0.0]), 6000.0, rtol=1e-15)
    np.testing.assert_allclose(model.grad([-100.0, 0.0]), [-110.0, 0.0], rtol=1e-15)
    np.testing.assert_allclose(model.hessian([-100.0, 0.0]), np.eye(2), rtol=1e-15)
    w_star = brentq(lambda t: t - 10 * expit(-10 * t), 0.0, 1.0, xtol=1e-15)
    curvature = 1 + 100 * expit(10 * w_star) * expit(-10 * w_star)
    assert w_star == pytest.approx(0.3359275, abs=1e-7)
    assert curvature == pytest.approx(4.2464, abs=1e-4)
    np.testing.assert_allclose(model.grad([w_star, 0.0]), [0.0, 0.0], atol=1e-14)
    np.testing.assert_allclose(model.hessian([w_star, 0.0]), np.diag([curvature, 1.0]), rtol=1e-13)
    path = gradflow.flow(model, [-100.0, 1.0])
    assert path.status == gradflow.Outcome.CONVERGED
    # The flow stops at ‖∇L‖ ≤ gtol·g (g: the loss's gradient scale), within gtol·g/λ_min of the
    # minimum, λ_min = 1 (the v direction).
    stop = gradflow.FlowOptions().gtol * loss_scales(model).gradient
    np.testing.assert_allclose(path.endpoint, [w_star, 0.0], atol=stop)
    assert np.isfinite(path.losses).all()


def test_gelu_flow_reaches_the_root_of_gelu_equal_one() -> None:
    """``L = (GELU(x) - 1)²`` with ``GELU(x) = x (1 + erf(x/√2))/2 = x Φ(x)``.

    ``L' = 2 (GELU(x) - 1) GELU'(x)`` with ``GELU' = Φ(x) + x φ(x) > 0`` for ``x > -0.75``; at
    ``x = 0``, ``L' = 2·(-1)·½ = -1``, so the flow moves right and stops where ``GELU(x) = 1``
    (``L = 0``, a global minimum), the root found independently by ``brentq`` on scipy's exact
    ``erf``: ``x* = 1.14445…``.
    """
    gelu = x * (1 + sp.erf(x / sp.sqrt(2))) / 2
    model = ReducedModel(name="gelu", params=(x,), loss=(gelu - 1) ** 2).bind()
    np.testing.assert_allclose(model.grad([0.0]), [-1.0], rtol=1e-15)
    root = brentq(lambda t: t * (1 + erf(t / math.sqrt(2))) / 2 - 1, 0.0, 3.0, xtol=1e-15)
    path = gradflow.flow(model, [0.0])
    assert path.status == gradflow.Outcome.CONVERGED
    np.testing.assert_allclose(path.endpoint, [root], atol=1e-7)
    assert root == pytest.approx(1.14445, abs=1e-5)


def test_a_loss_written_as_text_may_call_every_lowered_function() -> None:
    """The text grammar (read without SymPy) knows every function the lowering supports, and
    each name builds the function it names."""
    from gradflow import parse_loss

    for name in LOWERED_FUNCTIONS:
        assert name in gradflow.FUNCTION_NAMES, name
    assert parse_loss("softplus(x) + Abs(y)") == Softplus(x) + sp.Abs(y)


def test_the_angle_between_two_vectors_is_written_without_cancellation() -> None:
    """``acos(x/r)``, ``r = √(x² + y²)``, is the angle θ = atan2(|y|, x): ``1 - x²/r²`` is
    ``y²/r²`` in algebra, so ``√(1 - x²/r²) = |y|/r`` and ``acos(u) = atan2(√(1 - u²), u)``.
    Computed from ``u``, ``1 - u`` loses every digit near θ = 0 and ``acos'(1) = -∞`` (the
    pattern of jax#15798): the gradient of ``acos(x/r)²`` is NaN at (1, 0), where the loss θ²
    is smooth with gradient 0, and wrong at (1, 1e-9), where it is ``(−2θy/r², 2θx/r²)`` with
    θ = atan(1e-9) (``2e-9`` in y to relative 1e-12)."""
    x, y = sp.symbols("x y", real=True)
    r = sp.sqrt(x**2 + y**2)
    assert stabilize(sp.acos(x / r)) == sp.atan2(sp.Abs(y) / r, x / r)
    assert stabilize(sp.asin(x / r)) == sp.atan2(x / r, sp.Abs(y) / r)
    assert stabilize(sp.sqrt(1 - x**2 / r**2)) == sp.Abs(y) / r
    assert stabilize(sp.acos(x)) == sp.acos(x)
    assert stabilize(sp.sqrt(1 - x**2)) == sp.sqrt(1 - x**2)
    loss = sp.acos(x / r) ** 2
    naive = lambdify_jax([x, y], [sp.diff(loss, x), sp.diff(loss, y)])
    stable = lambdify_jax([x, y], [sp.diff(stabilize(loss), s) for s in (x, y)])
    assert not np.all(np.isfinite(naive(1.0, 0.0)))
    np.testing.assert_array_equal(stable(1.0, 0.0), [0.0, 0.0])
    theta = np.arctan(1e-9)
    r2 = 1 + 1e-18
    np.testing.assert_allclose(
        stable(1.0, 1e-9), [-2 * theta * 1e-9 / r2, 2 * theta / r2], rtol=1e-12, atol=1e-30
    )
