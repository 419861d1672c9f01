"""The batched Runge–Kutta integrator against diffrax and against answers worked out by hand.

Batches of explicit stages (``Tsit5``) run through :class:`gradflow._flow.rk.BatchedRK`; single
trajectories (:func:`gradflow.flow`) and, with the batched path switched off, the basin
maps run through diffrax, the reference.  Losses not written for this package:

- the double well ``(x² − 1)² + y²``: minima ``(±1, 0)``, a start with ``x0 > 0`` ends at
  ``(1, 0)``;
- ``(1 − xy)²``: the flow ``ẋ = 2(1 − xy)y``, ``ẏ = 2(1 − xy)x`` conserves ``x² − y² = c``
  and the sign of ``x + y`` (``d(x + y)/dt = 2(1 − xy)(x + y)``), so it ends on ``xy = 1`` at
  ``x = s √((c + √(c² + 4))/2)``, ``y = 1/x``, ``s = sign(x0 + y0)``;
- ``x³/3 − x + y²``, unbounded below: ``(1, 0)`` is the minimum and ``(−1, 0)`` a saddle; a
  start with ``x0 > −1`` ends at ``(1, 0)``, one with ``x0 < −1`` blows up in finite time.
"""

from __future__ import annotations

import dataclasses

import diffrax
import jax.numpy as jnp
import numpy as np
import pytest

import gradflow._flow.batched as batched
from gradflow import (
    PID,
    FlowOptions,
    GradflowError,
    JaxLandscape,
    Outcome,
    Region,
    StopRule,
    basins,
    flow,
    flow_endpoints,
)
from gradflow._flow.rk import DOPRI5, TSIT5, BatchedRK, StepControl, tableau_of
from gradflow.systems import markov

OPTIONS = FlowOptions(
    solver=diffrax.Tsit5(),
    controller=PID(rtol=1e-8, atol=1e-10),
    stop=StopRule(gtol=1e-7, max_steps=4000),
)
"""Tight tolerances.  ``gtol`` is in units of the loss's gradient scale ``g`` (at most 10 for
each loss here), so a trajectory stops where ``‖∇L‖ ≤ 1e-7 g``: within ``1e-7 g / λ_min`` of a
minimum whose smallest Hessian eigenvalue is ``λ_min ≥ 2`` (each minimum here)."""

ENDPOINT_TOL = 1e-7 * 10 / 2
"""How far a stop may lie from its minimum (see ``OPTIONS``)."""

DOUBLE_WELL = JaxLandscape(lambda t, _: (t[0] ** 2 - 1) ** 2 + t[1] ** 2, ("x", "y"))
HYPERBOLA = JaxLandscape(lambda t, _: (1 - t[0] * t[1]) ** 2, ("x", "y"))
CUBIC = JaxLandscape(lambda t, _: t[0] ** 3 / 3 - t[0] + t[1] ** 2, ("x", "y"))

STARTS = np.array(
    [[0.3, 0.2], [-0.4, 0.9], [1.7, -1.1], [-2.2, -0.5], [0.05, 1.5], [2.5, 2.0], [-0.7, 0.1]]
)


def _hyperbola_end(start: np.ndarray) -> np.ndarray:
    x0, y0 = start
    c = x0**2 - y0**2
    x = np.sign(x0 + y0) * np.sqrt((c + np.sqrt(c**2 + 4)) / 2)
    return np.array([x, 1 / x])


def _expected(landscape: JaxLandscape, start: np.ndarray) -> tuple[Outcome, np.ndarray | None]:
    if landscape is DOUBLE_WELL:
        return Outcome.CONVERGED, np.array([np.sign(start[0]), 0.0])
    if landscape is HYPERBOLA:
        return Outcome.CONVERGED, _hyperbola_end(start)
    if start[0] > -1:
        return Outcome.CONVERGED, np.array([1.0, 0.0])
    return Outcome.DIVERGED, None


def test_the_pairs_are_consistent() -> None:
    """Row sums of ``a`` equal the nodes ``c``; the weights and the error weights sum to 1 and
    0; the last row of ``a`` is ``b`` (first same as last)."""
    for tab in (TSIT5, DOPRI5):
        assert np.allclose([sum(row) for row in tab.a], tab.c, atol=1e-15)
        assert sum(tab.b) == pytest.approx(1.0, abs=1e-15)
        assert sum(tab.b_error) == pytest.approx(0.0, abs=1e-15)
        assert tab.a[-1] == tab.b[:-1]
    assert tableau_of(diffrax.Tsit5()) is TSIT5 and tableau_of(diffrax.Kvaerno5()) is None
    assert tableau_of("Tsit5") is TSIT5 and tableau_of("Dopri5") is DOPRI5
    assert tableau_of("Kvaerno5") is None


