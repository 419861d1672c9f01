"""Where a full run leaves the reduced prediction, against answers worked out by hand.

- A flow ``x' = −x`` (``L = ½x²``) recorded at steps of 0.5 reaches ``L = L0/10`` at
  ``t = ½ ln 10 = 1.1513``, between two recorded points: the interpolated crossing, not the
  step's end (1.5); re-integrating the crossing step finds it to the recorded start's error (rtol 10⁻⁴).
- A toy full model with a known crossing: ``L_full(x, y, z) = ½x² − ½y² − ½z² − z`` on the
  family ``embed(x, y) = (x, y, 0)``, read back by ``project(x, y, z) = (x, y + z)`` (a left
  inverse).  The reduced loss ``½(x² − y²)`` has its saddle's stable manifold on ``y = 0``, so
  its basin label is ``sign y``.  The full flow ``x = x0 e^{−t}``, ``y = y0 e^t``,
  ``z = e^t − 1`` (``z' = z + 1``: the family is not invariant) projects to
  ``ψ = (y0 + 1)e^t − 1``: from ``y0 = −½`` the prediction is ``y → −∞``, the run's projection
  goes to ``+∞`` and crosses the boundary where ``e^t = 2``: ``t = ln 2``, at
  ``(x, y + z) = (x0/2, 0)``.
- On the canonical family the full gradient ``g`` pulls back to ``Jᵀg = ∇L``, so its part along
  the tangent has ``‖Pg‖² = ∇Lᵀ G⁻¹ ∇L`` with the closed-form metric ``G = D + uuᵀ``: its
  off-tangent share is ``√(1 − ∇LᵀG⁻¹∇L / ‖g‖²)``; on the rank-one family (the fixed points of
  the loss's symmetries) the share outside is 0.
- The Euclidean basins in closed form: ``E = e² − w² − sgn(w) ln|w|`` against
  ``E_sad = −(1 + ln 2)/2``.
- On ``e = 0`` at ``p + q < 1``, ``w = ½`` the reduced curvature along ``e`` is
  ``κ = 2Φ'(0)(1 + 2w|w|) < 0``, so the full Hessian's lowest eigenvalue is at most ``κ/G_ee``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

import gradflow as gf
from gradflow.systems.markov.checks import family_residual
from gradflow.systems.markov.departure import (
    Path,
    euclidean_basin,
    full_hessian,
    label_change,
    level_crossing,
    refined_crossing,
    saddle_alignment,
    unstable_space,
)
from gradflow.systems.markov.full_model import full_model


def test_a_level_is_crossed_between_recorded_points_where_the_flow_crosses_it():
    ts = np.arange(0.0, 2.01, 0.5)
    xs = np.exp(-ts)[:, None]
    path = Path(ts, xs, -xs)
    crossing = level_crossing(path, lambda y: 0.5 * float(y[0]) ** 2, 0.05)
    assert crossing == pytest.approx(0.5 * np.log(10), abs=1e-3)
    assert np.isnan(level_crossing(path, lambda y: 0.5 * float(y[0]) ** 2, 1e-3))


def _toy_loss(theta, args):
    x, y, z = theta
    return 0.5 * x**2 - 0.5 * y**2 - 0.5 * z**2 - z


def test_a_toy_mismatch_is_located_where_its_projection_crosses_the_separatrix():
    # a ReLU far away, max(0, −x − 10), never met: the loss is smooth where the run goes
    kinks = gf.Kinks(
        surfaces=lambda theta, args: jnp.stack([-theta[0] - 10.0]),
        loss_at=lambda theta, s, args: _toy_loss(theta, args) + s[0] * (-theta[0] - 10.0),
        lo=np.zeros(1),
        hi=np.ones(1),
    )
    options = gf.FlowOptions(
        controller=gf.PID(rtol=1e-8, atol=1e-10), stop=gf.StopRule(t_max=2.0, max_steps=10_000)
    )
    start = np.array([0.8, -0.5, 0.0])
    run = gf.slide(kinks, start, None, options, record=True)
    grad = jax.vmap(jax.grad(lambda t: _toy_loss(t, None)))
    path = Path(run.ts, run.thetas, -np.asarray(grad(jnp.asarray(run.thetas))))

    def labels(states):
        states = np.atleast_2d(states)
        return np.sign(states[:, 1] + states[:, 2])

    assert labels(run.thetas[-1])[0] == 1 and labels(start)[0] == -1  # a mismatch
    t, state = label_change(path, labels)
    assert t == pytest.approx(np.log(2), abs=1e-5)
    np.testing.assert_allclose([state[0], state[1] + state[2]], [0.4, 0.0], atol=1e-5)
    assert state[2] == pytest.approx(1.0, abs=1e-5)  # its distance from the family there


@pytest.fixture(scope="module")
def small():
    return full_model("canonical", length=4, d=4)


@pytest.mark.parametrize("p, q", [(0.2, 0.3), (0.5, 0.8)])
def test_the_full_gradient_off_the_tangent_is_the_closed_form_of_the_projection(small, p, q):
    h = jnp.asarray([p, q])
    bound = small.reduced.bind(p=p, q=q)
    for theta in ([0.5, -2.0], [1.1, -0.3], [0.3, 1.2]):
        t = jnp.asarray(theta)
        flat, unravel = ravel_pytree(small.embed(t, h))
        g = np.asarray(jax.grad(lambda f, u=unravel: small.loss(u(f), h))(flat))
        jac = np.asarray(jax.jacfwd(lambda s: ravel_pytree(small.embed(s, h))[0])(t))
        basis, _ = np.linalg.qr(jac)
        measured = np.linalg.norm(g - basis @ (basis.T @ g)) / np.linalg.norm(g)
        grad = np.asarray(bound.grad(np.asarray(theta)))
        along = grad @ np.linalg.solve(np.asarray(small.metric(t, h)), grad)
        closed = np.sqrt(1 - along / float(g @ g))
        assert measured == pytest.approx(closed, rel=1e-7)
        assert closed > 0.5  # most of the full gradient leaves the (e, w) family
        grads = jax.grad(small.loss)(small.embed(t, h), h)
        assert float(family_residual(grads, small.direction)) <= 1e-12  # not the rank-one one


def test_the_euclidean_basins_in_closed_form():
    assert list(euclidean_basin([0.5, 1.5, 0.5], [-2.0, -1.0, 0.5], 0.2, 0.3)) == [
        "local",
        "global",
        "global",
    ]
    assert list(euclidean_basin([1.0, 0.1, 1.0, 1.0], [0.5, -0.5, -0.5, -1.0], 0.5, 0.8)) == [
        "local",
        "local",
        "global",
        "global",
    ]
    assert list(euclidean_basin([0.1], [-2.0], 0.4, 0.6)) == ["global"]


def test_alignment_with_a_subspace():
    space = np.eye(4)[:, :2]
    assert saddle_alignment(np.array([3.0, 4.0, 0, 0]), space) == pytest.approx(1.0)
    assert saddle_alignment(np.array([0, 0, 1.0, 0]), space) == 0.0
    assert saddle_alignment(np.array([1.0, 0, 1.0, 0]), space) == pytest.approx(2**-0.5)
    assert saddle_alignment(np.ones(4), np.zeros((4, 0))) == 0.0


def test_the_unstable_space_on_e_zero_is_at_most_the_reduced_curvature_over_the_metric(small):
    p, q, w = 0.2, 0.3, 0.5
    h = np.array([p, q])
    phi = float(small.reduced.bind(p=p, q=q).references["phi_prime_at_zero"])
    kappa = 2 * phi * (1 + 2 * w * abs(w))
    metric = np.asarray(small.metric(jnp.asarray([1e-5, w]), jnp.asarray(h)))
    rates, space = unstable_space(small, w, h)
    assert kappa < 0 and rates[0] <= kappa / metric[0, 0] + 1e-9
    np.testing.assert_allclose(space.T @ space, np.eye(space.shape[1]), atol=1e-8)


def test_the_full_hessian_is_jax_s_hessian_of_the_exact_loss(small):
    """Formed from Hessian-vector products in blocks (the last one padded): the same matrix as
    ``jax.hessian`` of the exact loss, at a point off the family (random weights)."""
    from gradflow.systems.markov.full_landscape import full_field

    h = np.array([0.3, 0.6])
    unravel = ravel_pytree(small.embed(jnp.asarray([0.7, -0.4]), jnp.asarray(h)))
    x = np.random.default_rng(5).normal(0.0, 0.5, unravel[0].size)
    loss = full_field(small).loss
    reference = np.asarray(jax.hessian(lambda y: loss(y, jnp.asarray(h)))(jnp.asarray(x)))
    np.testing.assert_allclose(
        full_hessian(small, x, h), reference, atol=1e-10 * np.abs(reference).max()
    )


class _Decay:
    """A landscape-like stand-in for :func:`refined_crossing`: ``L = ½‖x‖²`` in two weights,
    its flow ``x = x0 e^{−t}``, with a ReLU far away (never met)."""

    h = None
    kinks = gf.Kinks(
        surfaces=lambda theta, args: jnp.stack([-theta[0] - 10.0]),
        loss_at=lambda theta, s, args: 0.5 * theta @ theta + s[0] * (-theta[0] - 10.0),
        lo=np.zeros(1),
        hi=np.ones(1),
    )

    def loss(self, theta):
        theta = np.asarray(theta)
        return 0.5 * np.sum(theta**2, axis=-1)

    def grad(self, theta):
        return np.asarray(theta)


def test_the_stop_is_the_crossing_of_the_level_on_the_re_integrated_step():
    """From ``x0 = (1, 0)``, ``L = ½e^{−2t}`` reaches ``0.05`` at ``½ ln 10``; the run recorded
    at loose tolerances (``rtol = 10⁻⁴``) ends its crossing step later; from the start of that
    step, re-integrated, the crossing is found to the recorded point's own error."""
    land = _Decay()
    options = gf.FlowOptions(
        controller=gf.PID(rtol=1e-4, atol=1e-6), stop=gf.StopRule(t_max=5.0, max_steps=1000)
    )
    run = gf.slide(land.kinks, np.array([1.0, 0.0]), None, options, decide_below=0.05, record=True)
    path = Path(run.ts, run.thetas, -run.thetas)
    assert run.time > 0.5 * np.log(10) + 1e-3
    assert refined_crossing(land, path, 0.05) == pytest.approx(0.5 * np.log(10), abs=1e-4)
