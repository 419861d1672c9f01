"""The global test's margin does not depend on the loss's scale, worked out by hand.

``exp((x² + y² − 1)²)``: ``∇L = 4(r² − 1) e^{(r² − 1)²} (x, y)`` vanishes on the circle ``r = 1``
(``L = e⁰ = 1``, the infimum: ``exp`` is increasing and ``(r² − 1)² ≥ 0``) and at the origin
(``L = e``, Hessian ``−4e·I``: a maximum).  On ``[−3, 3]²`` the loss reaches ``e⁶⁴``, so a
margin that is a share of the loss's scale swallows the gap ``e − 1``; the gradient margin does
not.  The end of a flow into the degenerate minimum of ``x⁴ + y⁴`` at ``(δ, δ)`` has
``L = 2δ⁴ ≤ ‖∇L‖ ℓ = 4√2 δ³ ℓ`` (``δ ≤ ℓ``): it reaches ``L ≥ 0``.
"""

from __future__ import annotations

import numpy as np
import pytest

from gradflow import loss_model
from gradflow._critical.classify import classify_points, reaches_bound
from gradflow._critical.coercive import global_min_loss
from gradflow._landscape.scales import loss_scales

CIRCLE = "exp((x**2 + y**2 - 1)**2)"
POINTS = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 0.0]])


@pytest.mark.parametrize(
    ("text", "scale", "shift"),
    [(CIRCLE, 1.0, 0.0), (f"1e6*{CIRCLE}", 1e6, 0.0), (f"1e-6*{CIRCLE} + 10", 1e-6, 10.0)],
)
def test_the_circle_is_the_global_minimum_and_the_origin_a_maximum(text, scale, shift) -> None:
    landscape = loss_model(text, ["x", "y"]).bind()
    assert global_min_loss(landscape) == pytest.approx(scale + shift, rel=1e-15)
    kinds = classify_points(landscape, POINTS, global_min_loss(landscape)).kinds
    assert list(kinds) == ["global_min", "global_min", "local_max"]


def test_the_loss_scale_is_far_above_the_gap_it_must_not_swallow() -> None:
    """The premise: ``10⁻⁹`` of the loss scale exceeds ``e − 1``, so the old margin failed."""
    landscape = loss_model(CIRCLE, ["x", "y"]).bind()
    assert 1e-9 * loss_scales(landscape).loss > np.e - 1
    assert not reaches_bound(landscape, np.zeros((1, 2)), np.array([np.e]), 1.0)[0]


@pytest.mark.parametrize("delta", [1e-3, 6e-3, 3e-2])
def test_a_point_short_of_a_degenerate_minimum_reaches_its_bound(delta) -> None:
    landscape = loss_model("x**4 + y**4", ["x", "y"]).bind()
    theta = np.array([[delta, delta]])
    assert reaches_bound(landscape, theta, np.array([2 * delta**4]), 0.0)[0]
