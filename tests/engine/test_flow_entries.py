"""The two flow entry points — :func:`gradflow.flow` (one trajectory) and
:func:`gradflow.flow_endpoints` (a batch) — with the solver, the step-size controller and the stop
rule as values, on losses whose flows are known by hand.

- ``L = (x² − 1)² + y²``: ``dy/dt = −2y`` gives ``y = y0 e^{−2t}``, and ``u = x²`` follows the
  logistic ``du/dt = −8u(u − 1)``, so ``x(t)² = 1/(1 + (1/x0² − 1) e^{−8t})``; from ``(0.5, 1)``
  the flow ends at the minimum ``(1, 0)``.
- ``L = (1 − xy)²/2``: ``d(x² − y²)/dt = 2x·(−y r) − 2y·(−x r) = 0`` with ``r = xy − 1``
  (the balancedness of a depth-2 linear network), so from ``(2, 0.1)`` the flow ends on
  ``xy = 1`` with ``x² − y² = 3.99``: ``x² = (3.99 + √(3.99² + 4))/2``.
- ``L = ½ Σ λᵢ θᵢ²``: gradient descent with step ``η`` (and Euler with the constant step ``η``)
  gives ``θᵢ(k) = (1 − ηλᵢ)^k θᵢ(0)`` exactly, one trajectory or in a batch, where each member
  stops at the first ``k`` that meets the stop rule.
"""

from __future__ import annotations

import diffrax
import jax.numpy as jnp
import numpy as np
import pytest
import sympy as sp

import gradflow
from gradflow import (
    PID,
    ConstantStep,
    FlowOptions,
    GradflowError,
    GradientDescent,
    GradientField,
    Outcome,
    ReducedModel,
    StopRule,
    flow,
    flow_endpoints,
)

x, y = sp.symbols("x y", real=True)

TIGHT = FlowOptions(solver=diffrax.Tsit5(), controller=PID(rtol=1e-10, atol=1e-12))
"""Tsit5 given as a diffrax value, tolerances far below the checks."""


@pytest.fixture(scope="module")
def well() -> gradflow.BoundModel:
    return ReducedModel("double well", (x, y), (x**2 - 1) ** 2 + y**2).bind()


@pytest.fixture(scope="module")
def balanced() -> gradflow.BoundModel:
    return ReducedModel("depth-2 linear", (x, y), (1 - x * y) ** 2 / 2).bind()


def test_the_double_well_path_is_the_closed_form_and_ends_at_the_minimum(well) -> None:
    ts = np.array([0.0, 0.1, 0.25, 0.5, 1.0])
    path = flow(well, [0.5, 1.0], TIGHT, ts=ts)
    np.testing.assert_allclose(path.ts[: len(ts)], ts, rtol=1e-12)
    np.testing.assert_allclose(path.thetas[: len(ts), 1], np.exp(-2 * ts), rtol=1e-8, atol=1e-12)
    x_t = 1 / np.sqrt(1 + 3 * np.exp(-8 * ts))
    np.testing.assert_allclose(path.thetas[: len(ts), 0], x_t, rtol=1e-8)
    assert path.status is Outcome.CONVERGED and path.reached is Outcome.GLOBAL_MIN
    np.testing.assert_allclose(path.endpoint, [1.0, 0.0], atol=1e-7)


def test_one_trajectory_and_the_batch_agree_on_the_same_starts(well) -> None:
    """The start (0.5, 1) alone and among others in a batch ends at (1, 0) both ways; the
    others at the well of their sign of x."""
    starts = np.array([[0.5, 1.0], [-0.5, 1.0], [2.0, -1.5], [-1.7, 0.3]])
    batch = flow_endpoints(well, starts, TIGHT, progress=False)
    assert np.all(batch.status == Outcome.CONVERGED)
    for start, end in zip(starts, batch.endpoints):
        one = flow(well, start, TIGHT)
        np.testing.assert_allclose(end, [np.sign(start[0]), 0.0], atol=1e-7)
        np.testing.assert_allclose(one.endpoint, end, atol=1e-7)


