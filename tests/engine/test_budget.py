"""Symbolic steps within a time budget: a step that runs out is stopped (its thread ends, its CPU
is free) and the critical sets come from the numerical search, with the reason in the report.

The losses are Lennard-Jones pair potentials ``f(r) = 4(r⁻¹² − r⁻⁶)``:

- two atoms, ``f(r)``: ``f'(r) = 4(−12r⁻¹³ + 6r⁻⁷) = 0`` at ``r⁶ = 2``, so ``r = ±2^{1/6}``,
  where ``f = 4(1/4 − 1/2) = −1``, a minimum (``f'' = 4(156r⁻¹⁴ − 42r⁻⁸) > 0`` there);
- three atoms on a line at ``0, x, y`` (``0 < x < y``), ``L = f(x) + f(y) + f(y − x)``, on which
  ``sympy.solve`` runs for minutes.  ``∂L/∂x = f'(x) − f'(y − x)`` and
  ``∂L/∂y = f'(y) + f'(y − x)``.  With ``u = y − x``: ``f'(y) > 0`` when ``y > 2^{1/6}``, so
  ``f'(u) = f'(x) < 0`` and both spacings lie below ``2^{1/6}``, where ``f'`` increases: ``x = u
  = s`` and ``f'(s) + f'(2s) = 0``, i.e. ``6s⁻⁷(1 + 2⁻⁷) = 12s⁻¹³(1 + 2⁻¹³)``:
  ``s⁶ = 2(1 + 2⁻¹³)/(1 + 2⁻⁷)`` (``s ≈ 1.12101``), ``L = 2f(s) + f(2s) ≈ −2.03112``; the
  chain's one critical point, a minimum.
"""

from __future__ import annotations

import ctypes
import gc
import json
import threading
import time

import numpy as np
import pytest
import sympy as sp

import gradflow
from gradflow._symbolic.budget import ENV, GRACE, WALL_FACTOR, OutOfTime, _Step, _Stop, within

CHAIN = "4*(x**-12 - x**-6) + 4*(y**-12 - y**-6) + 4*((y - x)**-12 - (y - x)**-6)"
BUDGET = 1.0


def lennard_jones(r: float) -> float:
    return 4 * (r**-12 - r**-6)


def spin(seconds: float) -> int:
    """Pure-Python work for about ``seconds`` of CPU time (or until stopped)."""
    start, n = time.process_time(), 0
    while time.process_time() - start < seconds:
        n += 1
    return n


def test_a_step_that_runs_out_is_stopped_and_its_thread_ends() -> None:
    """Stopped after 0.2 s of its CPU time (the process's CPU time counts it, whatever the
    load), or ten times that in wall-clock time on a starved machine; the thread is gone."""
    before = threading.active_count()
    wall, cpu = time.monotonic(), time.process_time()
    with pytest.raises(OutOfTime, match=rf"spin ran out of its 0.2 s budget \({ENV} sets it\)"):
        within("spin", spin, 60.0, seconds=0.2)
    assert time.process_time() - cpu < 0.2 + 0.5
    assert time.monotonic() - wall < 0.2 * WALL_FACTOR + GRACE + 5
    assert threading.active_count() == before


def test_a_step_that_ends_over_its_budget_before_it_is_looked_at_is_out_of_time() -> None:
    """10 ms of CPU against a 1 ms budget ends before the waiting thread's first look (every
    20 ms): it is out of time all the same, as it would be on a slower machine."""
    with pytest.raises(OutOfTime, match="spin ran out of its 0.001 s budget"):
        within("spin", spin, 0.01, seconds=0.001)
    assert within("spin", spin, 0.001, seconds=5) > 0


def churn(seconds: float) -> int:
    """Cyclic garbage for about ``seconds`` of CPU time: the automatic collections it triggers
    run in this thread, with their callbacks."""
    start, n = time.process_time(), 0
    while time.process_time() - start < seconds:
        cycle: list = []
        cycle.append(cycle)
        n += 1
    return n


def test_a_step_that_collects_garbage_is_stopped_in_its_own_code() -> None:
    """A ``gc`` callback that does Python work, as JAX's does: the stop must land in the step,
    not in the callback, where it would be reported as unraisable (an error in this suite) and
    the step would run on."""

    threads: set[str] = set()

    def callback(phase: str, info: dict) -> None:
        threads.add(threading.current_thread().name)
        spin(0.002)

    gc.callbacks.append(callback)
    try:
        with pytest.raises(OutOfTime) as stopped:
            within("churn", churn, 60.0, seconds=0.2)
        gc.collect()
    finally:
        gc.callbacks.remove(callback)
    assert stopped.value.stopped and gc.isenabled()
    assert threads == {threading.current_thread().name}


