"""Critical sets kept between processes: the same model, values, box and options read back the
result another process wrote (the same sets, and no search); a change in any of them, or
another kind of landscape, computes again."""

from __future__ import annotations

import threading
import weakref
from pathlib import Path

import numpy as np
import pytest
import sympy

import gradflow
from gradflow._critical import search
from gradflow._critical.kept import described
from gradflow._symbolic import budget

DEPTH_TWO = "(1 - x*y)**2"
"""The depth-2 linear network: the hyperbola ``xy = 1`` of global minima (loss 0) and a saddle
at the origin (Hessian eigenvalues ±2), nothing else."""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of this test alone, and the in-process memo of critical sets emptied and
    no symbolic step run out of its budget yet, as in a new process."""
    monkeypatch.setenv("GRADFLOW_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(search, "_KNOWN", weakref.WeakKeyDictionary())
    monkeypatch.setattr(budget, "_RAN_OUT", threading.Event())
    return tmp_path


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the landscapes whose critical sets were computed, not read."""
    seen: list[str] = []
    compute = search._critical_sets

    def counted(landscape, *args):
        seen.append(landscape.name)
        return compute(landscape, *args)

    monkeypatch.setattr(search, "_critical_sets", counted)
    return seen


def _sets(expression: str = DEPTH_TWO, params=("x", "y"), **options) -> gradflow.CriticalSets:
    model = gradflow.loss_model(expression, list(params), name=expression)
    return gradflow.critical_sets(model.bind(), starts=options.pop("starts", 16), **options)


def _new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "_KNOWN", weakref.WeakKeyDictionary())


def test_a_second_process_reads_the_sets_back_without_searching(
    folder: Path, searches: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _sets()
    _new_process(monkeypatch)
    again = _sets()
    assert searches == [DEPTH_TWO]
    assert again.table() == first.table()
    for name, array in first.arrays().items():
        np.testing.assert_array_equal(again.arrays()[name], array, err_msg=name)
    saddle = next(s for s in again if s.kind == "saddle")
    np.testing.assert_allclose(saddle.points, [[0.0, 0.0]], atol=1e-9)
    np.testing.assert_allclose(
        np.sort(np.ravel(saddle.hessian_eigenvalues)), [-2.0, 2.0], atol=1e-9
    )
    assert len(list(folder.glob("critical/*.pickle"))) == 1


def test_a_changed_loss_box_or_option_is_searched_again(
    folder: Path, searches: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _sets()
    for change in ({"expression": "(1 - x*y)**2 + x**4"}, {"seed": 1}, {"starts": 17}):
        _new_process(monkeypatch)
        _sets(**change)
    _new_process(monkeypatch)
    model = gradflow.loss_model(DEPTH_TWO, ["x", "y"], name=DEPTH_TWO)
    gradflow.critical_sets(model.bind(), box=np.array([[-2.0, 2.0], [-2.0, 2.0]]), starts=16)
    assert len(searches) == 5
    assert len(list(folder.glob("critical/*.pickle"))) == 5


def test_a_file_that_cannot_be_read_is_searched_again_and_rewritten(
    folder: Path, searches: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _sets()
    (path,) = folder.glob("critical/*.pickle")
    path.write_bytes(b"not a pickle")
    _new_process(monkeypatch)
    assert _sets().table() == first.table()
    assert len(searches) == 2
    _new_process(monkeypatch)
    _sets()
    assert len(searches) == 2


def test_nothing_is_kept_with_the_cache_off_or_for_a_loss_written_in_jax(
    folder: Path, searches: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRADFLOW_CACHE_DIR", "")
    _sets()
    _new_process(monkeypatch)
    _sets()
    monkeypatch.setenv("GRADFLOW_CACHE_DIR", str(folder))
    landscape = gradflow.JaxLandscape(lambda th, _: (1 - th[0] * th[1]) ** 2, ("x", "y"))
    gradflow.critical_sets(landscape, starts=16)
    assert len(searches) == 3
    assert not list(folder.glob("critical/*"))


LENNARD_JONES = "4*(r**-12 - r**-6)"
"""Two atoms: ``L' = 0`` at ``r⁶ = 2``, ``L = −1`` (two minima, ``r = ±2^{1/6}``), which
``sympy.solve`` does not find within a millisecond."""


def test_a_result_after_a_step_ran_out_is_not_kept_and_another_budget_is_another_file(
    folder: Path, searches: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a budget too small for ``sympy.solve``, the search falls back (and says so): that
    answer depends on the machine's speed, so nothing is written, and the full budget's answer
    is never read for it; with the full budget the same minima come with no caveat, kept."""
    monkeypatch.setenv(budget.ENV, "0.001")
    sympy.core.cache.clear_cache()
    hurried = _sets(LENNARD_JONES, params=["r"])
    assert any("ran out" in caveat for caveat in hurried.caveats)
    assert budget.any_ran_out() and not list(folder.glob("critical/*"))
    monkeypatch.setattr(budget, "_RAN_OUT", threading.Event())  # a new process
    monkeypatch.delenv(budget.ENV)
    _new_process(monkeypatch)
    patient = _sets(LENNARD_JONES, params=["r"])
    assert not any("ran out" in caveat for caveat in patient.caveats)
    assert len(list(folder.glob("critical/*.pickle"))) == 1
    for sets in (hurried, patient):
        minima = sorted(float(s.points[0, 0]) for s in sets if s.kind == "local_min")
        np.testing.assert_allclose(minima, [-(2 ** (1 / 6)), 2 ** (1 / 6)], rtol=1e-9)
    monkeypatch.setenv(budget.ENV, "0.001")
    _new_process(monkeypatch)
    sympy.core.cache.clear_cache()
    assert any("ran out" in caveat for caveat in _sets(LENNARD_JONES, params=["r"]).caveats)
    assert searches == [LENNARD_JONES] * 3


def test_a_declared_model_is_described_whole_and_a_function_not_at_all() -> None:
    model = gradflow.loss_model(DEPTH_TWO, ["x", "y"], name="net")
    text = described(model)
    assert "Symbol('x'" in text and "name='net'" in text
    assert described(gradflow.loss_model(DEPTH_TWO, ["x", "y"], name="other")) != text
    assert described({"f": lambda x: x}) is None