def test_a_solver_given_by_name_is_the_diffrax_solver() -> None:
    """``FlowOptions(solver="Tsit5")`` integrates exactly as ``solver=diffrax.Tsit5()``; the
    names are diffrax's but for the default ``Rodas4``, gradflow's own, and an unknown one is
    refused naming the choices."""
    named = dataclasses.replace(OPTIONS, solver="Tsit5")
    assert isinstance(named.diffrax_solver(), diffrax.Tsit5)
    assert named.metadata() == OPTIONS.metadata()
    ours = flow_endpoints(DOUBLE_WELL, STARTS, named, progress=False)
    reference = flow_endpoints(DOUBLE_WELL, STARTS, OPTIONS, progress=False)
    np.testing.assert_array_equal(ours.endpoints, reference.endpoints)
    np.testing.assert_array_equal(ours.steps, reference.steps)
    assert FlowOptions().solver == "Rodas4"
    with pytest.raises(GradflowError, match="Rodas4 is gradflow's own solver"):
        FlowOptions().diffrax_solver()
    with pytest.raises(GradflowError, match="'Tsit6': choose one of Tsit5, "):
        FlowOptions(solver="Tsit6")


@pytest.mark.parametrize("name", ["double well", "(1 - xy)^2", "cubic"])
def test_endpoints_match_the_closed_form_and_diffrax(name: str) -> None:
    landscape = {"double well": DOUBLE_WELL, "(1 - xy)^2": HYPERBOLA, "cubic": CUBIC}[name]
    ours = flow_endpoints(landscape, STARTS, OPTIONS, progress=False)
    for i, start in enumerate(STARTS):
        status, end = _expected(landscape, start)
        reference = flow(landscape, start, OPTIONS)
        assert ours.status[i] == status == reference.status, (start, ours.status[i])
        if end is not None:
            np.testing.assert_allclose(ours.endpoints[i], end, atol=ENDPOINT_TOL)
            np.testing.assert_allclose(ours.endpoints[i], reference.endpoint, atol=ENDPOINT_TOL)


def test_float32_steps_are_the_steps_diffrax_takes(monkeypatch) -> None:
    """Same tableau, controller and stop rule: the same steps, to float32 rounding (on the
    double well both stall near ``(±1, 0)`` at the loose float32 tolerances, where the step
    size sits at the stability limit; the basin maps send such members to float64)."""
    options = FlowOptions(
        solver=diffrax.Tsit5(),
        controller=PID(rtol=1e-4, atol=1e-6),
        stop=StopRule(gtol=1e-4, max_steps=300),
    )
    ours = flow_endpoints(DOUBLE_WELL, STARTS, options, progress=False, dtype=np.float32)
    monkeypatch.setattr(FlowOptions, "batched_integrator", lambda self: None)
    reference = flow_endpoints(DOUBLE_WELL, STARTS, options, progress=False, dtype=np.float32)
    np.testing.assert_array_equal(ours.steps, reference.steps)
    np.testing.assert_array_equal(ours.status, reference.status)
    np.testing.assert_allclose(ours.endpoints, reference.endpoints, atol=1e-5)
    np.testing.assert_allclose(np.abs(ours.endpoints[:, 0]), 1.0, atol=1e-3)


def test_the_canonical_basin_map_has_the_labels_diffrax_gives(monkeypatch) -> None:
    model = markov.canonical(0.7, 0.6)
    ours = basins(model, region=Region.of(model, grid=31, box=(-3, 3, -3, 3)), progress=False)
    monkeypatch.setattr(FlowOptions, "batched_integrator", lambda self: None)
    reference = basins(model, region=Region.of(model, grid=31, box=(-3, 3, -3, 3)), progress=False)
    np.testing.assert_array_equal(ours.labels, reference.labels)
    np.testing.assert_array_equal(ours.attractor_ids, reference.attractor_ids)
    converged = ours.mask("local_min")
    np.testing.assert_allclose(ours.endpoints[converged], reference.endpoints[converged], atol=1e-5)


def test_a_tail_of_few_members_runs_on_a_smaller_batch_with_the_same_steps(monkeypatch) -> None:
    """Within ``small_tails`` (a sweep), a round of at most 64 members runs on the 64-member
    program instead of padding them to the stage's 256: each member takes the same steps to
    the same status, and ends on its minimum ``(sign x0, 0)`` of the double well at the same
    point, to rounding; outside it, the same call runs padded whatever ran before."""
    starts = np.random.default_rng(1).uniform(-2, 2, size=(100, 2))
    starts = starts[np.abs(starts[:, 0]) > 0.1]
    sizes: list[int] = []
    round_size = batched._round_size
    monkeypatch.setattr(
        batched, "_round_size", lambda *a: sizes.append(round_size(*a)) or sizes[-1]
    )
    with batched.small_tails():
        small = flow_endpoints(DOUBLE_WELL, starts, OPTIONS, progress=False)
    assert batched.MIN_CHUNK in sizes
    sizes.clear()
    padded = flow_endpoints(DOUBLE_WELL, starts, OPTIONS, progress=False)
    assert batched.MIN_CHUNK not in sizes
    np.testing.assert_array_equal(small.steps, padded.steps)
    np.testing.assert_array_equal(small.status, padded.status)
    np.testing.assert_allclose(small.endpoints, padded.endpoints, rtol=0, atol=1e-13)
    ends = np.stack([np.sign(starts[:, 0]), np.zeros(len(starts))], axis=1)
    np.testing.assert_allclose(small.endpoints, ends, atol=ENDPOINT_TOL)


