"""Flows in a metric, ``dθ/dt = -G⁻¹∇L``, checked against solutions worked out by hand.

- A quadratic ``L = ½θᵀAθ`` in a constant metric flows as ``θ(t) = exp(-G⁻¹A t) θ0``.
- In a constant diagonal metric ``G = diag(g)``, the flow is the Euclidean flow of
  ``L̃(u) = L(u/√g)`` in the coordinates ``u = √g θ``: endpoints must agree point by point, and
  for the double well ``(x² - 1)² + (y - x)²`` (saddle at the origin, stable direction depending on
  ``G``) the basins must differ from the Euclidean ones.
- The canonical model in a constant diagonal metric ``diag(g_e, g_w)`` conserves
  ``E_G = g_e e² - g_w (w² + sgn(w) ln|w|)`` (differentiate along the flow), so its separatrix is
  the level set of ``E_G`` through the saddle ``(0, -1/√2)``.
"""

from __future__ import annotations

import math

import diffrax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

import gradflow as gf
from gradflow.systems import markov

A = np.diag([1.0, 3.0])
G_QUAD = np.array([[2.0, 0.5], [0.5, 1.0]])
SCALE = np.array([4.0, 0.25])
"""The constant diagonal metric of the rescaling checks."""


def quadratic(theta, _):
    return 0.5 * theta @ jnp.asarray(A) @ theta


def constant_quadratic_metric(theta, _):
    return jnp.asarray(G_QUAD, theta.dtype)


def double_well(theta, _):
    x, y = theta[0], theta[1]
    return (x**2 - 1) ** 2 + (y - x) ** 2


def rescaled_double_well(u, _):
    return double_well(u / jnp.sqrt(jnp.asarray(SCALE)), None)


def diagonal_metric(theta, _):
    return jnp.diag(jnp.asarray(SCALE, theta.dtype))


def test_quadratic_flow_in_a_constant_metric_is_the_matrix_exponential():
    land = gf.JaxLandscape(quadratic, ("x", "y"))
    theta0 = np.array([1.0, -0.5])
    options = gf.FlowOptions(controller=gf.PID(rtol=1e-10, atol=1e-12))
    path = gf.flow(land, theta0, options, metric=constant_quadratic_metric)
    rate = np.linalg.solve(G_QUAD, A)
    exact = np.stack([scipy.linalg.expm(-rate * t) @ theta0 for t in path.ts])
    assert path.converged
    np.testing.assert_allclose(path.thetas, exact, atol=1e-7)


@pytest.mark.parametrize("dim", [3, 5], ids=["unrolled Cholesky", "LAPACK"])
def test_the_metric_flow_solves_with_G_in_every_dimension(dim):
    """θ' = -G⁻¹Aθ with constant symmetric positive definite G and A: θ(t) = exp(-G⁻¹A t) θ0,
    whether ``G⁻¹∇L`` is solved by the unrolled factorization (dim ≤ 4) or by LAPACK.  Tsit5
    (explicit): the default implicit solver in a metric is the test above's, and its trace here
    cost 2 s of the test's 4."""
    rng = np.random.default_rng(dim)
    a = np.diag(np.linspace(1.0, 2.0, dim))
    root = rng.standard_normal((dim, dim))
    g = root @ root.T + dim * np.eye(dim)
    land = gf.JaxLandscape(
        lambda t, _: 0.5 * t @ jnp.asarray(a) @ t, tuple(f"x{i}" for i in range(dim))
    )
    theta0 = rng.standard_normal(dim)
    options = gf.FlowOptions(solver=diffrax.Tsit5(), controller=gf.PID(rtol=1e-10, atol=1e-12))
    path = gf.flow(land, theta0, options, metric=lambda t, _: jnp.asarray(g, t.dtype))
    rate = np.linalg.solve(g, a)
    exact = np.stack([scipy.linalg.expm(-rate * t) @ theta0 for t in path.ts])
    assert path.converged
    np.testing.assert_allclose(path.thetas, exact, atol=1e-7)


