"""The Rosenbrock integrator (``Rodas4``) against the mathematics of the method, answers worked
out by hand, and diffrax's ``Kvaerno5``, the reference.

- On ``y' = λy`` one step is ``R(hλ)·y`` with ``R`` the method's stability function:
  ``R(z) = e^z + O(z⁵)`` (order 4) and ``R(z) → 0`` as ``z → −∞`` (L-stable).
- On a nonlinear flow, halving a fixed step divides the global error by ``2⁴`` (order 4), and
  the error estimate ``k₆`` (the difference of the order-3 and order-4 solutions) by ``2⁴``
  per step too.
- ``L = (x² + 10⁶y²)/2`` from ``(1, 1)``: ``x = e^{−t}``, ``y = e^{−10⁶t}``.  An explicit pair
  is held to steps below ``3.3·10⁻⁶`` (Tsit5's stability interval); an L-stable method takes
  steps of the slow direction.
- ``(1 − xy)²``: the flow conserves ``x² − y²`` and ends on ``xy = 1`` where that puts it (see
  ``test_rk.py``).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gradflow import (
    PID,
    ConstantStep,
    FlowOptions,
    GradflowError,
    GradientField,
    JaxLandscape,
    Outcome,
    StopRule,
    flow,
    flow_endpoints,
)
from gradflow._flow.integrate import hermite
from gradflow._flow.rk import StepControl
from gradflow._flow.rosenbrock import RODAS4, BatchedRosenbrock, _solver

STIFF = GradientField.from_loss(lambda t, _: (t[0] ** 2 + 1e6 * t[1] ** 2) / 2)
HYPERBOLA = JaxLandscape(lambda t, _: (1 - t[0] * t[1]) ** 2, ("x", "y"))


def _rodas(rtol: float = 1e-7, atol: float = 1e-9, t_max: float = 1.0) -> BatchedRosenbrock:
    return BatchedRosenbrock(RODAS4, StepControl(rtol, atol), t_max)


def _step(field):
    """One Rodas4 step of ``field``, jitted once: ``(y, h) → (y₁, error estimate)``, states
    laid out ``(dim, B)``."""

    def f(s):
        return jax.vmap(field, in_axes=(1, None), out_axes=1)(s, None)

    def jac(s):
        return jax.vmap(jax.jacfwd(field), in_axes=(1, None))(s, None)

    def step(y, h):
        y1, err, _ = _rodas().attempt(f, jac, y, jnp.full((1, y.shape[1]), h), f(y))
        return y1, err

    return jax.jit(step)


def _one_step(step, y: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray]:
    """One step of ``step`` (:func:`_step`) from the states ``y`` (``(dim, B)``): the new
    states and the error estimate."""
    y1, err = step(jnp.asarray(y), h)
    return np.asarray(y1), np.asarray(err)


def test_the_stability_function_is_e_to_the_z_to_fifth_order_and_vanishes_at_infinity() -> None:
    """On ``y' = λy`` (λ = −1, one step of h): ``|R(−h) − e^{−h}|`` shrinks as ``h⁵`` (the
    local error of an order-4 method), and ``R(−10⁶)``, ``R(−10¹²)`` are at most ``10⁻⁵``
    (L-stability: a stiff decaying mode is damped, not carried)."""
    decay = _step(lambda y, _: -y)
    hs = np.array([0.2, 0.1, 0.05])
    gaps = [abs(_one_step(decay, np.ones((1, 1)), h)[0][0, 0] - math.exp(-h)) for h in hs]
    rates = np.log2(np.array(gaps[:-1]) / np.array(gaps[1:]))
    assert np.all(rates > 4.7), rates
    for h in (1e6, 1e12):
        assert abs(_one_step(decay, np.ones((1, 1)), h)[0][0, 0]) <= 1e-5


def test_the_global_error_falls_as_the_fourth_power_of_the_step() -> None:
    """``(1 − xy)²/2 + (x² − y²)²/20`` from ``(2, 0.3)`` to ``t = 1`` in n fixed steps, against
    4,096 steps: doubling n divides the error by at least ``2^3.8``; the error estimate of one
    step of h falls at least as ``h^3.3`` between h = 0.05 and 0.025 (its leading term is
    ``O(h⁴)``)."""

    def loss(s):
        return (1 - s[0] * s[1]) ** 2 / 2 + (s[0] ** 2 - s[1] ** 2) ** 2 / 20

    def field(t, _):
        return -jax.grad(loss)(t)

    step = _step(field)

    @jax.jit
    def run(n: jax.Array) -> jax.Array:
        y = jnp.array([[2.0], [0.3]])
        return jax.lax.fori_loop(0, n, lambda _, y: step(y, 1.0 / n)[0], y)

    reference = run(4096)
    errors = np.array([np.linalg.norm(run(n) - reference) for n in (8, 16, 32)])
    assert np.all(np.log2(errors[:-1] / errors[1:]) > 3.8), errors
    start = np.array([[2.0], [0.3]])
    estimates = [np.linalg.norm(_one_step(step, start, h)[1]) for h in (0.05, 0.025)]
    assert math.log2(estimates[0] / estimates[1]) > 3.3, estimates


def test_a_stiff_flow_takes_the_steps_of_its_slow_direction() -> None:
    """``L = (x² + 10⁶y²)/2`` from ``(1, 1)`` to ``t = 10``: ``(e^{−10}, 0)`` within the
    tolerances, in fewer than 1,000 steps (the first ones resolve the fast transient), where Tsit5's stability interval alone needs
    ``10/3.3·10⁻⁶ ≈ 3·10⁶``."""
    options = FlowOptions(stop=StopRule(gtol=1e-300, t_max=10.0, max_steps=20_000))
    path = flow(STIFF, jnp.array([1.0, 1.0]), options)
    assert path.status is Outcome.NOT_CONVERGED and path.time == 10.0
    assert len(path.ts) - 1 < 1000
    np.testing.assert_allclose(path.endpoint, [math.exp(-10.0), 0.0], rtol=1e-5, atol=1e-9)


def test_a_trajectory_agrees_with_diffrax_kvaerno5() -> None:
    """The canonical-like double well ``(x² − 1)² + 4(y − x²/2)²`` from ``(0.2, 1.5)``, both
    solvers at ``rtol = 10⁻¹⁰``: the recorded path at the same times agrees to ``10⁻⁸``, and
    with ``gtol = 10⁻¹²`` both stop converged within ``10⁻⁹`` of ``(1, 1/2)`` (the Hessian
    there is ``[[32, −8], [−8, 8]]``, whose smaller eigenvalue ``20 − √208 ≈ 5.6`` bounds the
    distance by ``‖∇L‖/5.6``, and ``g``, the gradient scale ``gtol`` is relative to, is
    below 10³ on the default ranges)."""
    landscape = JaxLandscape(
        lambda t, _: (t[0] ** 2 - 1) ** 2 + 4 * (t[1] - t[0] ** 2 / 2) ** 2, ("x", "y")
    )
    ts = np.linspace(0.0, 2.0, 9)
    tight = PID(rtol=1e-10, atol=1e-12)
    ours = flow(landscape, [0.2, 1.5], FlowOptions(controller=tight), ts=ts)
    reference = flow(landscape, [0.2, 1.5], FlowOptions(solver="Kvaerno5", controller=tight), ts=ts)
    np.testing.assert_array_equal(ours.ts[: len(ts)], ts)
    np.testing.assert_allclose(ours.thetas[: len(ts)], reference.thetas[: len(ts)], atol=1e-8)
    stop = StopRule(gtol=1e-12)
    untimed = flow(landscape, [0.2, 1.5], FlowOptions(controller=tight, stop=stop))
    assert untimed.status is reference.status is Outcome.CONVERGED
    np.testing.assert_allclose(untimed.endpoint, [1.0, 0.5], atol=1e-9)


def test_a_batch_ends_where_the_closed_form_puts_it_as_one_trajectory_does() -> None:
    """``(1 − xy)²`` in a batch of Rodas4 rounds: every member on ``xy = 1`` where the conserved
    ``x² − y²`` puts it, as the single trajectory from the same start."""
    starts = np.array([[0.3, 0.2], [-0.4, 0.9], [1.7, -1.1], [2.5, 2.0]])
    options = FlowOptions(controller=PID(rtol=1e-9, atol=1e-11), stop=StopRule(gtol=1e-9))
    batch = flow_endpoints(HYPERBOLA, starts, options, progress=False)
    for start, end, status in zip(starts, batch.endpoints, batch.status):
        c = start[0] ** 2 - start[1] ** 2
        x = np.sign(start.sum()) * np.sqrt((c + np.sqrt(c**2 + 4)) / 2)
        assert status == Outcome.CONVERGED
        np.testing.assert_allclose(end, [x, 1 / x], atol=1e-7)
        np.testing.assert_allclose(flow(HYPERBOLA, start, options).endpoint, end, atol=1e-7)


def test_cramers_rule_commutes_with_the_planes_reflection_exactly(rng) -> None:
    """For ``W`` fixed by the reflection ``(a, b) → (−b, −a)`` (``W₁₁ = W₂₂``, ``W₁₂ = W₂₁``)
    and ``r = (ρ, −ρ)`` on its invariant line, the solution of ``Wk = r`` is on the line bit
    for bit, and solves the system to rounding."""
    p, q, r = rng.normal(size=(3, 1000))
    w = jnp.asarray(np.stack([np.stack([p, q], -1), np.stack([q, p], -1)], -2))
    rhs = jnp.asarray(np.stack([r, -r]))
    k = np.asarray(_solver(w)(rhs))
    np.testing.assert_array_equal(k[0], -k[1])
    np.testing.assert_allclose(k[0], r / (p - q), rtol=1e-12)


def test_the_hermite_interpolant_is_exact_on_a_cubic() -> None:
    """Points and slopes of ``y = (t³ − 2t, 1 − t²)`` at uneven times: the interpolant at other
    times is the cubic itself."""
    times = np.array([0.0, 0.3, 1.1, 1.5])
    ys = np.stack([times**3 - 2 * times, 1 - times**2], 1)
    fs = np.stack([3 * times**2 - 2, -2 * times], 1)
    at = np.array([0.0, 0.1, 0.3, 0.77, 1.2, 1.5])
    np.testing.assert_allclose(
        hermite(times, ys, fs, at), np.stack([at**3 - 2 * at, 1 - at**2], 1), atol=1e-14
    )


def test_rodas4_takes_no_constant_step() -> None:
    with pytest.raises(GradflowError, match="Rodas4 controls its own steps"):
        FlowOptions(controller=ConstantStep(0.1))