def test_the_named_solver_is_the_diffrax_value(well) -> None:
    """``"Tsit5"`` and ``diffrax.Tsit5()`` are one solver: the same path, bit for bit."""
    named = FlowOptions(solver="Tsit5", controller=TIGHT.controller)
    np.testing.assert_array_equal(
        flow(well, [0.5, 1.0], named).thetas, flow(well, [0.5, 1.0], TIGHT).thetas
    )


def test_the_balanced_flow_lands_on_xy_1_with_x2_minus_y2_conserved(balanced) -> None:
    x_end = np.sqrt((3.99 + np.sqrt(3.99**2 + 4)) / 2)
    expected = np.array([x_end, 1 / x_end])
    path = flow(balanced, [2.0, 0.1], TIGHT)
    np.testing.assert_allclose(path.thetas[:, 0] ** 2 - path.thetas[:, 1] ** 2, 3.99, rtol=1e-8)
    np.testing.assert_allclose(path.endpoint, expected, rtol=1e-7)
    batch = flow_endpoints(balanced, [[2.0, 0.1], [0.1, 2.0]], TIGHT, progress=False)
    np.testing.assert_allclose(batch.endpoints, [expected, expected[::-1]], rtol=1e-7)
    field = GradientField.from_loss(lambda t, _: (1 - t[0] * t[1]) ** 2 / 2)
    on_field = flow(field, jnp.array([2.0, 0.1]), TIGHT)
    on_tree = flow(lambda p, _: (1 - p["x"] * p["y"]) ** 2 / 2, {"x": 2.0, "y": 0.1}, TIGHT)
    for other in (on_field, on_tree):
        assert other.status is Outcome.CONVERGED
        np.testing.assert_allclose(other.endpoint, expected, rtol=1e-7)


LAMBDA = np.array([1.0, 3.0])
QUADRATIC = GradientField.from_loss(lambda t, _: 0.5 * jnp.sum(jnp.asarray(LAMBDA) * t**2))


def test_gradient_descent_is_the_geometric_sequence() -> None:
    eta, theta0 = 0.1, np.array([1.0, -2.0])
    descent = FlowOptions(solver=GradientDescent(eta), stop=StopRule(max_steps=30))
    path = flow(QUADRATIC, theta0, descent, ts=np.linspace(0.0, 3.0, 11))
    k = 3 * np.arange(11)
    np.testing.assert_allclose(path.thetas, (1 - eta * LAMBDA) ** k[:, None] * theta0, rtol=1e-12)
    np.testing.assert_allclose(path.ts, eta * k, rtol=1e-12)
    every = flow(QUADRATIC, theta0, descent)
    assert len(every.thetas) == 31 and every.status is Outcome.NOT_CONVERGED
    euler = FlowOptions(solver="Euler", controller=ConstantStep(eta), stop=StopRule(t_max=3.0))
    same = flow(QUADRATIC, theta0, euler, ts=np.linspace(0.0, 3.0, 11))
    np.testing.assert_allclose(same.thetas, path.thetas, rtol=1e-10)


def test_a_field_flow_from_a_tiny_start_is_no_divergence_when_it_grows() -> None:
    """Gradient descent on ``½‖θ − (5, 5)‖²`` from ``θ0 = (10⁻⁶, 10⁻⁶)``: the iterates are
    ``5 − (5 − 10⁻⁶)(1 − η)^k``, so the run ends at ``(5, 5)``, five million times its start's
    norm; a field has no box, and its divergence radius is taken from the default range of its
    parameters, not from the start alone (small initializations are what training starts
    from)."""
    target = np.array([5.0, 5.0])
    bowl = GradientField.from_loss(lambda t, _: 0.5 * jnp.sum((t - jnp.asarray(target)) ** 2))
    descent = FlowOptions(solver=GradientDescent(0.5), stop=StopRule(max_steps=200))
    path = flow(bowl, np.array([1e-6, 1e-6]), descent)
    assert path.status is not Outcome.DIVERGED
    np.testing.assert_allclose(path.thetas[-1], target, atol=1e-6)


