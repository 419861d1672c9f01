"""A C¹ kink is not overshot: L = 2y|y| + (x + 0.3)², whose gradient (2(x + 0.3), 4|y|) is
continuous while the Hessian jumps across y = 0.  Answers worked out by hand in each docstring."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow
from gradflow import Outcome

LOSS = "2*y*Abs(y) + (x + 0.3)**2"


@pytest.fixture(scope="module")
def landscape() -> gradflow.BoundModel:
    return gradflow.loss_model(LOSS, params=("x", "y")).bind()


def test_the_flow_reaches_the_kink_without_crossing_it(landscape) -> None:
    """From (0.5, 0.5): x' = -2(x + 0.3), y' = -4|y|, so x = -0.3 + 0.8e^{-2t} and
    y = 0.5e^{-4t} > 0 for all t (the field is Lipschitz, the line y = 0 invariant): the flow
    reaches (-0.3, 0) and never enters y < 0, where y' = 4|y| would carry it away.  The point
    is critical (∇L = 0) but no minimum (L = -2y² below it), so it is reached as a saddle,
    numerically (no region of attraction to certify)."""
    path = gradflow.flow(landscape, [0.5, 0.5])
    assert path.reached is Outcome.SADDLE
    np.testing.assert_allclose(path.endpoint, [-0.3, 0.0], atol=1e-7)
    assert np.all(path.thetas[:, 1] >= 0)
    np.testing.assert_allclose(path.thetas[:, 1], 0.5 * np.exp(-4 * path.ts), rtol=1e-4, atol=1e-12)


def test_the_upper_half_of_the_map_reaches_the_kink(landscape) -> None:
    """On an 11 × 11 grid of [-1, 1]²: every start with y ≥ 0 (66 of them, the row y = 0
    included, an invariant line along which x → -0.3) reaches (-0.3, 0); every start with
    y < 0 has y = y₀e^{4t} and diverges."""
    region = gradflow.Region.of(landscape, 11, box=(-1, 1, -1, 1))
    bm = gradflow.basins(landscape, region=region, progress=False)
    ys = region.points()[..., 1]
    upper = bm.attractor_ids[ys >= 0]
    assert upper.size == 66 and len(set(upper)) == 1 and upper[0] >= 0
    np.testing.assert_allclose(bm.attractors[upper[0]].point, [-0.3, 0.0], atol=1e-9)
    assert np.all(bm.labels[ys < 0] == Outcome.DIVERGED)
