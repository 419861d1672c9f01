"""What a set is and how much of the grid reaches it: measure zero from the basin, one set listed
once, kinks classified from both sides.  Every expected value is worked out by hand.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import gradflow
from gradflow import ReducedModel

x, y, a = sp.symbols("x y a", real=True)


def bind(name: str, loss: sp.Expr, half: float, **kwargs) -> gradflow.BoundModel:
    bounds = {"x": (-half, half), "y": (-half, half)}
    return ReducedModel(name, (x, y), loss, bounds=bounds, **kwargs).bind()


@pytest.mark.slow
def test_measure_zero_comes_from_the_basin_not_the_kind() -> None:
    """L = x³/3 + y²/2: ∇L = (x², y) vanishes only at the origin, where the Hessian diag(0, 1)
    is degenerate and L(-ε, 0) < 0 < L(ε, 0): not a minimum.  dx/dt = -x² gives
    x = x0/(1 + x0 t): x0 ≥ 0 ends at the origin (algebraically), x0 < 0 blows up at t = -1/x0.
    On a 21 × 21 grid of [-2, 2]²: 11 columns (231/441) reach the origin — a basin with area,
    not measure zero — and 10 columns (210/441) diverge."""
    model = bind("cubic", x**3 / 3 + y**2 / 2, 2.0)
    bm = gradflow.basins(
        model, region=gradflow.Region.of(model, grid=21, box=(-2, 2, -2, 2)), progress=False
    )
    (origin,) = bm.reached()
    np.testing.assert_allclose(origin.point, [0.0, 0.0], atol=1e-12)
    assert origin.kind not in ("global_min", "local_min")
    assert origin.fraction == pytest.approx(231 / 441) and not origin.measure_zero
    assert bm.fractions()["diverged"] == pytest.approx(210 / 441)
    xs = np.broadcast_to(bm.xs, bm.labels.shape)
    assert np.all(bm.attractor_ids[xs >= 0] == origin.id)
    assert "*" not in bm.table()


@pytest.fixture(scope="module")
def kinked() -> gradflow.BoundModel:
    return bind("x|x|", x * sp.Abs(x) + y**2, 1.0)


def test_a_kink_is_classified_from_both_sides(kinked) -> None:
    """L = x|x| + y²: ∇L = (2|x|, 2y) is continuous (only the Hessian 2 sign(x) jumps) and
    vanishes only at the origin; L(-ε, 0) = -ε² < 0, so it is not a minimum: one set, at
    (0, 0), of no minimum's kind (the numerical search lands on both sides of the kink)."""
    sets = gradflow.critical_sets(kinked)
    assert len(sets) == 1
    (origin,) = sets
    assert origin.kind not in ("global_min", "local_min")
    np.testing.assert_allclose(origin.sample, [0.0, 0.0], atol=1e-6)


@pytest.mark.slow
def test_the_basin_of_a_kinked_saddle(kinked) -> None:
    """dx/dt = -2|x|: x0 ≥ 0 ends at 0 (x = x0 e^{-2t}), x0 < 0 escapes (x = x0 e^{2t}).  On a
    21 × 21 grid of [-1, 1]²: 231/441 reach the origin (not measure zero), 210/441 diverge."""
    bm = gradflow.basins(
        kinked, region=gradflow.Region.of(kinked, grid=21, box=(-1, 1, -1, 1)), progress=False
    )
    (reached,) = bm.reached()
    assert reached.fraction == pytest.approx(231 / 441) and not reached.measure_zero
    assert bm.fractions()["diverged"] == pytest.approx(210 / 441)


@pytest.mark.parametrize("loss", [x * sp.Abs(x) + y**2, -x * sp.Abs(x) + y**2 + x**4])
def test_a_point_beside_a_kink_is_not_a_minimum(loss) -> None:
    """Just right (x = 1e-9) and just left of the kink x = 0 of ±x|x| + y² (+ x⁴), the Hessian
    of one side is positive definite, but the loss falls along x on the other side: no such
    point is a minimum."""
    model = bind("kinked", loss, 1.0)
    points = np.array([[1e-9, 0.0], [-1e-9, 0.0], [0.0, 0.0]])
    kinds = gradflow.classify_points(model, points, None).kinds
    assert not any(k in ("local_min", "global_min") for k in kinds)


