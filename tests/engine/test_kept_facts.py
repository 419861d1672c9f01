"""Symbolic facts kept between processes: where ``∇L`` jumps, and the surfaces where only the
Hessian jumps, are read back by a second process without SymPy; a changed loss works them out
again; an answer that took the fallback of a symbolic step out of its budget is not kept.

The loss ``|x| + y|y| + (x - 1)²``, worked out by hand: ``∇L = (sign(x) + 2(x - 1), 2|y|)``.
Across ``x = 0`` the gradient jumps by 2 (the kink of ``|x|``); across ``y = 0`` it is
continuous (``d(y|y|)/dy = 2|y|``) and only the Hessian jumps, on the surface ``y = 0``.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

import gradflow
from gradflow._flow import overshoot
from gradflow._symbolic import budget, facts

LOSS = "Abs(x) + y*Abs(y) + (x - 1)**2"


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of this test alone, with the in-process memos emptied and no symbolic
    step run out of its budget yet, as in a new process."""
    monkeypatch.setenv("GRADFLOW_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(budget, "_RAN_OUT", threading.Event())
    _new_process()
    yield tmp_path
    _new_process()


def _new_process() -> None:
    facts.jumps.cache_clear()
    overshoot._surfaces.cache_clear()


@pytest.fixture
def worked_out(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The facts SymPy worked out (not read back), by name."""
    seen: list[str] = []
    within, arguments = facts.within, overshoot._abs_arguments

    def counted_within(what, fn, *args, **kwargs):
        seen.append("jumps")
        return within(what, fn, *args, **kwargs)

    def counted_arguments(*args):
        seen.append("surfaces")
        return arguments(*args)

    monkeypatch.setattr(facts, "within", counted_within)
    monkeypatch.setattr(overshoot, "_abs_arguments", counted_arguments)
    return seen


def _facts(expression: str = LOSS) -> tuple[tuple[str, ...], str | None, np.ndarray]:
    """Where ``∇L`` jumps, and the surfaces' function at ``(x, y) = (0.5, -2)``."""
    model = gradflow.loss_model(expression, ["x", "y"], name=expression)
    terms, why = facts.jumps(model.params, model.loss)
    surfaces = overshoot._surfaces(model)
    at = None if surfaces is None else np.ravel(np.asarray(surfaces(0.5, -2.0), dtype=float))
    return terms, why, at


def test_a_second_process_reads_the_facts_back_without_sympy(
    folder: Path, worked_out: list[str]
) -> None:
    first = _facts()
    assert first[0] == ("Abs(x)",) and first[1] is None
    np.testing.assert_array_equal(first[2], [-2.0])
    assert worked_out == ["jumps", "surfaces"]
    _new_process()
    again = _facts()
    assert worked_out == ["jumps", "surfaces"]
    assert again[:2] == first[:2]
    np.testing.assert_array_equal(again[2], first[2])
    assert len(list(folder.glob("jumps/*.pickle"))) == 1
    assert len(list(folder.glob("surfaces/*.pickle"))) == 1


def test_a_changed_loss_is_worked_out_again(folder: Path, worked_out: list[str]) -> None:
    _facts()
    _new_process()
    smooth_y = _facts("Abs(x) + y**2 + (x - 1)**2")
    assert worked_out == ["jumps", "surfaces"] * 2
    assert smooth_y == (("Abs(x)",), None, None)
    assert len(list(folder.glob("jumps/*.pickle"))) == 2


def test_the_fallback_of_a_step_out_of_time_is_not_kept(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def out_of_time(what, fn, *args, **kwargs):
        budget._RAN_OUT.set()
        raise budget.OutOfTime(what, 1.0, True)

    monkeypatch.setattr(facts, "within", out_of_time)
    model = gradflow.loss_model(LOSS, ["x", "y"], name=LOSS)
    terms, why = facts.jumps(model.params, model.loss)
    assert set(terms) == {"Abs(x)", "Abs(y)"}
    assert why is not None and "every kink is taken for a jump" in why
    assert not list(folder.glob("jumps/*"))