def test_a_stop_that_arrives_after_the_step_ended_stays_in_its_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The waiting thread decides to stop a step, and the step returns before the stop is
    sent: the stop arrives after the step's end.  It must not escape the step's thread (an
    unhandled thread exception), and the step's value is kept."""
    escaped: list[type] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: escaped.append(args.exc_type))
    step = _Step("sum", sum, ([1, 2, 3],))
    step.start()
    assert step.ended.wait(5)
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(step.ident), ctypes.py_object(_Stop))
    time.sleep(0.05)
    step.released.set()
    step.join(5)
    assert not step.is_alive() and escaped == [] and step.value == 6


def test_a_step_within_its_budget_gives_its_value_or_its_error() -> None:
    assert within("sum", sum, [1, 2, 3], seconds=5) == 6
    with pytest.raises(ZeroDivisionError):
        within("divide", lambda: 1 / 0, seconds=5)


@pytest.mark.parametrize("value", ["0", "-1", "inf", "soon"])
def test_a_bad_budget_is_refused(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, value)
    with pytest.raises(gradflow.GradflowError, match=rf"{ENV}='{value}'.*\(0, inf\)"):
        within("sum", sum, [1])


def test_a_solve_that_runs_out_falls_back_to_the_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """The three-atom chain: ``sympy.solve`` is stopped after its budget and the search finds
    the one minimum ``(s, 2s)``."""
    monkeypatch.setenv(ENV, str(BUDGET))
    model = gradflow.loss_model(CHAIN).bind()
    wall, cpu = time.monotonic(), time.process_time()
    assert model.symbolic_caveats and "sympy.solve(∇L = 0) ran out" in model.symbolic_caveats[0]
    steps = 2  # sympy.solve, and the proof of L ≥ 0 (which fails quickly)
    assert time.process_time() - cpu < steps * BUDGET + 1
    assert time.monotonic() - wall < steps * (BUDGET * WALL_FACTOR + GRACE) + 5
    sets = gradflow.critical_sets(model, box=model.search_box({"x": (0.8, 3), "y": (1.6, 5)}))
    s = (2 * (1 + 2**-13) / (1 + 2**-7)) ** (1 / 6)
    assert [(c.kind, c.name) for c in sets] == [("local_min", "numerical")]
    np.testing.assert_allclose(sets[0].sample, [s, 2 * s], atol=1e-9)
    assert sets[0].loss == pytest.approx(2 * lennard_jones(s) + lennard_jones(2 * s), abs=1e-12)
    assert sets.caveats == model.symbolic_caveats
    assert sets.caveats[0] in sets.table() and sets.metadata()["caveats"] == list(sets.caveats)


def test_the_fallback_on_the_command_line(cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two atoms with a budget too small for any solve: the search finds ``r = ±2^{1/6}``,
    ``L = −1``, and the report says why there is no closed form.  SymPy's cache is emptied
    before each command: a solve that finished once in this process (another test's) would
    come back from it within any budget."""
    monkeypatch.setenv(ENV, "0.001")
    sp.core.cache.clear_cache()
    run = cli("critical", "--loss", "4*(r**-12 - r**-6)", "--params", "r", "--json")
    assert run.code == 0, run.err
    report = json.loads(run.out)
    assert any("sympy.solve(∇L = 0) ran out" in caveat for caveat in report["caveats"])
    sets = sorted(report["critical_sets"], key=lambda s: s["sample"])
    assert [s["kind"] for s in sets] == ["local_min", "local_min"]
    np.testing.assert_allclose([s["sample"][0] for s in sets], [-(2 ** (1 / 6)), 2 ** (1 / 6)])
    np.testing.assert_allclose([s["loss"] for s in sets], [-1, -1])
    sp.core.cache.clear_cache()
    run = cli("critical", "--loss", "4*(r**-12 - r**-6)", "--params", "r")
    assert "ran out of its 0.001 s budget" in run.out


def test_an_answer_is_never_served_under_another_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two atoms, ``r⁶ = 2``: ``sympy.solve`` finds both minima within the default budget and
    none within a millisecond.  The same model asked again in the same process, under the other
    budget, gets that budget's answer, in either order: the symbolic steps are cached per
    budget, not per model alone."""
    two_atoms = "4*(r**-12 - r**-6)"

    def caveats(seconds: str | None) -> tuple[str, ...]:
        if seconds is None:
            monkeypatch.delenv(ENV, raising=False)
        else:
            monkeypatch.setenv(ENV, seconds)
        sp.core.cache.clear_cache()
        return gradflow.loss_model(two_atoms, ["r"]).bind().symbolic_caveats

    assert caveats(None) == ()
    hurried = caveats("0.001")
    assert any("sympy.solve(∇L = 0) ran out of its 0.001 s" in caveat for caveat in hurried)
    assert caveats(None) == ()
