"""The flow that slides along kinks (:func:`gradflow.slide`), on losses whose solution is known.

Every expected value is worked out by hand from Filippov's solution, the minimum-norm element of
the subdifferential (a sliding surface's one-sided fields both point into it; a crossed one's
both point across):

- ``|x| + ½(y - 1)²`` from ``(0.5, 3)``: ``x' = -1`` until ``x = 0`` at ``t = 0.5``; there the
  side ``x < 0`` has ``x' = +1``, so the flow slides on ``x = 0`` (slope ``s = 0``), while
  ``y = 1 + 2e^{-t}`` throughout.
- ``|x| + 2|y| + ½(z - 1)² + ½(x + y)`` from ``(1, 2, 3)``: ``x' = -3/2`` (``x > 0``) against
  ``+1/2`` (``x < 0``), ``y' = -5/2`` against ``+3/2``: ``x`` reaches its kink at ``t = 2/3``,
  ``y`` at ``t = 4/5``, both slide, ``z = 1 + 2e^{-t}``.
- ``|x| + ½(x + 2)² + ½(y - 1)²`` from ``(1, 3)``: ``x' = -(x + 3)`` for ``x > 0`` and
  ``-(x + 1)`` for ``x < 0``, both negative at ``x = 0``: the flow crosses at
  ``t₁ = ln(4/3)`` (``x + 3 = 4e^{-t}``), then ``x + 1 = e^{-(t - t₁)}``; it never slides.
- ``|x² + y² - 1| - x`` from ``(0, 1)``, on the unit circle: the jump of the gradient across it
  is ``2·∇(r²) = 4(x, y)``, larger than the rest of the gradient, so the flow slides on the
  circle, where the tangential part of ``-∇(-x) = (1, 0)`` gives the angle ``φ' = -sin φ``:
  ``tan(φ/2) = tan(φ₀/2)e^{-t}``, ``φ(t) = 2 atan(e^{-t})`` from ``φ₀ = π/2``.
"""

from __future__ import annotations

import logging

import diffrax
import jax
import numpy as np
import pytest
import sympy as sp

import gradflow
from gradflow import PID, FlowOptions, Outcome, ReducedModel, StopRule

x, y, z = sp.symbols("x y z", real=True)
TIGHT = FlowOptions(controller=PID(rtol=1e-10, atol=1e-12), stop=StopRule(gtol=1e-9))


def model(loss: sp.Expr, params=(x, y)) -> gradflow.BoundModel:
    return ReducedModel("kinked", params, loss).bind()


@pytest.fixture(scope="module")
def one_kink() -> gradflow.BoundModel:
    return model(sp.Abs(x) + (y - 1) ** 2 / 2)


def test_a_flow_slides_on_a_kink_as_its_closed_form(one_kink) -> None:
    options = FlowOptions(
        controller=PID(rtol=1e-10, atol=1e-12), stop=StopRule(gtol=1e-9, t_max=3.0)
    )
    run = gradflow.slide(one_kink.kinks, [0.5, 3.0], one_kink.args, options, record=True)
    assert run.status is Outcome.NOT_CONVERGED and run.time == pytest.approx(3.0)
    np.testing.assert_allclose(run.thetas[:, 0], np.maximum(0.5 - run.ts, 0.0), atol=1e-6)
    np.testing.assert_allclose(run.thetas[:, 1], 1 + 2 * np.exp(-run.ts), atol=1e-6)
    assert run.sliding_time == pytest.approx(2.5, abs=1e-6) and run.surfaces == 1
    on = run.ts[run.thetas[:, 0] == 0.0]
    assert on[0] == pytest.approx(0.5, abs=1e-6) and run.steps < 300


