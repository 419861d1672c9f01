"""The evidence of a basin map's labels: the proven share beside each fraction, no set "found
by the flow" that is not a critical point, and the same labels and evidence for L, 10⁻⁶L + 10
and 10⁶L.  Every answer is worked out by hand in the test's docstring."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import gradflow
from gradflow import Outcome, ReducedModel


def basin_map(text: str, box: float, grid: int) -> gradflow.BasinMap:
    landscape = gradflow.loss_model(text, params=("x", "y")).bind()
    region = gradflow.Region.of(landscape, grid, box=(-box, box, -box, box))
    return gradflow.basins(landscape, region=region, progress=False)


def test_a_flat_minimum_of_order_eight_is_one_attractor() -> None:
    """L = (x² + y²)⁴: ∇L = 8(x² + y²)³(x, y) vanishes only at the origin, the global minimum
    (L ≥ 0 = L(0)); every start flows radially into it (r' = -8r⁷), however slowly.  One
    attractor, fraction 1, no set "found by the flow" where the slow runs stopped.  The Hessian
    vanishes there, so Krawczyk cannot isolate it, but the interval gradient excludes 0 off a
    core around it and L = r⁸ ≥ 3⁸ on the faces of the box [-3, 3]²: every endpoint (L < 4⁴ on
    the grid) is in that certified region, proven."""
    bm = basin_map("(x**2 + y**2)**4", 2.0, 21)
    reached = bm.reached()
    assert len(reached) == 1 and reached[0].fraction == 1.0
    np.testing.assert_allclose(reached[0].point, [0.0, 0.0], atol=1e-12)
    assert all(a.set != "found by the flow" for a in bm.attractors)
    assert np.all(bm.evidence == 1)


def test_a_stiff_quadratic_well_is_proven_everywhere() -> None:
    """L = x² + 10⁶y² on [-0.2, 0.2]²: one non-degenerate minimum at the origin (Hessian
    diag(2, 2·10⁶), stiffness 10⁶); its certified region (L strongly convex everywhere) holds
    every endpoint: fraction 1, proven share 1."""
    bm = basin_map("x**2 + 1e6*y**2", 0.2, 21)
    reached = bm.reached()
    assert len(reached) == 1 and reached[0].fraction == 1.0 and reached[0].proven == 1.0
    assert bm.proven_share() == 1.0
    assert all(a.set != "found by the flow" for a in bm.attractors)


def test_no_saddle_is_invented_where_there_is_no_critical_point() -> None:
    """L = e^{-x} + y² on [-2, 2]²: no critical point anywhere (∂L/∂x < 0), so no attractor;
    every start is not_converged, proven to escape (one interval proof for the whole map)."""
    bm = basin_map("exp(-x) + y**2", 2.0, 11)
    assert bm.reached() == [] and not bm.attractors
    assert np.all(bm.labels == Outcome.NOT_CONVERGED) and np.all(bm.evidence == 1)
    arrays = bm.arrays()
    assert arrays["reasons"][arrays["reason_codes"][0, 0]].startswith("proven: escaping")


@pytest.fixture(scope="module")
def double_wells() -> list[gradflow.BasinMap]:
    """The double well (x² - 1)² + y², scaled by 10⁻⁶ and shifted by 10, and scaled by 10⁶, on
    one 11 × 11 grid of [-2, 2]²: ``c·((x² - 1)² + y²) + k`` with the scale ``c > 0`` and the
    shift ``k`` hyperparameters, so the three maps share one compiled loss."""
    x, y = sp.symbols("x y", real=True)
    c, k = sp.Symbol("c", positive=True), sp.Symbol("k", real=True)
    model = ReducedModel(
        "shifted, scaled double well",
        (x, y),
        c * ((x**2 - 1) ** 2 + y**2) + k,
        hyperparams=(c, k),
        domains={c: sp.Interval.open(0, sp.oo)},
    )
    maps = []
    for scale, shift in ((1.0, 0.0), (1e-6, 10.0), (1e6, 0.0)):
        landscape = model.bind(c=scale, k=shift)
        region = gradflow.Region.of(landscape, 11, box=(-2.0, 2.0, -2.0, 2.0))
        maps.append(gradflow.basins(landscape, region=region, progress=False))
    return maps


def test_a_double_well_map_is_proven_off_the_saddles_manifold(double_wells) -> None:
    """(x² - 1)² + y² on an 11 × 11 grid of [-2, 2]²: x' = -4x(x² - 1) keeps the sign of x, so
    the 55 starts with x < 0 reach (-1, 0) and the 55 with x > 0 reach (1, 0), each a
    non-degenerate minimum (Hessian diag(8, 2)) with a certified region: proven; the 11 starts
    on x = 0, the saddle's stable manifold, reach the saddle: numerical (a saddle has no region
    of attraction)."""
    bm = double_wells[0]
    xs = bm.region.points()[..., 0]
    ids = bm.attractor_ids
    points = {a.id: a.point for a in bm.attractors}
    left, right, middle = xs < -1e-12, xs > 1e-12, np.abs(xs) <= 1e-12
    np.testing.assert_allclose(points[ids[left][0]], [-1.0, 0.0], atol=1e-9)
    np.testing.assert_allclose(points[ids[right][0]], [1.0, 0.0], atol=1e-9)
    assert len(set(ids[left])) == 1 and len(set(ids[right])) == 1
    assert np.all(bm.evidence[left | right] == 1)
    assert np.all(bm.labels[middle] == Outcome.SADDLE)
    assert np.all(bm.evidence[middle] == 0)


def test_scaling_and_shifting_the_loss_keeps_labels_and_evidence(double_wells) -> None:
    """L, 10⁻⁶L + 10 and 10⁶L have the same flow up to a time change, the same critical points
    and, by the relative margins of the proofs, the same certified regions' verdicts; the wells
    are global minima of all three, since each loss is its constant term (0, 10, 0) plus a
    scaled sum of squares, a proven lower bound the wells attain."""
    first = double_wells[0]
    assert set(first.labels[first.evidence == 1]) == {int(Outcome.GLOBAL_MIN)}
    for other in double_wells[1:]:
        np.testing.assert_array_equal(other.labels, first.labels)
        np.testing.assert_array_equal(other.attractor_ids, first.attractor_ids)
        np.testing.assert_array_equal(other.evidence, first.evidence)
