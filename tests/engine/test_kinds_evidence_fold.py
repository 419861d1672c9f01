"""A fold beside a cusp: bifurcations typed from the branches that begin and end, each branch
continued only where its position and kind are continuous.

``L = x⁴/4 − t x²/2 − t x/10 + y²/2``: ``∂L/∂x = x³ − t x − t/10``, a cubic with discriminant
``4t³ − 27(t/10)² = t²(400t − 27)/100``.  For ``t < 27/400`` one real root (a minimum), for
``t > 27/400`` three (two minima and, between them, a saddle).  At ``t = 27/400`` the new pair is
born as the double root ``3x² = t``, ``x = −√(t/3) = −3/20`` (the root of ``x³ − tx − t/10`` at
``x = −0.15``: ``−0.003375 + 0.010125 − 0.00675 = 0``): one fold, a minimum and a saddle.  At
``t = 0`` the cusp point ``x = 0`` is a triple root, but the one minimum passes through it: the
number of critical points of each kind does not change, so no bifurcation there.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow

LOSS = "x**4/4 - t*x**2/2 - t*x/10 + y**2/2"


@pytest.mark.parametrize("count", [4, pytest.param(5, marks=pytest.mark.slow)])
def test_one_fold_at_27_over_400_and_nothing_at_the_cusp(count: int) -> None:
    """With 4 cells (``t = ±1/2, ±1/6``) the cusp and the fold lie in one interval; with 5
    (``t = 0`` a cell) the cusp falls on a grid value.  Either way: one fold at ``t = 27/400``,
    at ``(−0.15, 0)``, where a minimum and a saddle begin."""
    model = gradflow.loss_model(LOSS, ("x", "y"), ["t"])
    region = gradflow.Region.of(model, grid=3, box=(-2, 2, -2, 2))
    result = gradflow.sweep(
        model, {"t": np.linspace(-0.5, 0.5, count)}, region=region, progress=False
    )
    (fold,) = result.bifurcations
    assert fold.type == "fold"
    assert fold.at["t"] == pytest.approx(27 / 400, abs=1e-6)
    np.testing.assert_allclose(fold.point, [-0.15, 0.0], atol=1e-3)
    assert sorted(fold.changes) == [("none", "min"), ("none", "saddle")]
