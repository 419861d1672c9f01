"""Reduced vs full (value, gradient, dynamics): every canonical Markov model against the exact loss of the full
transformer at ``embed(θ)``, float64, all 2^N input sequences enumerated."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gradflow.systems import markov
from gradflow.systems.markov.attention import canonical_attention, canonical_attention_bias
from gradflow.systems.markov.checks import dynamics_check, embedding_checks, random_points

P, Q = 0.5, 0.8
LENGTH = 8
"""Positions of the full model in the value/gradient checks (2^8 = 256 sequences enumerated)."""
RUN = {"length": 6, "steps": 1200, "every": 24}
"""One compiled gradient-descent run shared by the dynamics tests and `gradflow compare --steps 1200`."""
FACTORIES = {
    "canonical": markov.canonical,
    "canonical-bias": markov.canonical_bias,
    "canonical-attention": canonical_attention,
    "canonical-attention-bias": canonical_attention_bias,
}


def _entropy(x: float) -> float:
    return -x * math.log(x) - (1 - x) * math.log(1 - x)


H_PI = _entropy(P / (P + Q))
H_RATE = (Q * _entropy(P) + P * _entropy(Q)) / (P + Q)


def _direction(rng: np.random.Generator, d: int = 6) -> np.ndarray:
    alpha = rng.standard_normal(d)
    return alpha / np.linalg.norm(alpha)


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_value_and_pulled_back_gradient_at_random_points(name, rng):
    bound = FACTORIES[name](P, Q)
    checks = embedding_checks(
        bound, random_points(bound, 20, seed=3), length=LENGTH, direction=_direction(rng)
    )
    assert checks.value_error <= 1e-9
    assert checks.gradient_error <= 1e-7
    assert checks.outside_family.max() <= 1e-12
    shares = np.sum(list(checks.off_groups.values()), axis=0)
    np.testing.assert_allclose(shares, 1.0, atol=1e-12)


def test_both_branches_of_the_ffn(rng):
    """``s = e(1 + a e²/4) < 0`` (the FFN fires after a 0) and ``e < 0``: still exact."""
    bound = canonical_attention_bias(P, Q)
    thetas = np.array([[1.5, 0.7, -3.0, 0.3], [-1.2, -0.9, 0.5, -0.4], [-1.0, 1.1, -5.0, 0.2]])
    s = thetas[:, 0] * (1 + thetas[:, 2] * thetas[:, 0] ** 2 / 4)
    assert (s < 0).sum() == 2
    checks = embedding_checks(bound, thetas, length=LENGTH, direction=_direction(rng))
    assert checks.value_error <= 1e-9 and checks.gradient_error <= 1e-7


def test_softmax_attention_is_exact_where_the_attention_output_is_zero(rng):
    bound = markov.canonical_bias(P, Q)
    checks = embedding_checks(
        bound, random_points(bound, 5, seed=4), length=LENGTH, attention="softmax"
    )
    assert checks.value_error <= 1e-9 and checks.gradient_error <= 1e-7
    assert checks.outside_family.max() <= 1e-12


def test_full_gradient_vanishes_on_the_global_minima_and_on_e_zero(rng):
    """On Γ* the full model predicts the Bayes bigram law (loss = entropy rate = inf L_full), and
    at e = 0 every token vector is 0: both are critical points of the full model."""
    bound = markov.canonical(P, Q)
    c_star = math.log((1 - P) * (1 - Q) / (P * Q))
    w = np.array([-1.0, -1.5, -2.5])
    on_gamma = np.stack([np.sqrt(c_star / (1 + 2 * w * np.abs(w))), w], axis=1)
    on_plane = np.array([[0.0, 0.3], [0.0, -1.2]])
    checks = embedding_checks(
        bound, np.concatenate([on_gamma, on_plane]), length=LENGTH, direction=_direction(rng)
    )
    np.testing.assert_allclose(checks.full_loss, [H_RATE] * 3 + [H_PI] * 2, atol=1e-12)
    np.testing.assert_allclose(checks.pulled_grad, 0.0, atol=1e-10)


@pytest.mark.slow
def test_deviation_from_the_reduced_flow_starts_at_the_predicted_rate():
    """``d/dt ‖π(Θ(t)) - θ(t)‖`` at ``t = 0`` is ``‖Dπ (I - P) ∇L_full‖`` (first-order theory)."""
    run = dynamics_check(canonical_attention_bias(P, Q), [0.5, -1.0, 0.3, 0.1], lr=1e-5, **RUN)
    assert run.first_order_rate > 0.01
    slopes = run.deviation[1:] / run.times[1:]
    np.testing.assert_allclose(slopes, run.first_order_rate, rtol=1e-2)
    np.testing.assert_allclose(np.diag(run.metric), [1 + 6 / 4, 8, 1, 1], atol=1e-12)


@pytest.mark.parametrize(
    "theta0, target", [([0.5, -1.0, 0.0, 0.0], H_RATE), ([0.3, 0.5, 0.0, 0.0], H_PI)]
)
def test_full_descent_ends_where_the_reduced_flow_does(theta0, target):
    """From the reduced model's global basin the full model reaches the entropy rate; from the
    unigram basin (p + q > 1, w > -1/√2, small e) it stops at H(π)."""
    run = dynamics_check(canonical_attention_bias(P, Q), theta0, lr=0.1, **RUN)
    assert run.full_loss[-1] == pytest.approx(target, abs=1e-6)
    assert run.reduced_loss[-1] == pytest.approx(target, abs=1e-6)