def test_one_set_is_listed_once() -> None:
    """L = x⁴/4 - a x²/2 + y²/2: ∇L = (x³ - a x, y); sympy.solve gives x = 0 and x = ±√a, which
    at a = 0 are all the origin.  inf L = -max(a, 0)²/4, 0 at a = 0, attained at the origin
    (Hessian diag(0, 1), L = x⁴/4 along x): one set, a degenerate global minimum."""
    model = ReducedModel(
        "pitchfork",
        (x, y),
        x**4 / 4 - a * x**2 / 2 + y**2 / 2,
        hyperparams=(a,),
        global_min_loss=-(sp.Max(a, 0) ** 2) / 4,
        bounds={"x": (-2, 2), "y": (-2, 2)},
    )
    sets = gradflow.critical_sets(model.bind(a=0.0))
    assert len(sets) == 1
    (origin,) = sets
    assert origin.kind == "global_min" and origin.n_components == 1 and origin.degenerate
    np.testing.assert_allclose(origin.points, [[0.0, 0.0]], atol=1e-12)
    at_one = gradflow.critical_sets(model.bind(a=1.0))
    found = sorted((s.kind, tuple(np.round(s.sample, 9))) for s in at_one)
    assert found == [
        ("global_min", (-1.0, 0.0)),
        ("global_min", (1.0, 0.0)),
        ("saddle", (0.0, 0.0)),
    ]


def test_a_point_of_another_morse_index_on_a_set_is_reported_apart() -> None:
    """L = xyz: ∇L = (yz, xz, xy) vanishes where two coordinates do: the three axes (L = 0).  At
    (t, 0, 0), t ≠ 0, the Hessian [[0, 0, 0], [0, 0, t], [0, t, 0]] has eigenvalues -|t|, 0, |t|:
    saddles of Morse index 1 and nullity 1.  At the origin it is 0 (nullity 3, index 0), and
    L(r u) = r³u₁u₂u₃ takes both signs: a saddle too, but not one the axes' description fits, so
    it is a set of its own, listed once though it lies on all three axes."""
    z = sp.Symbol("z", real=True)
    bounds = {"x": (-1, 1), "y": (-1, 1), "z": (-1, 1)}
    sets = gradflow.critical_sets(ReducedModel("xyz", (x, y, z), x * y * z, bounds=bounds).bind())
    assert {s.kind for s in sets} == {"saddle"}
    axes = [s for s in sets if s.dimension == 1]
    (origin,) = [s for s in sets if s.dimension == 0]
    assert len(axes) == 3 and len(sets) == 4
    for axis in axes:
        assert axis.morse_index == 1 and axis.nullity == 1 and axis.n_components == 2
        assert np.all(np.sort(np.abs(axis.points), axis=1)[:, :2] == 0)
        assert np.all(np.abs(axis.points).max(axis=1) > 0)
        t = np.abs(axis.sample).max()
        assert t > 0
        np.testing.assert_allclose(axis.hessian_eigenvalues, [-t, 0.0, t], atol=1e-12)
    np.testing.assert_allclose(origin.points, [[0.0, 0.0, 0.0]], atol=1e-12)
    np.testing.assert_allclose(origin.hessian_eigenvalues, [0.0, 0.0, 0.0], atol=1e-12)
    assert origin.morse_index == 0 and origin.nullity == 3 and origin.degenerate


def test_a_circle_solved_as_two_graphs_is_one_set() -> None:
    """L = (x² + y² - 1)²: ∇L = 4(x² + y² - 1)(x, y) vanishes on the unit circle (L = 0, the
    global minimum; Hessian 8 (x, y)(x, y)ᵀ, nullity 1 along the circle) and at the origin (L = 1,
    Hessian -4 I: a maximum of Morse index 2).  sympy.solve returns the circle as y = ±√(1 - x²):
    one set of dimension 1, one component, and the maximum apart."""
    sets = gradflow.critical_sets(bind("ring", (x**2 + y**2 - 1) ** 2, 1.5))
    assert [(s.kind, s.dimension, s.n_components) for s in sets] == [
        ("global_min", 1, 1),
        ("local_max", 0, 1),
    ]
    circle, origin = sets
    np.testing.assert_allclose(np.hypot(*circle.points.T), 1.0, atol=1e-9)
    assert min(circle.points[:, 1]) < -0.5 and max(circle.points[:, 1]) > 0.5
    assert origin.morse_index == 2 and circle.nullity == 1
    np.testing.assert_allclose(origin.sample, [0.0, 0.0], atol=1e-12)