def test_two_kinks_slide_together() -> None:
    loss = sp.Abs(x) + 2 * sp.Abs(y) + (z - 1) ** 2 / 2 + (x + y) / 2
    bound = model(loss, (x, y, z))
    options = FlowOptions(
        controller=PID(rtol=1e-10, atol=1e-12), stop=StopRule(gtol=1e-9, t_max=4.0)
    )
    run = gradflow.slide(bound.kinks, [1.0, 2.0, 3.0], bound.args, options, record=True)
    t = run.ts
    np.testing.assert_allclose(run.thetas[:, 0], np.maximum(1 - 1.5 * t, 0.0), atol=1e-6)
    np.testing.assert_allclose(run.thetas[:, 1], np.maximum(2 - 2.5 * t, 0.0), atol=1e-6)
    np.testing.assert_allclose(run.thetas[:, 2], 1 + 2 * np.exp(-t), atol=1e-6)
    assert run.surfaces == 2 and run.sliding_time == pytest.approx(4 - 2 / 3, abs=1e-6)


def test_a_kink_the_flow_crosses_is_crossed() -> None:
    bound = model(sp.Abs(x) + (x + 2) ** 2 / 2 + (y - 1) ** 2 / 2)
    options = FlowOptions(
        controller=PID(rtol=1e-10, atol=1e-12), stop=StopRule(gtol=1e-9, t_max=3.0)
    )
    run = gradflow.slide(bound.kinks, [1.0, 3.0], bound.args, options, record=True)
    t, t1 = run.ts, np.log(4 / 3)
    exact = np.where(t < t1, 4 * np.exp(-t) - 3, np.exp(-(t - t1)) - 1)
    np.testing.assert_allclose(run.thetas[:, 0], exact, atol=1e-6)
    np.testing.assert_allclose(run.thetas[:, 1], 1 + 2 * np.exp(-t), atol=1e-6)
    assert run.sliding_time == 0.0 and run.surfaces == 0


def test_a_flow_slides_on_a_curved_kink() -> None:
    bound = model(sp.Abs(x**2 + y**2 - 1) - x)
    options = FlowOptions(
        controller=PID(rtol=1e-10, atol=1e-12), stop=StopRule(gtol=1e-9, t_max=2.0)
    )
    run = gradflow.slide(bound.kinks, [0.0, 1.0], bound.args, options, record=True)
    phi = 2 * np.arctan(np.exp(-run.ts))
    np.testing.assert_allclose(run.thetas, np.stack([np.cos(phi), np.sin(phi)], 1), atol=1e-6)


def test_away_from_kinks_it_takes_the_path_of_the_smooth_solver() -> None:
    """``|x| + (y² - 1)²`` from ``(3, 0.5)`` for ``t ≤ 1``: ``x = 3 - t`` never reaches its kink,
    and ``y`` follows the double well's flow; diffrax's Tsit5 at the same tolerances gives the
    same endpoint."""
    bound = model(sp.Abs(x) + (y**2 - 1) ** 2)
    options = FlowOptions(
        solver="Tsit5", controller=PID(rtol=1e-10, atol=1e-12), stop=StopRule(gtol=1e-12, t_max=1.0)
    )
    run = gradflow.slide(bound.kinks, [3.0, 0.5], bound.args, options)
    smooth = gradflow.flow(bound.field, [3.0, 0.5], options, args=bound.args)
    assert run.status is smooth.status is Outcome.NOT_CONVERGED
    np.testing.assert_allclose(run.endpoint, smooth.endpoint, atol=1e-8)
    assert run.endpoint[0] == pytest.approx(2.0, abs=1e-9)


def test_a_run_whose_budget_ends_on_a_kink_says_so(one_kink) -> None:
    options = FlowOptions(
        controller=PID(rtol=1e-10, atol=1e-12), stop=StopRule(gtol=1e-9, max_steps=40)
    )
    run = gradflow.slide(one_kink.kinks, [0.5, 3.0], one_kink.args, options)
    assert run.status is Outcome.NON_SMOOTH and run.endpoint[0] == 0.0 and run.time > 0.5


