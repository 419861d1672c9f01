"""The engine on losses nobody here wrote: every expected value is worked out by hand.

Each test states the loss, the right answer and its derivation; none of the numbers comes from
running gradflow.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp

import gradflow
from gradflow import Outcome, ReducedModel

x, y = sp.symbols("x y", real=True)
BOX = {"x": (-2.0, 2.0), "y": (-2.0, 2.0)}


def bind(name: str, loss: sp.Expr, **declared) -> gradflow.BoundModel:
    return ReducedModel(name, (x, y), loss, bounds=BOX, **declared).bind()


def test_the_two_wells_of_a_double_well_are_two_attractors() -> None:
    """L = (x² - 1)² + y²: dx/dt = -4x(x² - 1) keeps the sign of x and dy/dt = -2y, so x < 0
    ends at (-1, 0), x > 0 at (1, 0), and the line x = 0 (invariant) at the saddle (0, 0).  On a
    9-point grid of [-2, 2]² (odd, so the line x = 0 is a column) that is 4 columns of 9 points
    each per well (36/81) and the middle column (9/81) for the saddle.  L ≥ 0 with L = 0 at both
    wells: both global."""
    model = bind("double well", (x**2 - 1) ** 2 + y**2)
    bm = gradflow.basins(
        model, region=gradflow.Region.of(model, grid=9, box=(-2, 2, -2, 2)), progress=False
    )
    by_point = {tuple(np.round(a.point, 9)): a for a in bm.attractors}
    left, right, saddle = by_point[(-1.0, 0.0)], by_point[(1.0, 0.0)], by_point[(0.0, 0.0)]
    assert left.id != right.id and left.kind == right.kind == "global_min"
    assert saddle.kind == "saddle"
    xs = np.broadcast_to(bm.xs, bm.attractor_ids.shape)
    assert np.all(bm.attractor_ids[xs < 0] == left.id)
    assert np.all(bm.attractor_ids[xs > 0] == right.id)
    assert np.all(bm.attractor_ids[xs == 0] == saddle.id)
    assert left.fraction == right.fraction == pytest.approx(36 / 81)
    assert saddle.fraction == pytest.approx(9 / 81)
    assert bm.fractions()["global_min"] == pytest.approx(72 / 81)
    assert sum(a.fraction for a in bm.attractors) == pytest.approx(1.0)


def test_the_level_proves_a_global_minimum_but_not_which_of_two_wells() -> None:
    """The same double well with ``inf L = 0`` declared and the sublevel shortcut on: the
    saddle's ``L = 1`` is the decision level, and every start that reaches a well passes below
    it (``L`` falls along the flow to 0).  Below it the flow ends on a global minimum, proven;
    on which of the two wells the level does not say (both lie under it), so each such grid
    point's label is proven while neither well's proven share counts it: 36/81 each reached,
    none of it proven to reach that well."""
    model = bind("double well", (x**2 - 1) ** 2 + y**2, global_min_loss=0, sublevel_shortcut=True)
    bm = gradflow.basins(
        model, region=gradflow.Region.of(model, grid=9, box=(-2, 2, -2, 2)), progress=False
    )
    wells = [a for a in bm.attractors if a.kind == "global_min"]
    assert len(wells) == 2 and bm.shortcut
    assert all(a.fraction == pytest.approx(36 / 81) and a.proven == 0 for a in wells)
    reached = np.isin(bm.attractor_ids, [a.id for a in wells])
    assert np.all(bm.evidence[reached] == 1)
    (said,) = {bm.reasons[c] for c in np.unique(bm.reason_codes[reached])}
    assert said.startswith("proven: below L = 0.99999999")  # just under the saddle's 1
    assert said.endswith(
        "ends on a global minimum; which of its 2 components is numerical (a segment below the "
        "level to a sample of it, or the nearest sample)"
    )


def test_a_circle_split_into_two_graphs_is_one_attractor() -> None:
    """L = (x² + y² - 1)²: sympy.solve returns the circle of minima as the graphs
    y = ±√(1 - x²); it is one connected set, so one attractor, reached from every grid point off
    the origin (the radius obeys dr/dt = -4r(r² - 1), so r > 0 ends at r = 1).  The origin is a
    local maximum (L = 1 there, L ≤ 1 nearby) and its own attractor."""
    model = bind("mexican hat", (x**2 + y**2 - 1) ** 2)
    bm = gradflow.basins(
        model, region=gradflow.Region.of(model, grid=9, box=(-2, 2, -2, 2)), progress=False
    )
    circle = [a for a in bm.attractors if a.kind == "global_min"]
    assert len(circle) == 1 and circle[0].dimension == 1
    assert np.hypot(*circle[0].point) == pytest.approx(1.0, abs=1e-9)
    (top,) = [a for a in bm.attractors if a.kind == "local_max"]
    assert bm.attractor_ids[4, 4] == top.id
    assert circle[0].fraction == pytest.approx(80 / 81)


def test_an_unbounded_loss_has_no_global_minimum() -> None:
    """L = x²/2 + y²/2 - y⁴/4 → -∞ along the y axis.  ∇L = (x, y - y³): critical points (0, 0)
    (Hessian diag(1, 1): a minimum, but not a global one) and (0, ±1) (Hessian diag(1, -2):
    saddles, L = 1/4)."""
    model = bind("unbounded", x**2 / 2 + y**2 / 2 - y**4 / 4)
    sets = gradflow.critical_sets(model)
    assert sets.bounded_below is False and sets.global_min_loss is None
    kinds = sorted((s.kind, tuple(np.round(s.points[0], 9)), round(s.loss, 12)) for s in sets)
    assert kinds == [
        ("local_min", (0.0, 0.0), 0.0),
        ("saddle", (0.0, -1.0), 0.25),
        ("saddle", (0.0, 1.0), 0.25),
    ]
    assert sets.metadata()["bounded_below"] is False


def test_no_shortcut_to_global_on_an_unbounded_loss() -> None:
    """Same loss, 5 × 5 grid of [-2, 2]²: dx/dt = -x, dy/dt = y³ - y.  Row y = 0 stays on y = 0
    and ends at the minimum (5 points); rows y = ±1 stay on y = ±1 (dy/dt = 0) and end at the
    saddles (0, ±1) (10 points); rows y = ±2 blow up: y² = 1/(1 - (3/4)e^{-2t}) is infinite at
    t* = ½ ln(4/3) ≈ 0.1438 (10 points, diverged)."""
    model = bind("unbounded", x**2 / 2 + y**2 / 2 - y**4 / 4)
    bm = gradflow.basins(
        model, region=gradflow.Region.of(model, grid=5, box=(-2, 2, -2, 2)), progress=False
    )
    labels = np.array(gradflow.LABELS)[bm.labels]
    assert not bm.shortcut
    assert list(labels[:, 0]) == ["diverged", "saddle", "local_min", "saddle", "diverged"]
    assert np.all(labels == labels[:, :1])
    saddles = {tuple(np.round(a.point, 9)): a.id for a in bm.attractors if a.kind == "saddle"}
    assert np.all(bm.attractor_ids[1] == saddles[(0.0, -1.0)])
    assert np.all(bm.attractor_ids[3] == saddles[(0.0, 1.0)])
    assert np.all(bm.attractor_ids[[0, 4]] == -1)
    assert np.all(bm.times[[0, 4]] <= np.log(4 / 3) / 2 + 1e-6)


def test_a_declared_shortcut_needs_a_declared_global_level() -> None:
    """A model that asks for the sublevel shortcut but declares no inf L does not get it."""
    model = bind("asks", x**2 / 2 + y**2 / 2 - y**4 / 4, sublevel_shortcut=True)
    assert model.sublevel_shortcut is False


def test_a_saddle_is_never_classified_from_a_nan_hessian() -> None:
    """L = x² - y² + (x² + y²)^{3/2}.  Its second derivative has r³'s 3(2x² + y²)/r, a 0/0 at the
    origin, where the Hessian is diag(2, -2) (the r³ term is o(r²)): a saddle of Morse index 1
    with L = 0.  On the y axis L = -y² + |y|³ has L' = -2y + 3y|y| = 0 at |y| = 2/3, where
    L = -4/9 + 8/27 = -4/27 and L'' = -2 + 6|y| = 2 > 0: two minima (not proven global)."""
    model = bind("nan hessian", x**2 - y**2 + (x**2 + y**2) ** sp.Rational(3, 2))
    assert not np.all(np.isfinite(model.hessian(np.zeros(2))))
    sets = gradflow.critical_sets(model)
    (saddle,) = [s for s in sets if s.kind == "saddle"]
    np.testing.assert_allclose(saddle.points, [[0.0, 0.0]], atol=1e-9)
    np.testing.assert_allclose(saddle.hessian_eigenvalues, [-2.0, 2.0], atol=1e-4)
    assert saddle.morse_index == 1 and saddle.loss == pytest.approx(0.0, abs=1e-12)
    at_origin = gradflow.classify_points(model, np.zeros((1, 2)), None)
    assert at_origin.kinds[0] == "saddle" and at_origin.morse_index[0] == 1
    np.testing.assert_allclose(at_origin.eigenvalues[0], [-2.0, 2.0], atol=1e-4)
    assert at_origin.hessian_method[0].startswith("finite differences")
    minima = sorted(s.points[0][1] for s in sets if s.kind == "local_min")
    np.testing.assert_allclose(minima, [-2 / 3, 2 / 3], atol=1e-8)
    for s in sets:
        if s.kind == "local_min":
            assert s.loss == pytest.approx(-4 / 27, abs=1e-12)


def test_a_removable_zero_hessian_entry_falls_back_and_probes() -> None:
    """L = x² + (x² + y²)^{3/2} ≥ 0 (SymPy proves it): at the origin the Hessian is diag(2, 0)
    by central differences (∂_y of 3y r is 3|h| → 0), the zero direction is probed (L grows as
    |y|³), and L = 0 there is the proven bound: a global minimum."""
    model = bind("removable", x**2 + (x**2 + y**2) ** sp.Rational(3, 2))
    classes = gradflow.classify_points(model, np.zeros((1, 2)), model.global_min_loss)
    assert classes.kinds[0] == "global_min"
    np.testing.assert_allclose(classes.eigenvalues[0], [0.0, 2.0], atol=1e-4)
    assert classes.hessian_method[0].startswith("finite differences")


@pytest.mark.parametrize(
    "loss, inside, dimension",
    [
        # Max(0, x)² + (y - 1)²: ∇L = (2 max(0, x), 2(y - 1)) vanishes on {x ≤ 0, y = 1}.
        (
            sp.Max(0, x) ** 2 + (y - 1) ** 2,
            lambda p: (p[:, 0] <= 1e-9) & (np.abs(p[:, 1] - 1) < 1e-9),
            1,
        ),
        # Max(0, x² + y² - 1)²: ∇L = 4 max(0, r² - 1)(x, y) vanishes on the closed unit disk.
        (sp.Max(0, x**2 + y**2 - 1) ** 2, lambda p: np.hypot(*p.T) <= 1 + 1e-9, 2),
    ],
    ids=["half-line", "disk"],
)
def test_the_dimension_of_a_set_comes_from_its_geometry(loss, inside, dimension) -> None:
    model = bind("flat", loss)
    sets = gradflow.critical_sets(model)
    (minimum,) = sets
    assert minimum.kind == "global_min" and minimum.loss == pytest.approx(0.0, abs=1e-15)
    assert minimum.dimension == dimension
    assert np.all(inside(minimum.points)) and len(minimum.points) > 10


def test_a_flow_stuck_on_a_kink_says_so() -> None:
    """L = |x| + (y - 1)² from (0.5, 0): the (sub)gradient flow is x = max(0.5 - t, 0),
    y = 1 - e^{-2t}.  At t = 0.5 it reaches the kink x = 0 with y = 1 - e^{-1} ≈ 0.632, where
    ∇L jumps (sign(x)) and a smooth solver stalls: the trajectory must say it is on the kink of
    Abs(x), not an unexplained 'not converged'."""
    model = bind("kink", sp.Abs(x) + (y - 1) ** 2)
    assert gradflow.critical_sets(model, starts=16).non_smooth == ("Abs(x)",)
    path = gradflow.flow(model, [0.5, 0.0])
    if path.status is Outcome.CONVERGED:
        np.testing.assert_allclose(path.endpoint, [0.0, 1.0], atol=1e-3)
    else:
        assert path.status is Outcome.NON_SMOOTH and path.kink == "Abs(x)"
        assert path.reached is Outcome.NON_SMOOTH
        assert abs(path.endpoint[0]) < 1e-6
        assert path.endpoint[1] == pytest.approx(1 - np.exp(-1), abs=1e-3)


@pytest.mark.parametrize(
    "loss",
    [sp.Max(0, x) ** 2 + y**2, x * sp.Abs(x) + y**2 + x**4],
    ids=["max squared", "x|x|"],
)
def test_losses_with_a_continuous_gradient_are_not_flagged(loss) -> None:
    """max(0, x)² has gradient 2 max(0, x) and x|x| has 2|x|: continuous, so the flow is well
    defined and nothing is flagged, though the Hessian jumps at x = 0."""
    assert bind("c1", loss).nonsmooth_terms == ()


def test_a_line_of_minima_reached_outside_the_box_is_one_attractor() -> None:
    """L = log(eˣ + eʸ) - 0.7x - 0.3y: ∇L = (σ - 0.7, 0.3 - σ) with σ = eˣ/(eˣ + eʸ), zero on
    the whole line x - y = ln(7/3) (σ = 0.7), a line of minima; ∂ₓL + ∂ᵧL = 0, so x + y is
    conserved and the start (x0, y0) ends at ((s + ln(7/3))/2, (s - ln(7/3))/2), s = x0 + y0.
    From the box [5, 6] × [-6, -5] (x - y ∈ [10, 12], far from the line and outside the box
    the critical sets are searched in) every start reaches that one connected line: one
    attractor of dimension 1 with fraction 1, not a measure-zero set."""
    model = gradflow.loss_model("log(exp(x)+exp(y)) - 0.7*x - 0.3*y", params=("x", "y")).bind()
    bm = gradflow.basins(
        model, region=gradflow.Region.of(model, grid=11, box=(5, 6, -6, -5)), progress=False
    )
    (line,) = bm.reached()
    assert line.fraction == 1.0 and not line.measure_zero and line.dimension == 1
    assert line.kind in ("local_min", "global_min")
    s = (bm.region.points()[..., 0] + bm.region.points()[..., 1])[..., None]
    shift = np.log(7 / 3) / 2 * np.array([1.0, -1.0])
    np.testing.assert_allclose(bm.endpoints, s / 2 + shift, atol=1e-6)


def test_an_arc_of_a_circle_of_minima_reached_outside_the_box_is_one_attractor() -> None:
    """Other numbers, a curved set: L = (x² + y² - 1)² depends on r alone, so the flow is
    radial and (x0, y0) ends at (x0, y0)/r0 on the unit circle of global minima (L ≥ 0, 0
    there).  From [3, 4]² (outside the searched box [2.5, 4.5]²) the ends fill the arc between
    the angles atan(3/4) and atan(4/3): one attractor of dimension 1, fraction 1."""
    model = bind("circle from afar", (x**2 + y**2 - 1) ** 2)
    bm = gradflow.basins(
        model, region=gradflow.Region.of(model, grid=9, box=(3, 4, 3, 4)), progress=False
    )
    (arc,) = bm.reached()
    assert arc.kind == "global_min" and arc.dimension == 1
    assert arc.fraction == 1.0 and not arc.measure_zero
    starts = bm.region.points()
    radial = starts / np.linalg.norm(starts, axis=-1, keepdims=True)
    np.testing.assert_allclose(bm.endpoints, radial, atol=1e-6)


def tian_loss(a: float, b: float) -> str:
    """The population loss of one ReLU student w against the teacher w* = (a, b) on standard
    Gaussian inputs, E[(relu(wᵀz) - relu(w*ᵀz))²]/2 (Tian, "An analytical formula of population
    gradient for two-layered ReLU network", ICML 2017): with θ = ∠(w, w*),
    (‖w‖² + ‖w*‖²)/4 - ‖w‖‖w*‖(sin θ + (π - θ) cos θ)/(2π), θ written as acos of the cosine."""
    n = "sqrt(x**2 + y**2)"
    norm = float(np.hypot(a, b))
    cos = f"({a}*x + {b}*y)/({norm}*{n})"
    return (
        f"(x**2 + y**2 + {norm**2})/4"
        f" - {norm}*{n}*(sin(acos({cos})) + (pi - acos({cos}))*{cos})/(2*pi)"
    )


@pytest.mark.slow
def test_a_removable_singularity_at_the_minimum_of_a_relu_teacher_student_loss() -> None:
    """Tian's loss with w* = (1, 0).  At w = w* it is 0 with Hessian E[1{w*ᵀz > 0} z zᵀ] =
    I/2 (eigenvalues 0.5, 0.5), though acos and √(1 - cos²) have infinite derivatives there
    (the loss is θ³/3-smooth: sin θ + (π - θ)cos θ = π - πθ²/2 + θ³/3 + …).  Every w off the
    ray θ = π flows to w*; on that ray (x < 0, y = 0, f(π) = 0) L = (‖w‖² + 1)/4 falls to the
    origin, the cone's tip.  On the 21-point grid of [-2, 2]² that ray holds 10 points and the
    origin one: w* gets 430/441 = 0.97506 of the grid, with area (not measure zero)."""
    model = gradflow.loss_model(tian_loss(1.0, 0.0), params=("x", "y")).bind()
    bm = gradflow.basins(
        model, region=gradflow.Region.of(model, grid=21, box=(-2, 2, -2, 2)), progress=False
    )
    (best,) = [a for a in bm.attractors if np.allclose(a.point, [1.0, 0.0], atol=1e-7)]
    assert best.kind in ("local_min", "global_min") and not best.measure_zero
    assert best.fraction == pytest.approx(430 / 441)
    assert best.loss == pytest.approx(0.0, abs=1e-12)
    at = gradflow.classify_points(model, np.array([[1.0, 0.0]]), None)
    np.testing.assert_allclose(at.eigenvalues[0], [0.5, 0.5], atol=1e-5)
    assert at.hessian_method[0].startswith("finite differences")


def test_a_flow_ends_at_the_removable_singularity_of_an_angle() -> None:
    """L = acos(x/r)² + (r - 1)² = θ² + (r - 1)² (θ = |atan2(y, x)|), smooth at its minimum
    (1, 0) with Hessian diag(2, 2) (θ ≈ y there), though acos'(1) = -∞.  In polar coordinates
    dr/dt = -2(r - 1) and dθ/dt = -2θ/r², so from (0.5, 0.5) the flow reaches (1, 0).  Other
    numbers, Tian's loss with w* = (0, 2): from (1, 1) the flow reaches w* (the angle shrinks,
    ‖w‖ → 2), where L = 0 with Hessian I/2."""
    angle = "acos(x/sqrt(x**2+y**2))**2 + (sqrt(x**2+y**2)-1)**2"
    model = gradflow.loss_model(angle, params=("x", "y")).bind()
    path = gradflow.flow(model, [0.5, 0.5])
    assert path.status is Outcome.CONVERGED and path.reached in (
        Outcome.LOCAL_MIN,
        Outcome.GLOBAL_MIN,
    )
    np.testing.assert_allclose(path.endpoint, [1.0, 0.0], atol=1e-7)
    at = gradflow.classify_points(model, np.array([[1.0, 0.0]]), None)
    np.testing.assert_allclose(at.eigenvalues[0], [2.0, 2.0], atol=1e-5)
    tian = gradflow.loss_model(tian_loss(0.0, 2.0), params=("x", "y")).bind()
    path = gradflow.flow(tian, [1.0, 1.0])
    assert path.status is Outcome.CONVERGED and path.reached in (
        Outcome.LOCAL_MIN,
        Outcome.GLOBAL_MIN,
    )
    np.testing.assert_allclose(path.endpoint, [0.0, 2.0], atol=1e-7)
    assert path.losses[-1] == pytest.approx(0.0, abs=1e-12)
    at = gradflow.classify_points(tian, np.array([[0.0, 2.0]]), None)
    np.testing.assert_allclose(at.eigenvalues[0], [0.5, 0.5], atol=1e-5)


def test_a_small_but_nonzero_gradient_is_no_critical_point(cli) -> None:
    """``(x − 1)³/3 + 10⁻⁷x + y²/2``: ``∂L/∂x = (x − 1)² + 10⁻⁷ ≥ 10⁻⁷``, so there is no critical
    point (and ``sympy.solve``'s roots ``x = 1 ± i·10^{-3.5}`` are complex).  Neither the search
    nor the certificate reports one, and ``--certify`` proves the box empty."""
    loss = "(x-1)**3/3 + 1e-7*x + y**2/2"
    run = cli("critical", "--loss", loss, "--params", "x,y", "--json")
    assert run.code == 0 and json.loads(run.out)["critical_sets"] == []
    run = cli("critical", "--loss", loss, "--params", "x,y", "--certify", "--json")
    assert run.code == 0, run.err
    report = json.loads(run.out)
    assert report["critical_sets"] == [] and report["certificate"]["complete"]
    assert report["certificate"]["isolated"] == []


def test_a_sphere_of_minima_is_one_surface(cli) -> None:
    """``(x² + y² + z² − 1)²``: ``∇L = 4(r² − 1)(x, y, z)`` vanishes on the unit sphere (``L = 0``,
    global minima, one connected surface) and at the origin (``L = 1``, Hessian ``−4I``: a
    maximum).  ``sympy.solve`` also returns the circles ``x = 0, z = ±√(1 − y²)``, which lie on
    the sphere: not sets of their own."""
    run = cli("critical", "--loss", "(x**2+y**2+z**2-1)**2", "--params", "x,y,z", "--json")
    assert run.code == 0, run.err
    sets = json.loads(run.out)["critical_sets"]
    assert [(s["kind"], s["dimension"], s["components"]) for s in sets] == [
        ("global_min", 2, 1),
        ("local_max", 0, 1),
    ]
    assert np.linalg.norm(sets[0]["points"], axis=1) == pytest.approx(1.0, abs=1e-12)
    assert sets[1]["sample"] == [0, 0, 0] and sets[1]["morse_index"] == 3


def test_a_cylinder_of_minima_is_one_surface() -> None:
    """``(x² + y² − 1)²(1 + z²)``: ``∇L = ((1 + z²)4x(ρ² − 1), (1 + z²)4y(ρ² − 1), 2z(ρ² − 1)²)``
    with ``ρ² = x² + y²`` vanishes on the cylinder ``ρ = 1`` (``L = 0``, global minima, one
    connected surface of dimension 2, though ``sympy.solve`` gives it as the two graphs
    ``y = ±√(1 − x²)``) and where ``x = y = 0`` and ``z = 0``: ``L = 1`` with Hessian
    ``diag(−4, −4, 2)``, a saddle of index 2."""
    z = sp.Symbol("z", real=True)
    model = ReducedModel("cylinder", (x, y, z), (x**2 + y**2 - 1) ** 2 * (1 + z**2)).bind()
    sets = gradflow.critical_sets(model)
    assert [(s.kind, s.dimension, s.n_components) for s in sets] == [
        ("global_min", 2, 1),
        ("saddle", 0, 1),
    ]
    assert np.hypot(sets[0].points[:, 0], sets[0].points[:, 1]) == pytest.approx(1, abs=1e-12)
    np.testing.assert_allclose(sets[1].hessian_eigenvalues, [-4, -4, 2], atol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize(
    "loss, expected",
    [
        # ∇L = 4(ρ² − 1)(x, y, 0): the cylinder ρ = 1 (minima) and the z axis, where L = 1 and
        # the Hessian is diag(−4, −4, 0): a line of maxima.
        ("cylinder", [("global_min", 2, 1), ("local_max", 1, 1)]),
        # ∇L = 2(x + y + z − 1)(1, 1, 1): the plane x + y + z = 1, all minima.
        ("plane", [("global_min", 2, 1)]),
    ],
)
def test_cylinders_and_planes_of_minima_are_one_surface(loss, expected) -> None:
    z = sp.Symbol("z", real=True)
    losses = {"cylinder": (x**2 + y**2 - 1) ** 2, "plane": (x + y + z - 1) ** 2}
    model = ReducedModel(loss, (x, y, z), losses[loss]).bind()
    sets = gradflow.critical_sets(model)
    assert [(s.kind, s.dimension, s.n_components) for s in sets] == expected
