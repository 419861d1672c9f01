"""Critical points on kinks: Clarke stationarity (``0 ∈ ∂L``), their kinds, and the basins of
minima that sit on a kink.  Every expected value is worked out by hand from the loss.

At a point where kinks meet, the Clarke subdifferential is the convex hull of the one-sided
gradients (Clarke 1983, Thm. 2.5.1); ``0`` in it is necessary for a minimum.  The kind is read
along the kinks (the restricted loss's Hessian) and across them (``|u|`` rises on both sides: a
V; ``−|u|`` falls on both: a Λ, one descent direction).
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import gradflow


def sets_of(loss: str) -> gradflow.CriticalSets:
    model = gradflow.loss_model(loss).bind()
    return gradflow.critical_sets(model, box=model.search_box({"x": (-3, 3), "y": (-3, 3)}))


@pytest.mark.parametrize(
    "loss, point",
    [
        # ∂L(0, 0) = [-1, 1] × {0}: the origin; L ≥ 0 = L(0, 0), so global.
        ("Abs(x) + y**2", (0.0, 0.0)),
        # ∂L(1, -2) = [-1, 1]²: two kinks meet at the global minimum L = 0.
        ("Abs(x - 1) + Abs(y + 2)", (1.0, -2.0)),
        # max(x, -x) = |x|: ∂L(0, 1) = [-1, 1] × {0}; L ≥ 0 once max is written through |·|.
        ("Max(x, -x) + (y - 1)**2", (0.0, 1.0)),
    ],
)
def test_a_minimum_on_a_kink_is_found_and_global(loss, point) -> None:
    (minimum,) = sets_of(loss)
    assert minimum.kind == "global_min" and minimum.dimension == 0
    assert minimum.loss == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(minimum.sample, point, atol=1e-8)
    assert minimum.morse_index == 0 and minimum.name.startswith("kink of ")


def test_a_kink_that_falls_on_both_sides_is_a_saddle_not_a_minimum() -> None:
    """-|x| + y²: along the kink x = 0 the loss is y² (rising), across it -|x| falls on both
    sides: Morse index 1, a saddle; ∂L(0, 0) = [-1, 1] × {0} ∋ 0, so it is the one critical
    point, and nothing is a minimum."""
    sets = sets_of("-Abs(x) + y**2")
    (saddle,) = sets
    assert saddle.kind == "saddle" and saddle.morse_index == 1
    np.testing.assert_allclose(saddle.sample, (0.0, 0.0), atol=1e-8)
    assert not any(s.kind in ("global_min", "local_min") for s in sets)


def test_the_kink_decides_where_the_hessian_of_one_side_would_not() -> None:
    """|x| - x² + y²: the Hessian diag(-2, 2) of either side says saddle at the origin, but
    L(x, 0) = |x| - x² > 0 for 0 < |x| < 1: a local minimum (L → -∞ along x, so not global).
    The smooth critical points are where 1 - 2|x| = 0: saddles at (±1/2, 0), L = 1/4."""
    sets = sets_of("Abs(x) - x**2 + y**2")
    kinds = sorted((s.kind, tuple(np.round(p, 8))) for s in sets for p in s.samples)
    assert kinds == [("local_min", (0.0, 0.0)), ("saddle", (-0.5, 0.0)), ("saddle", (0.5, 0.0))]
    assert {round(s.loss, 9) for s in sets if s.kind == "saddle"} == {0.25}


def test_two_minima_on_one_curved_kink_are_two_components() -> None:
    """|x² - 1| + y²: zero on the kink x = ±1, y = 0, where ∂L ∋ 0 (one-sided slopes ±2); the
    origin is a smooth saddle (L = 1 - x² + y² there), L = 1."""
    sets = sets_of("Abs(x**2 - 1) + y**2")
    minima = [s for s in sets if s.kind == "global_min"]
    points = sorted(
        tuple(np.round(s.component_points(c)[0], 8)) for s in minima for c in range(s.n_components)
    )
    assert points == [(-1.0, 0.0), (1.0, 0.0)]
    (saddle,) = [s for s in sets if s.kind == "saddle"]
    assert saddle.loss == pytest.approx(1.0)


def test_a_kink_crossed_by_the_flow_is_no_critical_point() -> None:
    """|x| + 2x + y²: the one-sided slopes in x are 3 and 1, so 0 ∉ ∂L anywhere on the kink;
    off it ∇L ≠ 0: no critical point at all."""
    assert len(sets_of("Abs(x) + 2*x + y**2")) == 0


def test_the_kinds_do_not_change_with_the_loss_scale() -> None:
    """c·(|x| - |y|) at c = 1 and 1000 (c > 0 a hyperparameter: one compiled loss): the kinks
    meet at the origin, a V along x and a Λ along y, a saddle of index 1 at either scale."""
    x, y = sp.symbols("x y", real=True)
    c = sp.Symbol("c", positive=True)
    model = gradflow.ReducedModel("scaled kinks", (x, y), c * (sp.Abs(x) - sp.Abs(y)), (c,))
    box = {"x": (-3, 3), "y": (-3, 3)}
    a, b = (
        gradflow.critical_sets(bound, box=bound.search_box(box))
        for bound in (model.bind(c=1.0), model.bind(c=1000.0))
    )
    assert [(s.kind, s.morse_index) for s in a] == [(s.kind, s.morse_index) for s in b]
    assert [(s.kind, s.morse_index) for s in a] == [("saddle", 1)]


@pytest.fixture(scope="module")
def abs_basins() -> gradflow.BasinMap:
    model = gradflow.loss_model("Abs(x) + y**2").bind()
    return gradflow.basins(model, region=gradflow.Region.of(model, grid=21), progress=False)


def test_every_start_reaches_the_minimum_on_the_kink(abs_basins) -> None:
    """|x| + y²: x' = -sign(x) reaches the kink in time |x0|, then the flow slides along it
    (y' = -2y) to the origin, the one critical point; L ≥ 0 bounds every sublevel set.  Every
    grid point reaches the global minimum (0, 0): fraction 1, a basin with area."""
    (minimum,) = [a for a in abs_basins.attractors if a.fraction > 0]
    assert minimum.kind == "global_min" and not minimum.measure_zero
    np.testing.assert_allclose(minimum.point, (0.0, 0.0), atol=1e-8)
    assert minimum.fraction == 1.0
    assert abs_basins.fractions()["global_min"] == 1.0


def test_a_flow_stalled_on_the_kink_is_told_where_it_slides() -> None:
    """From (1, 1) on |x| + y² the flow meets the kink at t = 1, y = e^{-2}, where a smooth
    solver stalls; it then slides to (0, 0) (y' = -2y), the only critical point, and every
    sublevel set is bounded: the trajectory is reported non-smooth, having reached the global
    minimum on the kink."""
    model = gradflow.loss_model("Abs(x) + y**2").bind()
    sets = gradflow.critical_sets(model, box=gradflow.Region.of(model).search_box(model))
    path = gradflow.flow(
        model,
        [1.0, 1.0],
        gradflow.FlowOptions(stop=gradflow.StopRule(max_steps=400)),
        critical=sets,
    )
    assert path.reached is gradflow.Outcome.GLOBAL_MIN and path.attractor is not None
    np.testing.assert_allclose(path.attractor.point, (0.0, 0.0), atol=1e-8)
    if path.status is gradflow.Outcome.NON_SMOOTH:
        assert path.kink == "Abs(x)"
        assert path.endpoint[1] == pytest.approx(np.exp(-2), rel=1e-3)