def test_flow_continues_a_stalled_run_along_the_kink(one_kink) -> None:
    """The engine's own flow stalls where it reaches ``x = 0`` (``y = 1 + 2e^{-1/2}``); it is
    continued along the kink to the minimum ``(0, 1)``, where ``∂L ∋ 0``."""
    path = gradflow.flow(one_kink, [0.5, 3.0], TIGHT)
    assert path.status is Outcome.CONVERGED
    np.testing.assert_allclose(path.endpoint, [0.0, 1.0], atol=1e-7)
    at = np.searchsorted(path.ts, 2.0)
    assert path.thetas[at, 1] == pytest.approx(1 + 2 * np.exp(-path.ts[at]), abs=1e-6)


def test_a_kink_the_slide_does_not_cover_is_still_reported() -> None:
    """``||x| - 1|`` has a kink inside another, which the sliding form does not cover: from
    ``(0.5, 0)``, where it is ``1 - |x|``, ``x`` runs to ``x = 1`` (``x' = 1``), beyond which
    ``x' = -1``; the flow stalls there and says so."""
    outer = sp.Abs(sp.Abs(x) - 1)
    bound = model(outer + (y - 1) ** 2)
    assert str(outer) in bound.nonsmooth_terms and bound.kinks is None
    path = gradflow.flow(
        bound, [0.5, 0.0], FlowOptions(solver=diffrax.Tsit5(), stop=StopRule(max_steps=2000))
    )
    assert path.status is Outcome.NON_SMOOTH and path.kink == str(outer)
    assert path.endpoint[0] == pytest.approx(1.0, abs=1e-6)


def test_a_kink_split_in_two_close_ones_is_crossed_then_slid_on() -> None:
    """``|x| + ½|x - ε| + ½(y - 1)²`` from ``(0.5, 3)``, ``ε = 10⁻⁷`` (one kink split into two,
    as noise splits a layer's coincident kinks): ``x' = -3/2`` above ``ε``, ``-1/2`` between the
    kinks (both fields point down: ``x = ε`` is crossed), ``+3/2`` below 0 (``x = 0`` slides).
    So ``x = 0.5 - 1.5t`` to ``t₁ = (0.5 - ε)/1.5``, ``x = ε - (t - t₁)/2`` to ``t₁ + 2ε``,
    then 0; ``y = 1 + 2e^{-t}``.  The two kinks are met one after the other, at tight
    tolerances and at the fate map's (``rtol = 10⁻⁶``), the path within the tolerance of the
    exact one."""
    eps = 1e-7
    bound = model(sp.Abs(x) + sp.Abs(x - eps) / 2 + (y - 1) ** 2 / 2)
    t1 = (0.5 - eps) / 1.5
    for rtol, atol, tol in ((1e-10, 1e-12, 1e-6), (1e-6, 1e-9, 1e-5)):
        options = FlowOptions(
            controller=PID(rtol=rtol, atol=atol), stop=StopRule(gtol=1e-9, t_max=3.0)
        )
        run = gradflow.slide(bound.kinks, [0.5, 3.0], bound.args, options, record=True)
        t = run.ts
        exact = np.where(t < t1, 0.5 - 1.5 * t, np.maximum(eps - (t - t1) / 2, 0.0))
        np.testing.assert_allclose(run.thetas[:, 0], exact, atol=tol)
        np.testing.assert_allclose(run.thetas[:, 1], 1 + 2 * np.exp(-t), atol=tol)
        assert run.surfaces == 1 and run.sliding_time == pytest.approx(3 - t1, abs=1e-5)


