"""The proven lower bound of a loss follows an added constant and a positive scale: the loss's
constant term plus the bound of the rest, a positive factor times it, ``exp`` of the bound of
its argument (bounds worked out by hand)."""

from __future__ import annotations

import pytest
import sympy as sp

from gradflow._symbolic.facts import lower_bound

x, y = sp.symbols("x y", real=True)
WELL = (x**2 - 1) ** 2 + y**2
CIRCLE = sp.exp((x**2 + y**2 - 1) ** 2)


@pytest.mark.parametrize(
    ("loss", "bound"),
    [
        (WELL, 0.0),  # a sum of squares, 0 at (±1, 0)
        (sp.Float(1e-6) * WELL + 10, 10.0),  # the same, scaled and shifted: 10 at (±1, 0)
        (sp.Float(1e6) * WELL, 0.0),
        (sp.exp(x) + y**2 + 2, 2.0),  # a bound that is not attained
        (WELL - 3, -3.0),  # a floor below zero, -3 at (±1, 0)
        (CIRCLE, 1.0),  # exp(u) ≥ exp(0) for u = (x² + y² − 1)² ≥ 0, 1 on the unit circle
        (CIRCLE - 1, 0.0),
        (sp.Float(1e6) * CIRCLE, 1e6),
        (sp.Float(1e-6) * CIRCLE + 10, 10 + 1e-6),
    ],
)
def test_the_constant_term_is_the_bound_when_the_rest_is_non_negative(loss, bound) -> None:
    assert lower_bound(loss)[0] == pytest.approx(bound, abs=1e-12)


def test_a_loss_unbounded_below_has_no_bound() -> None:
    """``x³ + y² + 5`` runs to −∞ along the negative x axis: nothing may be proven."""
    assert lower_bound(x**3 + y**2 + 5)[0] is None
