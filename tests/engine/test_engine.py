"""The engine on toy models whose critical points, flows and basins are known by hand."""

from __future__ import annotations

import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import sympy as sp
from jax.flatten_util import ravel_pytree

import gradflow
from gradflow import (
    GradflowError,
    Outcome,
    ReducedModel,
    classify_points,
    critical_sets,
    save_with_data,
)

x, y = sp.symbols("x y", real=True)
k = sp.symbols("k", positive=True)
POSITIVE = sp.Interval.open(0, sp.oo)


def double_well() -> ReducedModel:
    """L = (x² - 1)² + k y²: minima (±1, 0), saddle (0, 0) with Hessian diag(-4, 2k)."""
    return ReducedModel(
        name="double-well",
        params=(x, y),
        hyperparams=(k,),
        domains={k: POSITIVE},
        loss=(x**2 - 1) ** 2 + k * y**2,
        plane=("x", "y"),
    )


def mexican_hat() -> ReducedModel:
    """L = (x² + y² - 1)²: a circle of global minima (loss 0) and a maximum at the origin."""
    return ReducedModel(
        name="mexican-hat",
        params=(x, y),
        hyperparams=(k,),
        domains={k: POSITIVE},
        loss=k * (x**2 + y**2 - 1) ** 2,
        global_min_loss=sp.S.Zero,
        plane=("x", "y"),
    )


def test_symbolic_solve_finds_the_double_well_critical_points() -> None:
    model = double_well().bind(k=0.5)
    sets = critical_sets(model, starts=0)
    kinds = sorted((s.kind, tuple(np.round(s.points[0], 12))) for s in sets)
    assert kinds == [
        ("global_min", (-1.0, 0.0)),
        ("global_min", (1.0, 0.0)),
        ("saddle", (0.0, 0.0)),
    ]
    (saddle,) = [s for s in sets if s.kind == "saddle"]
    assert saddle.morse_index == 1
    np.testing.assert_allclose(saddle.hessian_eigenvalues, [-4.0, 1.0], atol=1e-12)
    assert all(s.name.startswith("sympy.solve") for s in sets)


def test_a_circle_of_minima_is_found_as_curves() -> None:
    """sympy.solve gives the circle as the graphs y = ±√(1 - x²): one set, one component."""
    model = mexican_hat().bind(k=2.0)
    sets = critical_sets(model)
    (circle,) = [s for s in sets if s.kind == "global_min"]
    assert circle.equation.count("sqrt(1 - ") == 2 and " ∪ " in circle.equation
    assert circle.dimension == 1 and circle.n_components == 1
    np.testing.assert_allclose(np.hypot(*circle.points.T), 1.0, atol=1e-12)
    (top,) = [s for s in sets if s.kind == "local_max"]
    np.testing.assert_allclose(top.points, [[0.0, 0.0]], atol=1e-12)
    assert top.loss == pytest.approx(2.0)


def test_numerical_search_alone_groups_the_circle() -> None:
    """Without sympy (a non-rational gradient), the numerical search reports one circle; exp is
    increasing and k(r² − 1)² ≥ 0, so exp(·) − 1 ≥ e⁰ − 1 = 0 is proven and the circle, where
    L = 0, is the global minimum."""
    model = ReducedModel(
        name="hat-exp",
        params=(x, y),
        hyperparams=(k,),
        domains={k: POSITIVE},
        loss=sp.exp(k * (x**2 + y**2 - 1) ** 2) - 1,
        plane=("x", "y"),
    ).bind(k=1.0)
    sets = critical_sets(model, starts=300)
    (circle,) = [s for s in sets if s.kind == "global_min"]
    assert circle.name == "numerical" and circle.dimension == 1
    np.testing.assert_allclose(np.hypot(*circle.points.T), 1.0, atol=1e-7)


def test_degenerate_critical_points_are_classified_by_probing() -> None:
    """The monkey saddle x³ - 3xy² and the quartic x⁴ + y⁴ both have a zero Hessian at 0."""
    monkey = ReducedModel("monkey", (x, y), x**3 - 3 * x * y**2).bind()
    quartic = ReducedModel("quartic", (x, y), x**4 + y**4).bind()
    origin = np.zeros((1, 2))
    assert classify_points(monkey, origin, None).kinds[0] == "saddle"
    assert classify_points(quartic, origin, None).kinds[0] == "local_min"
    assert classify_points(quartic, origin, 0.0).kinds[0] == "global_min"
    assert classify_points(quartic, origin, None).nullity[0] == 2