ABC_SIGNS = {(1, 1, 1), (1, -1, -1), (-1, 1, -1), (-1, -1, 1)}
"""The sign patterns of the four components of ``abc = 1``: no coordinate can change sign on it."""


def minimum_attractor_signs(landscape: gradflow.Landscape) -> list[tuple[int, ...]]:
    """The sign pattern of every minimum attractor of ``landscape`` in ``[−2, 2]³``."""
    sets = gradflow.critical_sets(landscape)
    index = gradflow.AttractorIndex(landscape, sets, sets.box)
    return sorted(
        tuple(np.sign(att.point).astype(int))
        for att in index.attractors
        if att.kind in ("global_min", "local_min")
    )


def test_a_jax_loss_with_a_surface_of_minima_has_the_sympy_models_attractors() -> None:
    """``(1 - abc)²`` written in JAX has no closed forms: its minima come from a root finder's
    scattered solutions on the surface ``abc = 1``.  They must still be its four components (one
    attractor per sign pattern, each a surface, L = 0), as the SymPy model's closed form gives,
    not one attractor per cluster of solutions."""
    bounds = {"a": (-2, 2), "b": (-2, 2), "c": (-2, 2)}
    jax_loss = gradflow.JaxLandscape(
        lambda t, _: (1 - t[0] * t[1] * t[2]) ** 2, ("a", "b", "c"), ranges=bounds, lower_bound=0
    )
    minima = [s for s in gradflow.critical_sets(jax_loss) if s.kind == "global_min"]
    assert [(s.dimension, s.n_components) for s in minima] == [(2, 1)] * 4
    for s in minima:
        np.testing.assert_allclose(np.prod(s.points, axis=1), 1.0, atol=1e-6)
    a_, b_, c_ = sp.symbols("a b c", real=True)
    model = ReducedModel("abc", (a_, b_, c_), (1 - a_ * b_ * c_) ** 2, bounds=bounds).bind()
    assert minimum_attractor_signs(jax_loss) == minimum_attractor_signs(model) == sorted(ABC_SIGNS)


@pytest.mark.slow
def test_the_axes_of_1_minus_abc_squared_are_index_1_saddles_at_generic_points() -> None:
    """L = (1 - abc)²: ∇L = -2(1 - abc)(bc, ac, ab) vanishes on abc = 1 (L = 0, four components,
    one per sign pattern +++, +--, -+-, --+, since no coordinate can change sign on it) and on
    the three axes (two coordinates 0, L = 1).  On the a axis at (t, 0, 0), t ≠ 0, the Hessian
    is 2 t [[0, 0, 0], [0, 0, -1], [0, -1, 0]]: eigenvalues -2|t|, 0, 2|t|, Morse index 1,
    nullity 1; only at the origin is it 0.  Each axis is described at a generic point; the
    origin (L(r u) - 1 = -2r³u₁u₂u₃ + r⁶(u₁u₂u₃)² takes both signs: a saddle, Hessian 0, nullity
    3) is a set of its own."""
    a_, b_, c_ = sp.symbols("a b c", real=True)
    bounds = {"a": (-2, 2), "b": (-2, 2), "c": (-2, 2)}
    model = ReducedModel("abc", (a_, b_, c_), (1 - a_ * b_ * c_) ** 2, bounds=bounds).bind()
    sets = gradflow.critical_sets(model)
    (minima,) = [s for s in sets if s.kind == "global_min"]
    assert minima.dimension == 2 and minima.n_components == 4
    signs = {tuple(np.sign(minima.component_points(k)[0]).astype(int)) for k in range(4)}
    assert signs == ABC_SIGNS
    axes = [s for s in sets if s.kind == "saddle" and s.dimension == 1]
    assert len(axes) == 3
    for axis in axes:
        assert axis.morse_index == 1 and axis.nullity == 1
        t = np.max(np.abs(axis.hessian_eigenvalues)) / 2
        np.testing.assert_allclose(axis.hessian_eigenvalues, [-2 * t, 0.0, 2 * t], atol=1e-9)
        assert t > 0 and np.all(np.abs(axis.points).max(axis=1) > 0)
        assert np.abs(axis.sample).max() > 0
    (origin,) = [s for s in sets if s.kind == "saddle" and s.dimension == 0]
    np.testing.assert_allclose(origin.points, [[0.0, 0.0, 0.0]], atol=1e-12)
    assert origin.morse_index == 0 and origin.nullity == 3