def test_a_constant_step_on_a_landscape_is_in_units_of_its_time_scale(well) -> None:
    """Euler with ``ConstantStep(dt)`` on a landscape is gradient descent with the step
    ``η = dt·ℓ/g`` of the flow of ``L`` (its scales, :func:`gradflow.loss_scales`), one
    trajectory or in a batch; on ``(x² − 1)² + y²`` the y-coordinate is then ``(1 − 2η)^k``."""
    scales = gradflow.loss_scales(well)
    eta = 0.01
    dt = eta * scales.gradient / scales.length
    euler = FlowOptions(
        solver="Euler", controller=ConstantStep(dt), stop=StopRule(t_max=40 * dt, gtol=1e-12)
    )
    descent = FlowOptions(solver=GradientDescent(eta), stop=StopRule(max_steps=40))
    one = flow(well, [0.5, 1.0], euler)
    gd = flow(well, [0.5, 1.0], descent)
    batch = flow_endpoints(well, [[0.5, 1.0], [-0.5, 1.0]], euler, progress=False)
    assert one.endpoint[1] == pytest.approx((1 - 2 * eta) ** 40, rel=1e-9)
    np.testing.assert_allclose(gd.endpoint, one.endpoint, rtol=1e-9)
    np.testing.assert_allclose(batch.endpoints[0], one.endpoint, rtol=1e-9)
    np.testing.assert_allclose(batch.endpoints[1], one.endpoint * [-1, 1], rtol=1e-9)


@pytest.fixture(scope="module")
def bowl() -> gradflow.BoundModel:
    """``½(x² + 3y²)``: gradient descent gives ``(1 − η)^k x0`` and ``(1 − 3η)^k y0``."""
    return ReducedModel("bowl", (x, y), (x**2 + 3 * y**2) / 2).bind()


