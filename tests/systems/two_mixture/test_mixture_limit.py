"""Two-mixture task: the infinite-width limit and the attention's linear escape, checked against
values that follow from the mathematics (the limit's symmetric start, the derivative of the
attention average at B = 0, the descent map's exact growth under a constant drive)."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np
import pytest

from gradflow import GradflowError
from gradflow.systems.two_mixture.limit import limit_descent, limit_init, normal_quadrature
from gradflow.systems.two_mixture.reduced import ReducedMixture, infinite_width_state
from gradflow.systems.two_mixture.stages import first_crossing
from gradflow.systems.two_mixture.transformer import MixtureConfig

LN2 = np.log(2.0)


@pytest.mark.parametrize(
    ("K", "combine", "neurons"),
    [(2, "difference", "average"), (3, "signed-sum", "tokens"), (2, "tied", "average")],
)
def test_the_limit_starts_at_zero_scores_identity_grams_and_f_identically_zero(K, combine, neurons):
    """B = 0, P_Q = P_K = ω² I; the two heads (and the two halves of a signed-sum head) carry the
    same neuron points, so F_+ = F_− (or each head's halves cancel) and f ≡ 0: loss ln 2."""
    config = MixtureConfig(K=K, d=2 * K, omega=0.2, combine=combine, neurons=neurons)
    model, state = limit_init(config, 32)
    H = 1 if combine == "tied" else 2
    assert np.array_equal(state.B, np.zeros((H, 2 * K, 2 * K)))
    assert np.allclose(state.P_Q, 0.04 * np.eye(2 * K), rtol=0, atol=1e-17)
    assert np.allclose(state.P_K, 0.04 * np.eye(2 * K), rtol=0, atol=1e-17)
    assert state.N.shape == (2, 32, 2 * K) and model.kappa == pytest.approx(1 / np.sqrt(32))
    assert np.abs(np.asarray(model.logits(state.B, state.N))).max() < 1e-16
    assert float(model.loss(state)) == pytest.approx(LN2, abs=1e-15)


def test_the_quadrature_has_mean_zero_and_approaches_the_identity_covariance():
    """Antithetic pairs make the mean exactly 0; the second moment of scrambled Sobol points
    through the normal quantile tends to I (here within 2 % at 4096 points, 6 % at 256)."""
    for points, tol in ((256, 0.06), (4096, 0.02)):
        z = normal_quadrature(6, points)
        assert np.abs(z.mean(axis=0)).max() < 1e-15
        assert np.abs(z.T @ z / points - np.eye(6)).max() < tol


def test_the_limit_is_refused_without_its_clock_or_with_a_bad_quadrature():
    with pytest.raises(GradflowError, match="readout = 'mean'"):
        limit_init(MixtureConfig(readout="mean"))
    with pytest.raises(GradflowError, match="particles = 100"):
        limit_init(MixtureConfig(), 100)
    with pytest.raises(GradflowError, match="points = 6"):
        normal_quadrature(4, 6)


BETA = 3.0
"""The frozen neuron ``β v_1`` of head + (head − has none): ``f = β ReLU(⟨v_1, u⟩)``."""


def _driving_gradient(config: MixtureConfig) -> np.ndarray:
    """``G = ∂L/∂B`` of head + at B = 0 for the neuron β v_1, from the derivative of the
    attention average: a sample's tokens σ_i u_{a_i} (L = 3, distinct slots) score
    S_kj = σ_k σ_j B[a_k, a_j]; at B = 0, ∂att_ij/∂S_kj = (δ_ik − 1/L)/L, so
    ∂u/∂B[a, b] = (σ_a σ_b / L²)(x_a − u_0) when slots a and b are in the sample, u_0 the mean
    token.  With f = β ⟨v_1, u⟩ where ⟨v_1, u_0⟩ > 0 (else 0) and ℓ'(z) = −1/(1 + e^z),
    G[a, b] = (1/n) Σ_s ℓ'(y_s f_s) y_s β ⟨v_1, ∂u_s/∂B[a, b]⟩."""
    pop, L, r = config.population(), 3, 4
    G = np.zeros((r, r))
    for slots, signs, y in zip(pop.slots, pop.signs, pop.y):
        x = np.zeros((L, r))
        x[np.arange(L), slots] = signs
        u0 = x.mean(axis=0)
        f = BETA * u0[2]
        if f <= 0:
            continue
        weight = -y / (1 + np.exp(y * f)) / pop.n
        for k in range(L):
            for j in range(L):
                du = signs[k] * signs[j] / L**2 * (x[k] - u0)
                G[slots[k], slots[j]] += weight * BETA * du[2]
    return G


def test_escape_time_grows_like_ln_one_over_omega_with_the_slope_of_the_linear_escape():
    """Neurons frozen, attention from the limit's B = 0, P = ω² I.  Descent maps X = [S_Q S_K]
    to X (I − η M), M = [[0, Gᵀ], [G, 0]], so while G ≈ G(B = 0) the scores are
    B_k = ω²/2 Σ_i [(1 − ησ_i)^{2k} − (1 + ησ_i)^{2k}] a_i b_iᵀ (SVD G = Σ σ_i a_i b_iᵀ), and
    max |B| reaches s at t* = η ln(2s / (ω² max|a_1 b_1ᵀ|)) / (2 ln(1 + ησ_1)): slope
    η / ln(1 + ησ_1) in ln(1/ω), derived from G alone, not fitted."""
    config = MixtureConfig(K=2, d=4, m=1, omega=1e-2)
    model = ReducedMixture.from_config(config)
    N = np.zeros((2, 1, 4))
    N[0, 0, 2] = BETA
    G = _driving_gradient(config)
    state = dataclasses.replace(infinite_width_state(config), N=jnp.asarray(N))
    autodiff = np.asarray(model.gradients(state)[0])
    assert np.abs(autodiff[0] - G).max() < 1e-15 and np.abs(autodiff[1]).max() == 0.0
    a, sigma, bt = np.linalg.svd(G)
    lr, level = 0.5, 0.1
    top = np.abs(np.outer(a[:, 0], bt[0])).max()
    slope = lr / np.log1p(lr * sigma[0])
    times = {}
    predicted = {w: slope * np.log(2 * level / (w**2 * top)) / 2 for w in (1e-2, 1e-3, 1e-4)}
    steps = int(1.3 * max(predicted.values()) / lr)  # one compiled descent for every ω
    for omega in predicted:
        start = dataclasses.replace(
            infinite_width_state(dataclasses.replace(config, omega=omega)), N=jnp.asarray(N)
        )
        path = model.descend(start, lr, steps, 1, (True, False))
        score = np.abs(np.asarray(path.B)).max(axis=(1, 2, 3))
        times[omega] = first_crossing(lr * np.arange(len(score)), score, level, rising=True)
        assert times[omega] == pytest.approx(predicted[omega], rel=1e-2)
    for wide, narrow in ((1e-2, 1e-3), (1e-3, 1e-4)):
        assert (times[narrow] - times[wide]) / np.log(10) == pytest.approx(slope, rel=2e-3)


def test_the_linear_escape_is_the_first_order_of_the_limit_dynamics():
    """While |B| ≪ 1 the joint limit's scores are B = ω² b(t) + O(ω⁴), b the linear escape
    carried along the run with the attention frozen; at ω = 10⁻³ they agree to 10⁻³ relative
    where max |B| ≤ 10⁻⁴ (the neurons feel B only at O(|B|))."""
    config = MixtureConfig(K=2, d=4, omega=1e-3)
    model, state = limit_init(config, 16)
    frozen = limit_descent(model, state, 0.5, 400, 20, attention=False)
    joint = limit_descent(model, state, 0.5, 400, 20, attention=True)
    assert np.array_equal(frozen.max_score, np.zeros_like(frozen.max_score))
    assert np.isnan(joint.tangent).all() and frozen.tangent[0] == 0.0
    small = (joint.max_score > 0) & (joint.max_score <= 1e-4)
    assert small.sum() >= 5
    linear = config.omega**2 * frozen.tangent[small]
    assert np.allclose(joint.max_score[small], linear, rtol=1e-3)