def test_basins_and_separatrix_of_the_double_well() -> None:
    """x > 0 flows to (1, 0), x < 0 to (-1, 0) (both global); the y axis flows into the saddle.

    A trajectory stops as soon as its loss is below the saddle's (L = 1): from then on only the
    well it is in can attract it, so its endpoint lies in that well (x of the start's sign).
    """
    model = double_well().bind(k=0.5)
    bm = gradflow.basins(
        model, region=gradflow.Region.of(model, grid=21, box=(-2, 2, -2, 2)), progress=False
    )
    xs = bm.xs[None, :].repeat(len(bm.ys), 0)
    assert np.all(np.sign(bm.endpoints[..., 0]) == np.sign(xs))
    assert np.all(model.loss(bm.endpoints[xs != 0]) < 1.0)
    assert np.all(bm.mask("global_min")[xs != 0])
    assert np.all(bm.mask("saddle")[xs == 0])
    pic = gradflow.portrait(
        model, region=gradflow.Region.of(model, grid=5, box=(-2, 2, -2, 2)), show_basins=False
    )
    assert len(pic.separatrix) == 2
    for line in pic.separatrix:
        np.testing.assert_allclose(line[:, 0], 0.0, atol=1e-6)
        assert np.abs(line[:, 1]).max() > 1.9


def test_the_float32_first_pass_gives_the_float64_labels() -> None:
    """Away from x = 0 every start reaches the well of its sign, whatever the precision; the
    points next to x = 0 (the saddle's stable manifold) are redone in float64 by design."""
    model = double_well().bind(k=0.5)
    fast = gradflow.basins(
        model, region=gradflow.Region.of(model, grid=31, box=(-2, 2, -1.5, 2.5)), progress=False
    )
    slow = gradflow.basins(
        model,
        region=gradflow.Region.of(model, grid=31, box=(-2, 2, -1.5, 2.5)),
        progress=False,
        float32_first=False,
    )
    assert [a.metadata() for a in fast.attractors] == [a.metadata() for a in slow.attractors]
    np.testing.assert_array_equal(fast.attractor_ids, slow.attractor_ids)
    xs = fast.xs[None, :].repeat(len(fast.ys), 0)
    assert np.all(np.sign(fast.endpoints[..., 0]) == np.sign(xs))


def test_a_flat_loss_is_not_labelled_by_the_float32_stopping_rule() -> None:
    """L = 10⁻⁵ ((x² − 1)² + y²): ‖∇L‖ ≤ 10⁻⁴ wherever |4x(x² − 1)| ≤ 10 and |y| ≤ 5, so the
    float32 pass stops most starts of [−2, 2]² where they are, some of them next to the saddle.
    The flow is the double well's, 10⁵ times slower (hence ``t_max`` 10⁸): x < 0 ends at
    (−1, 0), x > 0 at (1, 0), and only the line x = 0 at the saddle."""
    model = ReducedModel(
        name="flat double well",
        params=(x, y),
        loss=sp.Rational(1, 10**5) * ((x**2 - 1) ** 2 + y**2),
    )
    slow = tuple(o.with_stop(t_max=1e8) for o in gradflow.default_basin_options())
    bm = gradflow.basins(
        model.bind(),
        region=gradflow.Region.of(model.bind(), grid=101, box=(-2, 2, -2, 2)),
        options=slow,
        float32_first=True,
        progress=False,
    )
    by_point = {tuple(np.round(a.point, 6)): a for a in bm.attractors}
    left, right, saddle = by_point[(-1.0, 0.0)], by_point[(1.0, 0.0)], by_point[(0.0, 0.0)]
    xs = np.broadcast_to(bm.xs, bm.attractor_ids.shape)
    assert np.all(bm.attractor_ids[xs < 0] == left.id)
    assert np.all(bm.attractor_ids[xs > 0] == right.id)
    assert np.all(bm.attractor_ids[xs == 0] == saddle.id)


def test_hyperparameters_are_arguments_so_a_sweep_compiles_once() -> None:
    compiled = double_well().bind(k=1.0).compiled
    theta = jnp.array([[0.3, -0.2]])
    compiled.grad(theta, jnp.array([1.0]))
    programs = compiled.grad._cache_size()
    for value in (0.1, 0.7, 3.0, 11.0):
        g = compiled.grad(theta, jnp.array([value]))
        np.testing.assert_allclose(g, [[4 * 0.3 * (0.09 - 1), 2 * value * -0.2]], atol=1e-14)
    assert compiled.grad._cache_size() == programs