def test_a_member_already_at_a_critical_point_takes_no_step() -> None:
    result = flow_endpoints(DOUBLE_WELL, np.array([[1.0, 0.0], [0.5, 0.5]]), OPTIONS)
    assert result.steps[0] == 0 and result.status[0] == Outcome.CONVERGED
    assert result.steps[1] > 0
    assert jnp.allclose(result.endpoints[1], jnp.array([1.0, 0.0]), atol=ENDPOINT_TOL)


def _hyperbola_descent():
    """Tsit5 at :data:`OPTIONS`' tolerances, the descent field of ``(1 − xy)²`` and the stop
    rule ``‖∇L‖ ≤ gtol``."""
    rk = BatchedRK(TSIT5, StepControl(OPTIONS.rtol, OPTIONS.atol), OPTIONS.t_max)
    field = HYPERBOLA.field

    def descent(y, args):
        return -field.grad(y, args)

    def stop(y, args):
        small = jnp.linalg.norm(field.grad(y, args)) <= OPTIONS.gtol
        return jnp.where(small, int(Outcome.CONVERGED), int(Outcome.NOT_CONVERGED))

    return rk, descent, stop


def test_a_recorded_path_follows_the_flow_and_ends_where_advance_ends() -> None:
    """:meth:`BatchedRK.path` on ``(1 − xy)²``: every recorded vertex conserves ``x² − y²``
    (to the tolerances), the flow times increase, and the path takes the steps :meth:`advance`
    takes, to the closed-form end on ``xy = 1``."""
    rk, descent, stop = _hyperbola_descent()
    start = STARTS[2]
    ys, _, ts, n, code = rk.path(descent, stop, OPTIONS.max_steps)(jnp.asarray(start), None)
    n = int(n)
    ys, ts = np.asarray(ys), np.asarray(ts)
    assert code == Outcome.CONVERGED and 0 < n < OPTIONS.max_steps
    assert np.all(np.isinf(ts[n + 1 :])) and np.all(np.diff(ts[: n + 1]) > 0)
    path = ys[: n + 1]
    invariant = path[:, 0] ** 2 - path[:, 1] ** 2
    np.testing.assert_allclose(invariant, start[0] ** 2 - start[1] ** 2, atol=1e-6)
    np.testing.assert_allclose(path[-1], _hyperbola_end(start), atol=ENDPOINT_TOL)
    y, t, _, steps, status = rk.advance(descent, stop, OPTIONS.max_steps)(
        jnp.asarray(start[None]), jnp.zeros(1), jnp.zeros(1), None
    )
    np.testing.assert_array_equal(np.asarray(y)[0], path[-1])
    assert float(t[0]) == ts[n] and int(status[0]) == int(code) and int(steps[0]) >= n


def test_advancing_in_short_rounds_takes_the_steps_of_one_solve() -> None:
    """Passing each round's next step back continues the step-size control: on ``(1 − xy)²``,
    rounds of 3 steps end where one solve ends, after as many steps (each member's), at the
    same flow time; the endpoints are on ``xy = 1`` where the conserved ``x² − y²`` puts them."""
    rk, descent, stop = _hyperbola_descent()
    y0 = jnp.asarray(STARTS)
    zeros = jnp.zeros(len(STARTS))
    y1, t1, _, n1, code1 = rk.advance(descent, stop, OPTIONS.max_steps)(y0, zeros, zeros, None)
    short = rk.advance(descent, stop, 3)
    y, t, dt, n = y0, zeros, zeros, np.zeros(len(STARTS), dtype=int)
    for _ in range(OPTIONS.max_steps):
        y, t, dt, taken, code = short(y, t, dt, None)
        n += np.asarray(taken)
        if np.all(np.asarray(code) >= 0):
            break
    np.testing.assert_array_equal(np.asarray(code), np.asarray(code1))
    np.testing.assert_array_equal(n, np.asarray(n1))
    np.testing.assert_allclose(np.asarray(t), np.asarray(t1), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(y), np.asarray(y1), atol=1e-12)
    for start, end in zip(STARTS, np.asarray(y)):
        np.testing.assert_allclose(end, _hyperbola_end(start), atol=ENDPOINT_TOL)


def test_the_round_queue_is_first_in_first_out_across_what_was_put_in() -> None:
    """A round takes members from the front, across the arrays put in, and those still
    running join the back: the order of a single array re-concatenated every round."""
    queue = batched._Queue(np.arange(10))
    assert queue.take(4).tolist() == [0, 1, 2, 3] and queue.size == 6
    queue.put(np.array([20, 21]))
    queue.put(np.array([], dtype=int))
    assert queue.take(7).tolist() == [4, 5, 6, 7, 8, 9, 20] and queue.size == 1
    queue.put(np.array([30]))
    assert queue.take(5).tolist() == [21, 30] and queue.size == 0
