"""The proven lower bound of a loss follows an added constant and a positive scale: the loss's
constant term where the rest is proven non-negative (bounds worked out by hand)."""

from __future__ import annotations

import pytest
import sympy as sp

from gradflow._symbolic.facts import lower_bound

x, y = sp.symbols("x y", real=True)
WELL = (x**2 - 1) ** 2 + y**2


@pytest.mark.parametrize(
    ("loss", "bound"),
    [
        (WELL, 0.0),  # a sum of squares, 0 at (±1, 0)
        (sp.Float(1e-6) * WELL + 10, 10.0),  # the same, scaled and shifted: 10 at (±1, 0)
        (sp.Float(1e6) * WELL, 0.0),
        (sp.exp(x) + y**2 + 2, 2.0),  # a bound that is not attained
    ],
)
def test_the_constant_term_is_the_bound_when_the_rest_is_non_negative(loss, bound) -> None:
    assert lower_bound(loss)[0] == pytest.approx(bound, abs=1e-12)


def test_a_negative_constant_term_is_not_taken_for_the_bound() -> None:
    """``exp((x² + y² − 1)²) − 1 ≥ 0``, attained on the unit circle, but SymPy proves only the
    rest ``exp(·) ≥ 0``: the bound ``−1`` would lie below every value, so none is given."""
    assert lower_bound(sp.exp((x**2 + y**2 - 1) ** 2) - 1)[0] is None


def test_a_loss_unbounded_below_has_no_bound() -> None:
    """``x³ + y² + 5`` runs to −∞ along the negative x axis: nothing may be proven."""
    assert lower_bound(x**3 + y**2 + 5)[0] is None
