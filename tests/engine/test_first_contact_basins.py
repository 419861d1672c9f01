"""Portraits and basin maps name the same attractors, and what no flow can cross keeps them apart.

The canonical Markov model ``L(e, w) = Φ(e²(1 + 2w|w|))`` at ``p = 0.5, q = 0.8`` has
``c* = ln((1 - p)(1 - q)/(pq)) = ln(1/4)`` and its global minima on ``Γ*``:
``e²(1 + 2w|w|) = c*``, one branch on each side of ``e = 0``.  The line ``e = 0`` is made of
critical points, so no flow, in any metric, crosses it: ``sign(e)`` is conserved, and an
endpoint with ``e < 0`` belongs to the ``e < 0`` branch however far out it lies (both branches
run to ``|e| = ∞`` at the asymptote ``w = -1/√2``, where ``1 + 2w|w| = 0``).

A flow in a metric ``G`` stops at a line of minima: its Jacobian there is ``G⁻¹H`` with the
eigenvalues ``0`` and ``(G⁻¹)₂₂ > 0`` for ``L = y²/2``, no unstable direction, although the
symmetric part of ``G⁻¹H`` is indefinite.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import pytest

import gradflow as gf
from gradflow._critical.attractors import AttractorIndex
from gradflow.systems import markov

P, Q = 0.5, 0.8
C_STAR = math.log((1 - P) * (1 - Q) / (P * Q))
GRID = 21
CRITICAL_SAMPLES = 801
"""Samples per free axis the portrait takes on the closed-form critical sets."""


@pytest.fixture(scope="module")
def model():
    return markov.canonical(p=P, q=Q)


def gamma_branch(sign: float, e_values: np.ndarray) -> np.ndarray:
    """Points ``(e, w)`` of Γ* with ``w < 0`` beside the asymptote: ``1 - 2w² = c*/e²``."""
    w = -np.sqrt((1 - C_STAR / e_values**2) / 2)
    return np.stack([sign * np.abs(e_values), w], axis=1)


@pytest.mark.parametrize("metric", ["euclidean", pytest.param("induced", marks=pytest.mark.slow)])
def test_portrait_and_basins_label_the_same_grid_alike(model, metric):
    region = gf.Region.of(model, GRID)
    portrait = gf.portrait(model, region=region, metric=metric, progress=False)
    basin_map = gf.basins(model, region=region, metric=metric, progress=False)
    pm = portrait.basin_map
    np.testing.assert_array_equal(pm.attractor_ids, basin_map.attractor_ids)
    np.testing.assert_array_equal(pm.labels, basin_map.labels)
    ends = basin_map.endpoints[..., 0]
    for bm in (pm, basin_map):
        kinds = {a.id: a for a in bm.attractors}
        for id in np.unique(bm.attractor_ids[bm.attractor_ids >= 0]):
            a = kinds[int(id)]
            if a.kind == gf.Kind.GLOBAL_MIN:
                assert np.all(np.sign(ends[bm.attractor_ids == id]) == np.sign(a.point[0]))


def test_an_endpoint_with_negative_e_never_joins_the_positive_branch(model):
    region = gf.Region.of(model, 201)
    critical = gf.critical_sets(model, box=region.search_box(model), samples=CRITICAL_SAMPLES)
    flows = gf.in_metric(model, "induced", at=np.zeros(2))
    index = AttractorIndex(flows, critical, critical.box)
    branch = {
        float(np.sign(a.point[0])): a.id for a in index.attractors if a.kind == gf.Kind.GLOBAL_MIN
    }
    assert set(branch) == {-1.0, 1.0}
    for sign in (-1.0, 1.0):
        for e in (6.5, 10.0, 17.3, 18.0):
            point = gamma_branch(sign, np.array([e]))
            point[:, 1] += 1e-9  # where a flow stops: beside the set, 1e-9 off in w
            assert abs(point[0, 0]) > np.abs(critical.box[0]).max()
            fresh = AttractorIndex(flows, critical, critical.box)
            assert fresh.add_found(flows, point, critical.global_min_loss)[0] == branch[sign]


@pytest.mark.slow
def test_the_flow_from_the_far_corner_in_the_induced_metric_ends_on_its_branch(model):
    path = gf.flow(model, np.array([-2.5, -2.8]), metric="induced")
    assert path.reached == gf.Outcome.GLOBAL_MIN
    e, w = path.endpoint
    assert e < 0
    assert e**2 * (1 + 2 * w * abs(w)) == pytest.approx(C_STAR, rel=1e-6)


def test_a_flow_in_a_metric_stops_on_a_line_of_minima():
    g = np.array([[1.0, 0.9], [0.9, 1.0]])
    land = gf.JaxLandscape(lambda th, _: 0.5 * th[1] ** 2, ("x", "y"))
    path = gf.flow(land, np.array([1.0, 0.5]), metric=lambda th, _: jnp.asarray(g, th.dtype))
    # dx/dy = (G⁻¹)₁₂/(G⁻¹)₂₂ = -0.9 along the flow, so x ends at 1 + 0.9·0.5
    assert path.status == gf.Outcome.CONVERGED
    np.testing.assert_allclose(path.endpoint, [1.45, 0.0], atol=1e-6)
