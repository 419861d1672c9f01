"""The width grid's share of a threshold exponent's uncertainty, worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from gradflow.systems.shallow_ntk.threshold import slope_range, width_brackets


def test_brackets_are_the_grid_widths_around_the_last_crossing_of_one_half():
    """Converged draws out of two at widths 1, 4, 16: ``(0, 2, 2)`` crosses between 1 and 4;
    ``(2, 0, 2)`` between 4 and 16 (the last crossing); ``(2, 2, 2)`` below the grid;
    ``(0, 0, 0)`` above it."""
    widths = np.array([1.0, 4.0, 16.0])
    rows = [(0, 2, 2), (2, 0, 2), (2, 2, 2), (0, 0, 0)]
    converged = np.array([[[s < k for s in range(2)] for k in row] for row in rows])
    below, above = width_brackets(widths, converged)
    np.testing.assert_array_equal(below, [1.0, 4.0, -np.inf, np.inf])
    np.testing.assert_array_equal(above, [4.0, 16.0, -np.inf, np.inf])


def test_slope_range_of_two_points_is_the_steepest_and_flattest_line_through_the_boxes():
    """Two sample counts ``N = 1, e``: the slope is ``log t₂ − log t₁``; with ``t₁ ∈ [1, e]``,
    ``t₂ ∈ [e², e³]`` it ranges over ``[2 − 1, 3 − 0] = [1, 3]``; a censored third ``N`` is left
    out, and a single bracketed ``N`` gives no slope."""
    n = np.array([1.0, np.e, np.e**2])
    below = np.array([1.0, np.e**2, np.inf])
    above = np.array([np.e, np.e**3, np.inf])
    assert slope_range(n, below, above) == pytest.approx((1.0, 3.0), abs=1e-12)
    assert all(np.isnan(slope_range(n[:1], below[:1], above[:1])))