@pytest.fixture(scope="module")
def double_well_grid() -> np.ndarray:
    xs = np.linspace(-1.5, 1.5, 16)
    ys = np.linspace(-1.5, 1.5, 16)
    return np.stack(np.meshgrid(xs, ys), axis=-1).reshape(-1, 2)


def test_constant_diagonal_metric_is_euclidean_flow_of_rescaled_coordinates(double_well_grid):
    options = gf.FlowOptions(
        solver=diffrax.Tsit5(),
        controller=gf.PID(rtol=1e-10, atol=1e-12),
        stop=gf.StopRule(gtol=1e-8),
    )
    land = gf.JaxLandscape(double_well, ("x", "y"))
    rescaled = gf.JaxLandscape(rescaled_double_well, ("u", "v"))
    in_metric = gf.flow_endpoints(land, double_well_grid, options, metric=diagonal_metric)
    euclid_u = gf.flow_endpoints(rescaled, double_well_grid * np.sqrt(SCALE), options)
    assert np.all(in_metric.status == gf.Outcome.CONVERGED)
    np.testing.assert_allclose(in_metric.endpoints, euclid_u.endpoints / np.sqrt(SCALE), atol=1e-7)
    euclid = gf.flow_endpoints(land, double_well_grid, options)
    moved = np.sign(euclid.endpoints[:, 0]) != np.sign(in_metric.endpoints[:, 0])
    assert moved.any(), "the metric must move the basin boundary of this double well"


def test_basins_in_a_metric_keep_the_attractors_and_name_the_metric():
    land = gf.JaxLandscape(double_well, ("x", "y"))
    options = gf.FlowOptions(solver=diffrax.Tsit5(), controller=gf.PID(rtol=1e-10, atol=1e-12))
    region = gf.Region.of(land, 7, box=(-1.5, 1.5, -1.5, 1.5))
    kwargs = {"region": region, "options": options, "progress": False}
    plain = gf.basins(land, **kwargs)
    bent = gf.basins(land, metric=diagonal_metric, critical=plain.critical, **kwargs)
    assert bent.metric == "diagonal_metric" and plain.metric == "euclidean"
    assert sorted(a.kind for a in bent.reached()) == sorted(a.kind for a in plain.reached())
    assert (bent.attractor_ids != plain.attractor_ids).any()
    named = gf.basins(gf.in_metric(land, diagonal_metric, name="rescaled"), **kwargs)
    assert named.metric == "rescaled"
    np.testing.assert_array_equal(named.attractor_ids, bent.attractor_ids)


def test_canonical_separatrix_in_a_diagonal_metric_is_a_level_set_of_the_rescaled_energy():
    g_e, g_w = 3.0, 8.0

    def metric(theta, _):
        return jnp.diag(jnp.asarray([g_e, g_w], theta.dtype))

    def energy(e, w):
        return g_e * e**2 - g_w * (w**2 + np.sign(w) * np.log(np.abs(w)))

    model = markov.canonical(p=0.5, q=0.8)
    portrait = gf.portrait(
        model,
        region=gf.Region.of(model, box=(-2.5, 0.0, -1.6, 1.6)),
        show_basins=False,
        metric=metric,
    )
    level = energy(0.0, -1 / math.sqrt(2))
    assert len(portrait.separatrix) >= 2 and portrait.euclidean_separatrix
    for line in portrait.separatrix:
        w, e = line[:, 0], line[:, 1]
        assert len(line) > 5
        np.testing.assert_allclose(energy(e, w), level, atol=2e-3 * abs(level))
    assert portrait.invariant is None


