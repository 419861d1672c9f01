"""Minimal induction-head model: the (a, b, v) reduction, its symmetry, first gradients, dynamics."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import sympy as sp

from gradflow import FlowOptions, GradientDescent, StopRule, flow
from gradflow.systems.induction_heads import data as d
from gradflow.systems.induction_heads import minimal as mm
from gradflow.systems.induction_heads import reduction as R
from gradflow.systems.induction_heads.phases import phases
from gradflow.systems.induction_heads.strategies import true_next
from gradflow.systems.induction_heads.train import RunSpec, train_minimal


@pytest.mark.parametrize("mixing", mm.MIXINGS)
def test_symbolic_reduction_on_every_short_sequence(mixing):
    """f(E; aI + b11ᵀ) = a U + b C exactly, for all 2^4 binary sequences and some ternary ones."""
    sequences = [list(s) for s in itertools.product(range(2), repeat=4)]
    sequences += [[0, 1, 2, 1], [2, 2, 0, 1], [1, 0, 1, 2]]
    for x in sequences:
        kk = max(2, max(x) + 1)
        full = R.symbolic_minimal_logits(x, kk, R.family(kk), mixing)
        reduced = R.symbolic_reduced_logits(x, kk, mixing)
        assert sp.simplify(full - reduced) == sp.zeros(len(x), kk), x


def test_softmax_positional_gradient_vanishes_with_a():
    """Softmax mixing: the row sums of M are 1, so ∂f/∂v = a ∂U/∂v; linear mixing has no such law."""
    x = [0, 1, 1, 0, 1]
    v = R.v_symbols(len(x))
    soft = R.symbolic_reduced_logits(x, 2, "softmax")
    assert all(sp.simplify(soft.diff(vm).subs(R.a, 0)) == sp.zeros(*soft.shape) for vm in v)
    linear = R.symbolic_reduced_logits(x, 2, "linear")
    assert any(sp.simplify(linear.diff(vm).subs(R.a, 0)) != sp.zeros(*linear.shape) for vm in v)


def test_frobenius_metric():
    for kk in (2, 3, 4):
        assert R.frobenius_metric(kk) == R.frobenius_metric(R.k).subs(R.k, kk)
        np.testing.assert_allclose(
            R.metric_inverse(kk) @ np.array([[kk, kk], [kk, kk**2]]), np.eye(2), atol=1e-14
        )


def test_lambda_moments_symbolic_and_monte_carlo():
    """E λ^n = 2/((n+1)(n+2)) (n even), 0 (n odd), λ = 1 - P01 - P10 under Dirichlet(1) rows."""
    closed = R.lambda_moment_closed_form()
    for m in range(12):
        assert sp.simplify(closed.subs(R.n, m) - R.lambda_moment(m)) == 0
        assert R.lambda_moment(m) == (sp.Rational(2, (m + 1) * (m + 2)) if m % 2 == 0 else 0)
    P = np.asarray(d.Dirichlet().matrices(jax.random.key(8), 200_000, 2))
    lam = 1 - P[:, 0, 1] - P[:, 1, 0]
    for m in range(1, 7):
        values = lam**m
        assert abs(values.mean() - float(R.lambda_moment(m))) < 4 * values.std() / np.sqrt(
            values.size
        )


@pytest.fixture(scope="module")
def batch():
    return d.sample(jax.random.key(21), d.Dirichlet(), 24, 3, 20)


_grad = jax.jit(jax.grad(mm.minimal_loss), static_argnums=2)


@pytest.mark.parametrize("mixing", mm.MIXINGS)
def test_reduced_logits_equal_minimal_logits_on_the_family(batch, mixing):
    theta = jax.random.normal(jax.random.key(1), (2 + 19,))
    full = mm.minimal_logits(mm.embed(theta, 3), batch.x, mixing)
    reduced = mm.reduced_logits(theta, batch.x, 3, mixing)
    np.testing.assert_allclose(reduced, full, atol=1e-13)
    for lags in (6, 2):  # the other lags fixed at 0; 2 ≤ T/4 lags by shifted sums
        short = theta[: 2 + lags]
        np.testing.assert_allclose(
            mm.reduced_logits(short, batch.x, 3, mixing),
            mm.minimal_logits(mm.embed(short, 3), batch.x, mixing),
            atol=1e-13,
        )


@pytest.mark.parametrize("mixing", mm.MIXINGS)
def test_each_sequence_reduced_loss_is_relabelling_invariant(batch, mixing):
    """``U`` and ``C`` permute with the states and the target row with them, so each sequence's
    reduced loss is the same under all ``k!`` relabellings: the reduced flow on a sample is the
    flow on its relabelling closure."""
    theta = jax.random.normal(jax.random.key(6), (2 + 19,))
    closed = mm.relabel_all(batch)
    logits = mm.reduced_logits(theta, closed.x, 3, mixing)
    per = -jnp.mean(jnp.sum(true_next(closed) * jax.nn.log_softmax(logits), -1), 1)
    per = np.asarray(per).reshape(6, -1)
    np.testing.assert_allclose(per, np.broadcast_to(per[0], per.shape), rtol=1e-14, atol=0)
    np.testing.assert_allclose(
        mm.reduced_field(mixing).grad(theta, batch),
        mm.reduced_field(mixing).grad(theta, closed),
        rtol=0,
        atol=1e-15,
    )


def test_relabelling_equivariance(batch):
    """f(σ(x); ΠᵀWΠ) = f(x; W) with the state axis permuted by σ."""
    W = jax.random.normal(jax.random.key(2), (3, 3))
    v = jax.random.normal(jax.random.key(3), (19,))
    perm = np.array([2, 0, 1])
    inverse = np.argsort(perm)
    base = mm.minimal_logits(mm.Minimal(W, v), batch.x, "softmax")
    moved = mm.minimal_logits(
        mm.Minimal(W[inverse][:, inverse], v), jnp.asarray(perm)[batch.x], "softmax"
    )
    np.testing.assert_allclose(moved[..., perm], base, atol=1e-13)


def test_first_gradient_second_layer_learns_first(batch):
    """At W = 0, v = 0: ∂L/∂v = 0 exactly; ∂L/∂W ∈ {aI + b11ᵀ} on a relabelling-closed sample."""
    sym = mm.relabel_all(batch)
    g = _grad(mm.initial(3, 20, 19, "softmax"), sym, "softmax")
    assert float(jnp.abs(g.v).max()) == 0.0
    assert float(mm.family_residual(g.W)) < 1e-14 * float(jnp.linalg.norm(g.W))
    assert float(jnp.linalg.norm(g.W)) > 1e-3
    # With a = 0 the positional gradient vanishes for any b and v (softmax rows sum to 1).
    params = mm.Minimal(W=0.7 * jnp.ones((3, 3)), v=jax.random.normal(jax.random.key(4), (19,)))
    assert float(jnp.abs(_grad(params, batch, "softmax").v).max()) < 1e-15


def test_population_gradient_has_no_off_family_part():
    """On i.i.d. sequences the off-family part of ∂L/∂W is zero within its Monte-Carlo error."""
    n = 300
    data = d.sample(jax.random.key(22), d.Dirichlet(), n, 3, 20)
    params = mm.embed(jnp.concatenate([jnp.array([0.8, 0.3]), 0.5 * jnp.ones(19)]), 3)

    def per_sequence(x, P):
        g = jax.grad(mm.minimal_loss)(params, d.ICLBatch(x[None], P[None]), "softmax").W
        return g - mm.embed(mm.project(mm.Minimal(g, jnp.zeros(0))), 3).W

    off = np.asarray(jax.jit(jax.vmap(per_sequence))(data.x, data.P)).reshape(n, -1)
    mean, se = off.mean(0), off.std(0) / np.sqrt(n)
    assert np.all(np.abs(mean) < 4 * se)
    assert np.abs(off).max() > 1e-4  # single sequences do leave the family


def test_reduced_flow_matches_the_minimal_model_trained_directly(batch):
    """GD on (W, v) and GD on (a, b, v) in the metric G coincide on a relabelling-closed sample."""
    sym = mm.relabel_all(batch)
    lr, steps = 2.0, 30
    params = mm.initial(3, 20, 19, "softmax")
    step = jax.jit(
        lambda p: jax.tree.map(
            lambda w, g: w - lr * g, p, jax.grad(mm.minimal_loss)(p, sym, "softmax")
        )
    )
    path = [mm.project(params)]
    for _ in range(steps):
        params = step(params)
        assert float(mm.family_residual(params.W)) < 1e-12
        path.append(mm.project(params))
    descent = FlowOptions(solver=GradientDescent(lr), stop=StopRule(max_steps=steps))
    reduced = flow(mm.reduced_field("softmax"), jnp.zeros(21), descent, args=sym)
    np.testing.assert_allclose(reduced.thetas, np.stack(path), atol=1e-11)
    assert reduced.thetas[-1, 0] > 0.5  # it moved


def test_short_training_passes_unigram_before_bigram():
    """Evaluated every 8 steps on 128 sequences: the unigram plateau lasts about 56 steps, seven
    evaluations."""
    spec = RunSpec(model="minimal", k=3, T=100, steps=120, lr=8.0, eval_every=8, eval_n=128)
    history = train_minimal(spec, progress=False)
    ph = phases(history.steps, history.distance_mean)
    assert ph.order == ["uniform", "unigram", "bigram"], ph.describe()
    assert ph.plateau_length > 0