def test_a_points_hessian_and_a_batchs_come_from_one_program() -> None:
    """``L = (x² − 1)² + k·x·y²``: ``∇²L = [[12x² − 4, 2ky], [2ky, 2kx]]``, at one point (the
    root finders' path) and at 1, 40 and 600 points (one call of 512, then two), all from one
    compiled Hessian program, so a point's bits do not depend on the call it is in."""
    model = ReducedModel("xy-coupled well", (x, y), (x**2 - 1) ** 2 + k * x * y**2, (k,)).bind(
        k=3.0
    )
    points = np.random.default_rng(3).uniform(-2, 2, size=(600, 2))
    a, b = points[:, 0], points[:, 1]
    expected = np.stack(
        [np.stack([12 * a**2 - 4, 6 * b], -1), np.stack([6 * b, 6 * a], -1)], axis=-2
    )
    single = model.point_hessian(points[0])
    np.testing.assert_allclose(single, expected[0], rtol=1e-14, atol=1e-14)
    for n in (1, 40, 600):
        batch = model.hessian(points[:n])
        np.testing.assert_allclose(batch, expected[:n], rtol=1e-14, atol=1e-14)
        assert single.tobytes() == batch[0].tobytes()
    assert model.compiled.hessian._cache_size() == 1


def test_gradient_descent_on_a_quadratic_is_the_exact_geometric_sequence() -> None:
    model = ReducedModel("quad", (x, y), k * (x**2 + y**2) / 2, (k,), {k: POSITIVE}).bind(k=3.0)
    descent = gradflow.FlowOptions(
        solver=gradflow.GradientDescent(0.1), stop=gradflow.StopRule(max_steps=40)
    )
    path = gradflow.flow(model, [1.0, -2.0], descent, ts=0.5 * np.arange(9))
    n = np.arange(0, 41, 5)
    np.testing.assert_allclose(path.thetas, np.outer(0.7**n, [1.0, -2.0]), rtol=1e-12)


def half_square(tree: dict, _: object) -> jax.Array:
    """L = ½‖θ‖² of a pytree ``{"a": (2,), "b": ()}``: θ(t) = θ0 e^{-t}.  One function, options
    and recording times for the pytree tests, so that they share one compiled integrator."""
    return 0.5 * (jnp.sum(tree["a"] ** 2) + tree["b"] ** 2)


PYTREE_OPTIONS = gradflow.FlowOptions(controller=gradflow.PID(rtol=1e-10, atol=1e-12))
PYTREE_TS = np.linspace(0.0, 3.0, 7)


def test_gradient_flow_of_a_pytree_follows_the_exponential() -> None:
    """L = ½‖θ‖² gives θ(t) = θ0 e^{-t}."""
    params = {"a": jnp.array([1.0, 2.0]), "b": jnp.array(-3.0)}
    ts = PYTREE_TS
    trajectory = gradflow.flow(half_square, params, PYTREE_OPTIONS, ts=ts)
    unravel = ravel_pytree(params)[1]
    flat0 = np.array([1.0, 2.0, -3.0])
    np.testing.assert_allclose(
        trajectory.thetas[: len(ts)], np.outer(np.exp(-ts), flat0), rtol=1e-7
    )
    np.testing.assert_allclose(unravel(trajectory.thetas[0])["b"], -3.0)


def test_flow_labels_divergence() -> None:
    """L = -k x² drives x to infinity: labelled diverged, not dropped."""
    model = ReducedModel("repel", (x, y), -k * x**2 + y**2, (k,), {k: POSITIVE}).bind(k=1.0)
    trajectory = gradflow.flow(model, [0.1, 0.5])
    assert trajectory.status is gradflow.Outcome.DIVERGED and trajectory.reached is Outcome.DIVERGED


def test_bad_hyperparameters_and_points_are_one_line_errors() -> None:
    with pytest.raises(GradflowError, match=r"k = -1 is outside the valid range \(0, ∞\)"):
        double_well().bind(k=-1.0)
    with pytest.raises(GradflowError, match="must be a number"):
        double_well().bind(k="abc")
    model = double_well().bind(k=1.0)
    with pytest.raises(GradflowError, match="finite"):
        gradflow.flow(model, [np.nan, 0.0])
    with pytest.raises(GradflowError, match="2 coordinates"):
        gradflow.flow(model, [1.0, 2.0, 3.0])
    with pytest.raises(GradflowError, match="grid"):
        gradflow.basins(model, region=gradflow.Region.of(model, grid=1))
    with pytest.raises(GradflowError, match="must be below"):
        gradflow.basins(model, region=gradflow.Region.of(model, box=(1, -1, 0, 1)))