def _geometric(eta: float, start: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Iterates ``k`` (shape ``(n,)``) of gradient descent on the bowl, shape ``(n, 2)``."""
    return (1 - eta * LAMBDA) ** np.asarray(k)[:, None] * start


def test_gradient_descent_in_a_batch_stops_at_the_first_iterate_that_meets_the_rule(bowl):
    """Each member stops at the first ``k`` whose iterate meets the stop rule, worked out from
    the geometric sequence: ``‖∇L‖₂ ≤ gtol·g``, the loss below the decision level, or beyond
    the divergence radius (``η = 0.7 > 2/3``: the y-coordinate grows as ``(−1.1)^k``); a member
    that meets none stops at the budget ``⌊t_max/η⌋`` (``t_max`` in units of the time scale
    ``ℓ/g``, ``η`` in the loss's own time).  The same starts in the reverse order
    give the same endpoints."""
    g = gradflow.loss_scales(bowl).gradient
    start = np.array([1.0, -2.0])
    k = np.arange(400)
    path = _geometric(0.1, start, k)
    grads = np.linalg.norm(path * LAMBDA, axis=1)
    losses = 0.5 * np.sum(LAMBDA * path**2, axis=1)

    def first(mask: np.ndarray) -> int:
        return int(np.argmax(mask))

    steady = FlowOptions(solver=GradientDescent(0.1), stop=StopRule(gtol=1e-6, max_steps=10_000))
    ends = flow_endpoints(bowl, [start, -start], steady, progress=False, escape_check=False)
    kg = first(grads <= 1e-6 * g)
    assert list(ends.steps) == [kg, kg] and np.all(ends.status == Outcome.CONVERGED)
    np.testing.assert_allclose(ends.endpoints, [path[kg], -path[kg]], rtol=1e-12)
    np.testing.assert_allclose(ends.times, [0.1 * kg] * 2, rtol=1e-12)

    decided = flow_endpoints(bowl, [start], steady, decide_below=0.01, progress=False)
    kd = first(losses < 0.01)
    assert decided.steps[0] == kd and decided.status[0] == Outcome.GLOBAL_MIN

    scales = gradflow.loss_scales(bowl)
    short = steady.with_stop(t_max=2.05 * scales.gradient / scales.length)
    budget = flow_endpoints(bowl, [start], short, progress=False)
    assert budget.steps[0] == 20 and budget.status[0] == Outcome.NOT_CONVERGED
    np.testing.assert_allclose(budget.endpoints[0], path[20], rtol=1e-12)

    wild = FlowOptions(solver=GradientDescent(0.7), stop=StopRule(divergence_radius=100.0))
    blown = flow_endpoints(bowl, [start], wild, progress=False)
    kb = first(np.linalg.norm(_geometric(0.7, start, k), axis=1) > 100)
    assert blown.steps[0] == kb and blown.status[0] == Outcome.DIVERGED

    starts = np.array([[1.0, -2.0], [0.3, 0.9], [-1.5, 0.2], [2.0, 2.0]])
    forward = flow_endpoints(bowl, starts, steady, progress=False, escape_check=False)
    backward = flow_endpoints(bowl, starts[::-1], steady, progress=False, escape_check=False)
    np.testing.assert_array_equal(backward.endpoints[::-1], forward.endpoints)
    np.testing.assert_array_equal(backward.steps[::-1], forward.steps)


def test_a_batch_resumed_at_its_stopping_times_runs_on_as_if_it_never_stopped(bowl):
    """Descent (η = 0.1) from (1, −2) with the flow-time budget 2.05 stops at the 20th iterate
    of the geometric sequence, t = 2.  Started instead from its 5th iterate at ``t0 = 0.5``, it
    takes the 15 steps left and stops at the same iterate and time; started at ``t0 = 2`` it
    has no step left.  A start time below 0, not finite, or not one per start is one line."""
    scales = gradflow.loss_scales(bowl)
    start = np.array([1.0, -2.0])
    path = _geometric(0.1, start, np.arange(21))
    short = FlowOptions(
        solver=GradientDescent(0.1),
        stop=StopRule(gtol=1e-12, t_max=2.05 * scales.gradient / scales.length),
    )
    resumed = flow_endpoints(
        bowl, [path[5], path[20]], short, t0=[0.5, 2.0], progress=False, escape_check=False
    )
    assert list(resumed.steps) == [15, 0]
    assert np.all(resumed.status == Outcome.NOT_CONVERGED)
    np.testing.assert_allclose(resumed.endpoints, [path[20], path[20]], rtol=1e-12)
    np.testing.assert_allclose(resumed.times, [2.0, 2.0], rtol=1e-12)
    for bad in (-1.0, np.nan, [0.5, 0.5, 0.5]):
        with pytest.raises(GradflowError, match="t0 must be a finite flow time"):
            flow_endpoints(bowl, [path[5], path[20]], short, t0=bad, progress=False)


def test_gradient_descent_chatters_across_a_kink_and_follows_the_sliding_motion() -> None:
    """On ``|x| + ½(y − 1)²`` the flow from ``(0.5, 3)`` reaches the kink ``x = 0`` at
    ``t = 0.5`` and slides on it with ``y(t) = 1 + 2e^{−t}``.  Gradient descent with step
    ``η = 0.01`` steps ``x`` by ``∓η`` until it crosses 0, then alternates across it
    (``|x| < η``), while ``y`` is the geometric sequence ``1 + 2(1 − η)^k``, which tends to
    the sliding solution as ``η → 0``: at ``t = 2`` (200 steps) it is within ``η`` of it, and
    the budget ran out on the kink (``NON_SMOOTH``)."""
    kinked = ReducedModel("kink", (x, y), sp.Abs(x) + (y - 1) ** 2 / 2).bind()
    eta = 0.01
    scales = gradflow.loss_scales(kinked)
    two = StopRule(gtol=1e-12, t_max=2.0 * scales.gradient / scales.length, max_steps=10**4)
    descent = FlowOptions(solver=GradientDescent(eta), stop=two)
    end = flow_endpoints(kinked, [[0.5, 3.0]], descent, progress=False, slide_on_kinks=False)
    assert end.steps[0] == 200 and end.status[0] == Outcome.NON_SMOOTH
    x_end, y_end = end.endpoints[0]
    assert abs(x_end) < eta
    assert y_end == pytest.approx(1 + 2 * (1 - eta) ** 200, rel=1e-12)
    assert abs(y_end - (1 + 2 * np.exp(-2.0))) < eta


def test_options_that_do_not_fit_are_one_line_errors(well) -> None:
    with pytest.raises(GradflowError, match="GradientDescent takes its step"):
        FlowOptions(solver=GradientDescent(0.1), controller=PID())
    with pytest.raises(GradflowError, match="lr = 0"):
        GradientDescent(0)
    with pytest.raises(GradflowError, match="rtol = -1"):
        PID(rtol=-1)
    with pytest.raises(GradflowError, match="max_steps = 0"):
        StopRule(max_steps=0)
    with pytest.raises(GradflowError, match="kη"):
        flow(QUADRATIC, [1.0, 1.0], FlowOptions(solver=GradientDescent(0.1)), ts=[0.0, 0.15])
    with pytest.raises(GradflowError, match="own args"):
        flow(well, [0.5, 1.0], args=1.0)
    with pytest.raises(GradflowError, match="PID controller"):
        _ = FlowOptions(solver="Euler", controller=ConstantStep(0.1)).rtol


def test_the_float32_pass_runs_with_custom_options_and_keeps_the_labels(well, monkeypatch):
    """Given stages of its own (an explicit pair, then an implicit solver for what stalls at the
    explicit one's stability limit), a basin map still runs its float32 pass first, and its
    labels are those of the float64-only map: the x < 0 half goes to (−1, 0), the x > 0 half to
    (1, 0), the line x = 0 to the saddle."""
    tight = PID(rtol=1e-7, atol=1e-9)
    options = (
        FlowOptions(solver="Tsit5", controller=tight, stop=StopRule(max_steps=1_000)),
        FlowOptions(solver="Kvaerno5", controller=tight),
    )
    region = gradflow.Region.of(well, grid=21, box=(-2, 2, -1.5, 1.5))
    dtypes = []
    real = gradflow.flow_endpoints

    def spy(*args, **kwargs):
        dtypes.append(kwargs.get("dtype", np.float64))
        return real(*args, **kwargs)

    monkeypatch.setattr("gradflow._basins.basins.flow_endpoints", spy)
    fast = gradflow.basins(well, region=region, options=options, progress=False)
    assert dtypes[0] is np.float32
    dtypes.clear()
    slow = gradflow.basins(
        well, region=region, options=options, progress=False, float32_first=False
    )
    assert np.float32 not in dtypes
    np.testing.assert_array_equal(fast.labels, slow.labels)
    np.testing.assert_array_equal(fast.attractor_ids, slow.attractor_ids)
    xs = np.broadcast_to(fast.xs, fast.attractor_ids.shape)
    point = {a.id: tuple(np.round(a.point, 6)) for a in fast.attractors}
    assert {point[i] for i in fast.attractor_ids[xs < 0]} == {(-1.0, 0.0)}
    assert {point[i] for i in fast.attractor_ids[xs > 0]} == {(1.0, 0.0)}
    assert {point[i] for i in fast.attractor_ids[xs == 0]} == {(0.0, 0.0)}