def test_many_close_kinks_are_crossed_down_to_their_median() -> None:
    """``(1/21) Σ_k |x - kδ|`` (``k = 0…20``, ``δ = 10⁻³``) ``+ ½(y - 1)²``, the absolute value
    of a convex function that is the maximum of 22 affine pieces, from ``(0.5, 3)``: between
    the kinks ``c_j = jδ`` and ``c_{j+1}`` the slope is ``((j + 1) - (20 - j))/21``, so ``x``
    falls at speed ``(2j - 19)/21`` (1 above every kink) through 10 kinks, each crossed, and
    slides on the median ``c_10 = 0.01``, where the field below points up (speed ``1/21``)."""
    delta, count = 1e-3, 21
    loss = sp.Add(*[sp.Abs(x - sp.Rational(k, 1000)) for k in range(count)]) / count
    bound = model(loss + (y - 1) ** 2 / 2)
    options = FlowOptions(
        controller=PID(rtol=1e-10, atol=1e-12), stop=StopRule(gtol=1e-9, t_max=2.0)
    )
    run = gradflow.slide(bound.kinks, [0.5, 3.0], bound.args, options, record=True)
    knots_x, knots_t = [0.5, 20 * delta], [0.0, 0.5 - 20 * delta]
    for j in range(19, 9, -1):
        knots_x.append(j * delta)
        knots_t.append(knots_t[-1] + delta * count / (2 * j - 19))
    exact = np.interp(run.ts, knots_t, knots_x)
    np.testing.assert_allclose(run.thetas[:, 0], exact, atol=1e-6)
    np.testing.assert_allclose(run.thetas[:, 1], 1 + 2 * np.exp(-run.ts), atol=1e-6)
    assert run.surfaces == 1 and run.sliding_time == pytest.approx(2 - knots_t[-1], abs=1e-5)


def test_a_loss_scaled_by_c_slides_along_the_same_path_c_times_faster(one_kink) -> None:
    """``c·L`` has the flow of ``L`` in the time ``c·t``: from ``(0.5, 3)`` the flow of
    ``4(|x| + ½(y - 1)²)`` at ``t = 0.5`` is that of ``L`` at ``t = 2`` (``x = 0``,
    ``y = 1 + 2e^{-2}``), having slid for ``1.5/4``."""
    scaled = model(4 * (sp.Abs(x) + (y - 1) ** 2 / 2))
    ends = []
    for bound, t_max in ((one_kink, 2.0), (scaled, 0.5)):
        options = FlowOptions(
            controller=PID(rtol=1e-10, atol=1e-12), stop=StopRule(gtol=1e-9, t_max=t_max)
        )
        ends.append(gradflow.slide(bound.kinks, [0.5, 3.0], bound.args, options))
    np.testing.assert_allclose(ends[0].endpoint, [0.0, 1 + 2 * np.exp(-2.0)], atol=1e-7)
    np.testing.assert_allclose(ends[1].endpoint, ends[0].endpoint, atol=1e-7)
    assert ends[1].sliding_time == pytest.approx(ends[0].sliding_time / 4, abs=1e-7)


def test_one_step_program_serves_every_step_size_and_tolerance(caplog) -> None:
    """The slide's Tsit5 step takes its step size and tolerances as float64 arguments: runs at
    three pairs of tolerances, each with steps of many sizes, lower it once for the kinks (a
    step of the full transformer takes about a second to compile), and each run still follows
    the closed form ``x = max(0.5 − t, 0)``, ``y = 1 + 2e^{−t}`` to its tolerance."""
    fresh = model(sp.Abs(x) + (y - 1) ** 2 / 2)
    with jax.log_compiles(True), caplog.at_level(logging.WARNING):
        for rtol in (1e-6, 1e-8, 1e-10):
            options = FlowOptions(
                controller=PID(rtol=rtol, atol=rtol / 100), stop=StopRule(gtol=1e-9, t_max=3.0)
            )
            run = gradflow.slide(fresh.kinks, [0.5, 3.0], fresh.args, options, record=True)
            exact = np.stack([np.maximum(0.5 - run.ts, 0.0), 1 + 2 * np.exp(-run.ts)], axis=1)
            np.testing.assert_allclose(run.thetas, exact, atol=1e3 * rtol)
            assert run.steps > 10
    lowered = [r for r in caplog.records if r.getMessage().startswith("Compiling jit(step)")]
    assert len(lowered) == 1