def test_metric_arguments_are_checked():
    land = gf.JaxLandscape(double_well, ("x", "y"))
    with pytest.raises(gf.GradflowError, match="metric = 'riemann' must be one of"):
        gf.in_metric(land, "riemann")
    with pytest.raises(gf.GradflowError, match="no embedding into a full model"):
        gf.in_metric(land, "induced")
    with pytest.raises(gf.GradflowError, match="positive definite"):
        gf.in_metric(land, lambda t, a: -jnp.eye(2), at=np.zeros(2))
    with pytest.raises(gf.GradflowError, match=r"\(2, 2\) matrix"):
        gf.in_metric(land, lambda t, a: jnp.eye(3), at=np.zeros(2))


def test_an_endpoint_on_a_closed_form_line_beyond_the_searched_box_is_that_line():
    """p = 0.7, q = 0.6 (p + q > 1): every point of e = 0 is critical with loss H(π), a local
    minimum for w > -1/√2 and a maximum for w < -1/√2.  The flow in the induced metric carries
    the starts at the box's corners out to (e, w) = (0, 6.28), beyond the box [-6, 6]² searched
    for a portrait of [-3, 3]²: such an endpoint reaches the attractor of e = 0 on its side, not
    a new one "found by the flow"."""
    m = markov.canonical(0.7, 0.6)
    land = gf.in_metric(m, "induced")
    sets = gf.critical_sets(m, box=gf.Region.of(m, box=(-3, 3, -3, 3)).search_box(m))
    index = gf.AttractorIndex(land, sets, sets.box)
    known = len(index.attractors)
    (right,) = index.add_found(land, np.array([[0.0, 7.5]]), sets.global_min_loss)
    (left,) = index.add_found(land, np.array([[0.0, -7.5]]), sets.global_min_loss)
    assert len(index.attractors) == known
    assert index.attractors[right].kind == "local_min" and index.attractors[right].set == "e = 0"
    assert index.attractors[left].kind == "local_max" and index.attractors[left].set == "e = 0"


def test_a_landscape_must_provide_its_five_abstract_members() -> None:
    """``Landscape`` is an abstract base class: the loss, its gradient, its Hessian, the
    parameter names and the field are what every loss provides; a subclass missing one is
    refused when it is made, not when an algorithm first asks for it."""

    class NoHessian(gf.Landscape):
        param_names = ("x",)

        def loss(self, theta):
            return np.sum(np.asarray(theta) ** 2, axis=-1)

        def grad(self, theta):
            return 2 * np.asarray(theta)

        @property
        def field(self):
            return gf.GradientField.from_loss(lambda t, a: jnp.sum(t**2))

    with pytest.raises(TypeError, match="hessian"):
        NoHessian()


def test_the_metric_wrapper_forwards_every_member_and_owns_the_flow() -> None:
    """Every member of ``Landscape`` is written out in ``MetricLandscape`` (none reached by a
    fallback lookup), and on L = (x² − 1)² + y² with G = diag(2, 1) the wrapper gives the
    base's L and ∇L while its flow's velocity is −G⁻¹∇L (its field's ``−grad``): at (0.5, 1),
    ∇L = (4x(x² − 1), 2y) = (−1.5, 2), so the velocity is (0.75, −2)."""
    base = gf.JaxLandscape(lambda t, _: (t[0] ** 2 - 1) ** 2 + t[1] ** 2, ("x", "y"))
    flows = gf.in_metric(base, lambda t, a: jnp.diag(jnp.array([2.0, 1.0])), name="G")
    members = {n for n in dir(gf.Landscape) if not n.startswith("_")}
    written = set(vars(type(flows)))
    assert members <= written, members - written
    point = np.array([0.5, 1.0])
    assert isinstance(flows, gf.Landscape) and flows.metric_name == "G"
    assert flows.loss(point) == pytest.approx(0.5625 + 1.0)
    np.testing.assert_allclose(flows.grad(point), [-1.5, 2.0])
    velocity = -np.asarray(flows.field.grad(jnp.asarray(point), flows.args))
    np.testing.assert_allclose(velocity, [0.75, -2.0])
    assert flows.invariant_names == () and base.metric_name == "euclidean"
