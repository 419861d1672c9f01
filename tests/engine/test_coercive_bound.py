"""The proven infimum of a coercive polynomial, worked out by hand.

- ``x⁴/4 − a x²/2 + y²/2``: ``∇L = (x³ − a x, y)``; for ``a > 0`` the minima ``(±√a, 0)`` with
  ``L = −a²/4`` and the saddle ``(0, 0)``.  Weights ``d = (4, 2)``: the leading form
  ``x⁴/4 + y²/2`` is least on the faces of the unit cube at ``(±1, 0)``, ``m = 1/4``; the lower
  term ``a x²/2`` has weighted degree ``1/2`` and ``S = a/2``.  So ``N_R = (2S/m)² = 16a²``
  (at least 1): at ``a = 1`` the box ``[−2, 2] × [−4, 4]``, at ``a = 1/4`` the unit box.
- ``x⁴ + y⁴ − 2xy``: ``4x³ = 2y``, ``4y³ = 2x`` give ``x = 16x⁹``, so ``x⁸ = 1/16``,
  ``x = y = ±1/√2`` with ``L = 1/4 + 1/4 − 1 = −1/2``, and the origin, a saddle (Hessian
  ``[[0, −2], [−2, 0]]``).  ``m = 1``, ``S = 2``, ``N_R = 16``: the box ``[−2, 2]²``.
- ``x²y² + x² − 2x`` is not coercive (``L = 0`` along ``x = 0``) and has no pure power of
  ``y``: the route refuses, and its minimum ``(1, 0)`` (``∂L/∂y = 2x²y``, ``∂L/∂x = 2xy² + 2x − 2``)
  stays ``local_min``: it happens to be global (``L ≥ x² − 2x ≥ −1``), which SymPy does not
  prove of the expanded form.
- ``x⁴ + y⁴ − 4x²y² + x² + y²``: the leading form is ``−2x⁴`` along ``x = y``, so ``L → −∞``;
  the origin (Hessian ``2I``) is a local minimum, never global.
- ``c·L + b`` has the bound ``c·inf L + b`` and the same kinds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from gradflow import critical_sets, loss_model
from gradflow._critical.classify import classify_points
from gradflow._critical.coercive import _coercive_box, global_bound, global_min_loss
from gradflow._symbolic.interval import arithmetic

PITCHFORK = "x**4/4 - a*x**2/2 + y**2/2"


def bound(text: str, **values: float):
    hyper = list(values)
    return global_bound(loss_model(text, ["x", "y"], hyper).bind(**values))


@pytest.mark.parametrize(
    ("text", "infimum"),
    [
        (PITCHFORK, -0.25),
        (f"1e6*({PITCHFORK})", -0.25e6),
        (f"1e-6*({PITCHFORK}) + 10", 10 - 0.25e-6),
        ("x**4 + y**4 - 2*x*y", -0.5),
    ],
)
def test_the_certified_infimum_of_a_coercive_polynomial(text: str, infimum: float) -> None:
    b = bound(text, a=1.0) if "a" in text else bound(text)
    assert b.value == pytest.approx(infimum, rel=1e-12, abs=1e-14 * abs(infimum))
    assert b.value <= infimum + 1e-15 * abs(infimum)  # a lower bound, rounded outward
    assert "leading form" in b.reason and "certificate" in b.reason


@pytest.mark.parametrize(("a", "half"), [(1.0, [2.0, 4.0]), (0.25, [1.0, 1.0])])
def test_the_box_outside_which_the_loss_exceeds_its_value_at_the_origin(a, half) -> None:
    import sympy as sp

    x, y = sp.symbols("x y")
    box, _ = _coercive_box(x**4 / 4 - sp.Float(a) * x**2 / 2 + y**2 / 2, [x, y], arithmetic("arb"))
    assert box[:, 1] == pytest.approx(half, rel=1e-8)
    assert np.all(box[:, 1] >= half)
    assert bound(PITCHFORK, a=a).value == pytest.approx(-(a**2) / 4, rel=1e-12)


@pytest.fixture(scope="module")
def pitchfork_sets():
    return critical_sets(loss_model(PITCHFORK, ["x", "y"], ["a"]).bind(a=1.0))


def test_the_pitchfork_minima_are_global_and_proven(pitchfork_sets) -> None:
    kinds = sorted(
        (s.kind, tuple(np.round(s.sample, 9)), round(s.loss, 12)) for s in pitchfork_sets
    )
    assert kinds == [
        ("global_min", (-1.0, 0.0), -0.25),
        ("global_min", (1.0, 0.0), -0.25),
        ("saddle", (0.0, 0.0), 0.0),
    ]
    for s in pitchfork_sets:
        assert s.evidence.proven
    minimum = next(s for s in pitchfork_sets if s.kind == "global_min")
    assert "leading form" in minimum.evidence.reason
    assert pitchfork_sets.bounded_below is True


def test_the_double_minimum_of_a_quartic_with_a_cross_term() -> None:
    sets = critical_sets(loss_model("x**4 + y**4 - 2*x*y", ["x", "y"]).bind())
    r = 1 / math.sqrt(2)
    got = sorted((s.kind, tuple(np.round(s.sample, 9))) for s in sets)
    assert got == [
        ("global_min", (round(-r, 9), round(-r, 9))),
        ("global_min", (round(r, 9), round(r, 9))),
        ("saddle", (0.0, 0.0)),
    ]


def test_a_polynomial_that_is_not_coercive_is_not_proven_global() -> None:
    b = bound("x**2*y**2 + x**2 - 2*x")
    assert b.value is None and "pure power of y" in b.reason
    sets = critical_sets(loss_model("x**2*y**2 + x**2 - 2*x", ["x", "y"]).bind())
    minimum = [s for s in sets if s.sample[0] == pytest.approx(1.0)]
    assert [s.kind for s in minimum] == ["local_min"]
    assert "pure power of y" in sets.table()


def test_an_indefinite_leading_form_refuses_the_proof() -> None:
    b = bound("x**4 + y**4 - 4*x**2*y**2 + x**2 + y**2")
    assert b.value is None and "≤ 0" in b.reason


def test_the_kinds_do_not_change_under_scaling_and_shifting() -> None:
    points = np.array([[-1.0, 0.0], [0.0, 0.0], [1.0, 0.0]])
    kinds = []
    for text in [PITCHFORK, f"1e6*({PITCHFORK})", f"1e-6*({PITCHFORK}) + 10"]:
        landscape = loss_model(text, ["x", "y"], ["a"]).bind(a=1.0)
        kinds.append(list(classify_points(landscape, points, global_min_loss(landscape)).kinds))
    assert kinds == [["global_min", "saddle", "global_min"]] * 3
