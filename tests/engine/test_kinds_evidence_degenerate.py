"""Kinds at degenerate critical points, decided on the splitting lemma's reduced function, with
their evidence; and kinds that do not change when the loss is scaled or shifted.

Each right answer is worked out by hand in the test's docstring.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow

PEANO = "(y - x**2)*(y - 2*x**2)"
MSV = "(4*(1 - x**2 - y**2)**2 + 2*(x**2 - 2)**2 + ((x + y)**2 - 1)**2 + ((x - y)**2 - 1)**2)/6"


def bound(text: str) -> gradflow.BoundModel:
    return gradflow.loss_model(text, params=("x", "y")).bind()


def kind_at(text: str, point: tuple[float, float]) -> str:
    return str(gradflow.classify_points(bound(text), np.array([point]), None).kinds[0])


@pytest.mark.parametrize(
    "text", ["x**3 + y**2", "1e-6*(x**3 + y**2) + 10", "x**3 + y**2 + 1e7", "1e6*(x**3 + y**2)"]
)
def test_a_cubic_saddle_stays_a_saddle_when_the_loss_is_scaled_or_shifted(text: str) -> None:
    """``L = c(x³ + y²) + d`` with ``c > 0``: ``∇L = c(3x², 2y)`` vanishes only at the origin, the
    Hessian is ``diag(0, 2c)`` (one zero eigenvalue, along ``x``), and ``L − L(0) = c x³`` takes
    both signs along ``x``: a degenerate saddle for every ``c > 0`` and every constant ``d``."""
    sets = gradflow.critical_sets(bound(text))
    (origin,) = [s for s in sets if np.allclose(s.sample, 0.0)]
    assert origin.kind == "saddle"
    assert origin.degenerate and origin.morse_index == 0
    assert origin.evidence is not None and not origin.evidence.proven
    assert "degenerate" in origin.evidence.reason


def test_peano_surface_is_no_minimum() -> None:
    """Peano: ``L = (y − x²)(y − 2x²) = y² − 3x²y + 2x⁴``.  At the origin ``∇L = 0`` and the
    Hessian is ``diag(0, 2)``.  Along any line ``y = mx``, ``L = m²x² − 3m x³ + 2x⁴ ≥ 0`` near 0,
    so line probes see a minimum; the reduced function minimises over ``y``: ``∂L/∂y = 0`` at
    ``y = 1.5x²``, where ``L = 2.25x⁴ − 4.5x⁴ + 2x⁴ = −x⁴/4``.  So a degenerate saddle, and at
    the probe radius ``r = 0.01`` the reduced function falls by ``r⁴/4 = 2.5·10⁻⁹``."""
    classes = gradflow.classify_points(bound(PEANO), np.zeros((1, 2)), None)
    assert classes.kinds[0] == "saddle"
    assert classes.nullity[0] == 1
    assert classes.probed[0, 0] == pytest.approx(-(0.01**4) / 4, rel=1e-3)
    assert "reduced function falls by 2.5e-09" in classes.evidence(0).reason


@pytest.mark.parametrize("y", [1.0, -1.0])
def test_two_channel_potential_has_degenerate_saddles(y: float) -> None:
    """Metzner–Schütte–Vanden-Eijnden: at ``(0, ±1)``, ``∇L = 0`` (each term's derivative:
    ``−16(1 − x² − y²)x + 8(x² − 2)x + …`` vanish at ``x = 0, y² = 1``) and ``L = (0 + 8 + 0 + 0)/6
    = 4/3``.  Along the valley the reduced function is ``4/3 − (13/9)x⁴``: no minimum, a
    degenerate saddle (Morse index 0, one zero eigenvalue along ``x``)."""
    assert kind_at(MSV, (0.0, y)) == "saddle"
    classes = gradflow.classify_points(bound(MSV), np.array([[0.0, y]]), None)
    assert classes.nullity[0] == 1 and classes.morse_index[0] == 0
    assert classes.probed[0, 0] == pytest.approx(-(13 / 9) * 0.01**4, rel=0.05)


@pytest.mark.parametrize("scale, shift", [(1.0, 0.0), (1e-6, 10.0), (1e6, 0.0)])
def test_kinds_of_a_degenerate_minimum_and_maximum_are_invariant(
    scale: float, shift: float
) -> None:
    """``L = x⁴ + y²`` has a degenerate minimum at the origin (Hessian ``diag(0, 2)``, and the
    reduced function ``x⁴`` rises); ``−x⁴ − y²`` a degenerate maximum.  Multiplying by
    ``c > 0`` and adding ``d`` changes neither."""
    lo = f"{scale}*(x**4 + y**2) + {shift}"
    hi = f"-{scale}*(x**4 + y**2) + {shift}"
    assert kind_at(lo, (0.0, 0.0)) == "local_min"
    assert kind_at(hi, (0.0, 0.0)) == "local_max"


def test_a_non_degenerate_kind_is_proven() -> None:
    """``L = x² + y² − x⁴``: ``∇L = (2x − 4x³, 2y)`` vanishes at ``(0, 0)`` and ``(±1/√2, 0)``;
    the Hessian ``diag(2 − 12x², 2)`` is ``diag(2, 2)`` at the origin (a minimum) and
    ``diag(−4, 2)`` at ``(±1/√2, 0)`` (saddles).  All three are regular, so interval arithmetic
    proves each kind; the list itself comes from a numerical search and says it is not proven
    complete."""
    sets = gradflow.critical_sets(bound("x**2 + y**2 - x**4"))
    kinds = sorted((str(s.kind), round(float(s.sample[0]), 4)) for s in sets)
    assert kinds == [("local_min", 0.0), ("saddle", -0.7071), ("saddle", 0.7071)]
    assert all(s.evidence is not None and s.evidence.proven for s in sets)
    assert sets.completeness is not None and not sets.completeness.proven
    assert "not proven complete" in sets.table()
    assert sets.metadata()["completeness"]["evidence"] == "numerical"
    assert all(s["evidence"] == "proven" for s in sets.metadata()["critical_sets"])
