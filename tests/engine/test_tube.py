"""The certified tube around a line of minima, on losses worked out by hand.

- ``L = (1 + w²) e²/2``: ``∇L = ((1 + w²) e, w e²)`` vanishes on the line ``e = 0``, whose
  transverse curvature ``∂²L/∂e² = 1 + w² ≥ 1`` never vanishes; ``∂²L/∂e∂w = 2we`` is at most
  ``2ρ|w|`` on the tube ``|e| ≤ ρ``.  A flow from ``(e₀, w₀)`` has ``|e|`` decaying at least like
  ``e^{−t}`` and ``w`` moving by at most ``2ρ|w|·|e₀|``: every end near the line is proven.
- ``L = w² e²/2``: the same line, but its transverse curvature ``w²`` vanishes at ``w = 0``, so
  the segments holding ``w = 0`` are not proven; ends at ``w = ±1`` are.
"""

from __future__ import annotations

import numpy as np

from gradflow import loss_model
from gradflow._critical.tube import SEGMENTS, tube

SPAN = np.array([[0.0, -1.0], [0.0, 1.0]])


def test_a_line_with_positive_transverse_curvature_gets_a_tube_everywhere() -> None:
    landscape = loss_model("(1 + w**2)*e**2/2", ["e", "w"]).bind()
    t = tube(landscape, np.array([0.0, 0.3]), SPAN)
    assert t is not None and t.normal == (0,) and t.free == 1
    assert np.all(t.kappa > 0.99) and np.all(t.kappa <= 2.0)  # 1 + w² on [−1, 1]
    assert np.all(t.mixed <= 2 * t.radius * np.abs(t.edges).max() * (1 + 1e-6))  # 2ρ max|w|
    ends = np.array([[1e-6, -0.9], [1e-6, 0.0], [-1e-8, 0.7], [2 * t.radius, 0.0]])
    assert t.holds(ends, np.zeros(4)).tolist() == [True, True, True, False]


def test_the_segments_where_the_curvature_vanishes_are_not_proven() -> None:
    landscape = loss_model("w**2*e**2/2", ["e", "w"]).bind()
    t = tube(landscape, np.array([0.0, 0.5]), SPAN)
    assert t is not None
    middle = SEGMENTS // 2  # the segments meeting at w = 0
    assert t.kappa[middle - 1] == 0 and t.kappa[middle] == 0
    assert t.kappa[0] > 0.9 and t.kappa[-1] > 0.9  # w² near ±1
    ends = np.array([[1e-6, 0.0], [1e-6, -0.98], [1e-6, 0.98]])
    assert t.holds(ends, np.zeros(3)).tolist() == [False, True, True]