def test_outputs_are_all_or_nothing(tmp_path) -> None:
    def broken(path):
        path.write_text("partial")
        raise RuntimeError("the figure failed")

    with pytest.raises(RuntimeError):
        save_with_data(tmp_path / "out.png", broken, {"a": np.zeros(3)}, {"x": 1})
    assert list(tmp_path.iterdir()) == []
    written = save_with_data(
        tmp_path / "out.png", lambda p: p.write_text("ok"), {"a": np.zeros(3)}, {"x": 1}
    )
    assert (
        sorted(p.name for p in tmp_path.iterdir())
        == ["out.json", "out.npz", "out.png"]
        == sorted(p.name for p in written)
    )


def test_import_does_not_load_matplotlib() -> None:
    code = (
        "import sys, gradflow, gradflow.systems.markov.reduced; print('matplotlib' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_slice_through_a_critical_surface_is_its_level_curve() -> None:
    """L = k (z - x² - y²)² vanishes on the paraboloid z = x² + y²; the slice z = 1 is the unit
    circle, and the slice x = 0.6 (a pinned free parameter) is the parabola z = 0.36 + y²."""
    z = sp.symbols("z", real=True)
    surface = gradflow.CriticalSetSpec("paraboloid", {z: x**2 + y**2}, equation="z = x² + y²")
    model = ReducedModel(
        "bowl",
        (x, y, z),
        k * (z - x**2 - y**2) ** 2,
        (k,),
        {k: POSITIVE},
        critical_sets=(surface,),
        global_min_loss=sp.S.Zero,
        plane=("x", "y"),
    ).bind(k=1.0)
    (circle,) = critical_sets(model, box=model.search_box(None, {"z": 1.0}), samples=201)
    assert circle.kind == "global_min" and circle.dimension == 1
    np.testing.assert_allclose(np.hypot(circle.points[:, 0], circle.points[:, 1]), 1.0, atol=1e-9)
    np.testing.assert_allclose(circle.points[:, 2], 1.0)
    assert len(circle.points) > 100 and len(circle.polylines()) >= 1
    (parabola,) = critical_sets(model, box=model.search_box(None, {"x": 0.6}))
    np.testing.assert_allclose(parabola.points[:, 2], 0.36 + parabola.points[:, 1] ** 2, atol=1e-12)


@pytest.mark.parametrize(
    ("loss", "fixed", "expected"),
    [
        ("x**2 + y**2 + z**2", {"z": 0.0}, [("global_min", (0, 0, 0))]),
        ("x**2 + y**2 + z**2", {"z": 0.5}, []),
        (
            "(x**2 - 1)**2 + y**2 + (z - 1)**2",
            {"z": 1.0},
            [("global_min", (-1, 0, 1)), ("global_min", (1, 0, 1)), ("saddle", (0, 0, 1))],
        ),
        ("(x**2 - 1)**2 + y**2 + (z - 1)**2", {"z": 0.0}, []),
        ("x**2 + y**2 + z**2 + exp(x*y*z)", {"z": 0.0}, [("local_min", (0, 0, 0))]),
    ],
)
def test_isolated_critical_points_on_a_slice_through_them(loss, fixed, expected) -> None:
    """A slice shows the critical points of ``L`` that lie on it, and only those.  ``x² + y² +
    z²`` has its minimum at the origin: on ``z = 0``, not on ``z = 0.5`` (``∂L/∂z = 1`` there).
    ``(x² − 1)² + y² + (z − 1)²`` has minima ``(±1, 0, 1)`` and a saddle ``(0, 0, 1)`` (Hessian
    ``diag(−4, 2, 2)``), all on ``z = 1``.  ``x² + y² + z² + exp(xyz)`` has ``∇L = (2x + yz e^{xyz},
    …)``, zero at the origin with Hessian ``2I``: SymPy does not solve it, so the numerical
    search finds it, moving ``x`` and ``y`` only."""
    model = gradflow.loss_model(loss, params=["x", "y", "z"]).bind()
    found = critical_sets(model, box=model.search_box(None, fixed))
    assert sorted((s.kind, tuple(np.round(s.sample, 9) + 0.0)) for s in found) == sorted(
        (kind, tuple(float(v) for v in point)) for kind, point in expected
    )


def test_an_endpoint_is_joined_to_its_sheet_along_a_closed_form_past_every_sample() -> None:
    """``L = k (z (x − 1/2) − 1)²`` vanishes on the surface ``z = 1/(x − 1/2)``, two sheets that
    run to ``z = ±∞`` at the pole ``x = 1/2``.  A point of the sheet ``x > 1/2`` close to the pole
    (``x = 0.52``, ``z = 50``) is joined to a sample of its own sheet however far it is (``x = 3``,
    ``z = 0.4``), but not to samples of the other sheet (``x = −1``, ``z = −2/3``), across the
    pole, nor is a point off the surface."""
    from gradflow._critical.attractors import _joined_on_piece

    z = sp.symbols("z", real=True)
    sheets = gradflow.CriticalSetSpec("z = 1/(x − 1/2)", {z: 1 / (x - sp.Rational(1, 2))})
    model = ReducedModel(
        "pole",
        (x, y, z),
        k * (z * (x - sp.Rational(1, 2)) - 1) ** 2,
        (k,),
        {k: POSITIVE},
        critical_sets=(sheets,),
        global_min_loss=sp.S.Zero,
    ).bind(k=1.0)
    box = np.array([[-4.0, 4.0], [-4.0, 4.0], [-60.0, 60.0]])
    names = ["z = 1/(x − 1/2)"]
    near_pole = np.array([0.52, 1.0, 50.0])
    own, other = np.array([[3.0, -2.0, 0.4]]), np.array([[-1.0, 2.0, -2 / 3]])
    assert _joined_on_piece(model, near_pole, names, own, box)
    assert not _joined_on_piece(model, near_pole, names, other, box)
    assert not _joined_on_piece(model, near_pole + [0.0, 0.0, 1.0], names, own, box)


def test_a_segment_through_a_pole_joins_nothing_and_warns_nothing() -> None:
    """``4(x⁻¹² − x⁻⁶) + y²`` has its minimum at ``(2^{1/6}, 0)``; a piece ``x = 10⁻¹³`` lies at
    its pole, where ``|∂L/∂x| ≈ 48·10¹⁶⁹`` overflows when squared.  The minimum is not on that
    piece (``gap`` 1.12, and the gradient along the segment is not small), and deciding so
    raises no floating-point warning (warnings are errors in the suite)."""
    from dataclasses import dataclass

    from gradflow._critical.pieces import on_piece

    @dataclass(frozen=True)
    class Pole:
        name: str = "pole"
        equation: str | None = "x = 1e-13"
        free: tuple[int, ...] = (1,)
        dependent: tuple[int, ...] = (0,)

        def complete(self, free_points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            points = np.column_stack([np.full(len(free_points), 1e-13), free_points[:, 0]])
            return points, np.ones(len(free_points), dtype=bool)

    landscape = gradflow.loss_model("4*(x**-12 - x**-6) + y**2", ["x", "y"]).bind()
    minimum = np.array([[2 ** (1 / 6), 0.0]])
    assert not on_piece(landscape, Pole(), minimum)[0]


def test_a_set_sampled_over_a_wide_box() -> None:
    """``(xy − 1)²`` vanishes on the hyperbola ``x = 1/y``; over ``y ∈ [−100, 100]`` its
    representative point's lattice coarsens its step (0.1 over the default range) through 0.2,
    0.5, 1 … until at most 400 values fit (the step once stuck at 0.2 there, and the search never
    returned)."""
    model = gradflow.loss_model("(x*y - 1)**2").bind()
    found = critical_sets(model, box=model.search_box({"y": (-100.0, 100.0)}))
    hyperbola = [s for s in found if s.kind == "global_min"]
    assert hyperbola and all(s.dimension == 1 for s in hyperbola)
    for s in hyperbola:
        np.testing.assert_allclose(s.points[:, 0] * s.points[:, 1], 1.0, rtol=1e-9)


def test_gradient_flow_compiles_once_per_loss() -> None:
    """The second flow of the same loss from another start of the same shape reuses the
    compiled integrator: L = ½‖θ‖² gives θ(t) = θ0 e^{-t} both times."""
    from gradflow._flow.integrate import own_path_program

    first = {"a": jnp.array([1.0, 2.0]), "b": jnp.array(0.5)}
    gradflow.flow(half_square, first, PYTREE_OPTIONS, ts=PYTREE_TS)
    programs = own_path_program.cache_info()
    start = {"a": jnp.array([-3.0, 0.5]), "b": jnp.array(2.0)}
    second = gradflow.flow(half_square, start, PYTREE_OPTIONS, ts=PYTREE_TS)
    after = own_path_program.cache_info()
    assert (after.currsize, after.hits) == (programs.currsize, programs.hits + 1)
    exact = np.outer(np.exp(-PYTREE_TS), [-3.0, 0.5, 2.0])
    np.testing.assert_allclose(second.thetas[: len(PYTREE_TS)], exact, rtol=1e-7)


def test_a_second_trajectory_of_another_length_traces_no_program() -> None:
    """Paths from two starts have different lengths; the second flow of the same landscape
    traces nothing (its losses are evaluated on a padded, shared shape, its stop in one compiled
    program).  L = ½‖θ‖² gives θ(t) = θ0 e^{-t} and L = ½‖θ‖² at every recorded point."""
    import jax.monitoring

    model = gradflow.loss_model("x**2/2 + y**2/2").bind()
    options = gradflow.FlowOptions(solver="Tsit5", controller=gradflow.PID(rtol=1e-8, atol=1e-10))
    first = gradflow.flow(model, [1.0, 2.0], options)
    traces = []

    def count(event: str, duration: float, **kwargs) -> None:
        if event == "/jax/core/compile/jaxpr_trace_duration":
            traces.append(duration)

    jax.monitoring.register_event_duration_secs_listener(count)
    try:
        second = gradflow.flow(model, [30.0, -5.0], options)
    finally:
        jax.monitoring.unregister_event_duration_listener(count)
    assert len(first.ts) != len(second.ts)
    assert traces == []
    for path, start in ((first, [1.0, 2.0]), (second, [30.0, -5.0])):
        np.testing.assert_allclose(path.losses, 0.5 * np.sum(path.thetas**2, axis=1), rtol=1e-12)
        exact = np.asarray(start) * np.exp(-path.ts)[:, None]
        np.testing.assert_allclose(path.thetas, exact, rtol=1e-5, atol=1e-9)


def test_a_stop_takes_the_first_condition_met_diverged_converged_decided() -> None:
    """Outcome codes of a batch of states, vectorized as the integrators call them.  The double
    well L = (x² − 1)² + y² has ∇L = (4x(x² − 1), 2y): at (1, 0) it is 0 and L = 0, at (0.5, 0)
    it is (−1.5, 0) and L = 0.5625.  A constant loss has ∇L = 0 everywhere, so a state beyond
    the divergence radius is both converged and diverged (diverged wins); NaN is diverged.  A
    state below the decision level is decided: its outcome is ``GLOBAL_MIN``."""
    from gradflow._flow.integrate import status_code

    well = gradflow.JaxLandscape(lambda t, _: (t[0] ** 2 - 1) ** 2 + t[1] ** 2, ("x", "y"))
    flat = gradflow.JaxLandscape(lambda t, _: 0.0 * (t[0] + t[1]), ("x", "y"))
    options = gradflow.FlowOptions(stop=gradflow.StopRule(gtol=1e-3, divergence_radius=10.0))

    def codes(landscape, states, level):
        """Compiled as the integrators compile it (one program, the level an argument; run op by
        op it was some fifty one-operation programs)."""
        batch = jax.jit(
            jax.vmap(
                lambda y, at: status_code(landscape.field, options, y, None, at), in_axes=(0, None)
            )
        )
        return [Outcome(int(c)) for c in batch(np.asarray(states), np.float64(level))]

    states = [[1.0, 0.0], [0.5, 0.0], [np.nan, 0.0]]
    assert codes(well, states, 1.0) == [Outcome.CONVERGED, Outcome.GLOBAL_MIN, Outcome.DIVERGED]
    assert codes(well, states, 0.5) == [Outcome.CONVERGED, Outcome.NOT_CONVERGED, Outcome.DIVERGED]
    assert codes(flat, [[20.0, 0.0], [1.0, 1.0]], 1.0) == [Outcome.DIVERGED, Outcome.CONVERGED]


def test_a_declared_bound_may_be_a_plain_number() -> None:
    """``global_min_loss=0`` (an int) is ``inf L`` of the double well, as ``sp.S.Zero`` would be;
    a bound depending on a hyperparameter is evaluated at its value."""
    loss = (x**2 - 1) ** 2 + k * y**2
    plain = ReducedModel("double-well", (x, y), loss, hyperparams=(k,), global_min_loss=0)
    assert plain.bind(k=0.5).global_min_loss == 0.0
    shifted = ReducedModel("shifted", (x, y), loss - k, hyperparams=(k,), global_min_loss=-k)
    assert shifted.bind(k=0.5).global_min_loss == -0.5
