"""The canonical Markov model against closed forms derived independently in each test.

Source of the facts: Makkuva et al., "Local to Global" (NeurIPS 2024), §3, and the derivation in docs/systems/markov.md.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

import gradflow
from gradflow.systems import markov

PQ = [(0.5, 0.8), (0.7, 0.6), (0.1, 0.1), (0.9, 0.9), (0.2, 0.3), (0.35, 0.65)]


def stationary(p: float, q: float) -> np.ndarray:
    """π solving πP = π for P = [[1-p, p], [q, 1-q]], from the eigenvector (not the formula)."""
    kernel = np.array([[1 - p, p], [q, 1 - q]])
    values, vectors = np.linalg.eig(kernel.T)
    v = np.real(vectors[:, np.argmin(np.abs(values - 1))])
    return v / v.sum()


def entropy_rate_by_definition(p: float, q: float) -> float:
    """H(x_{n+1} | x_n) = -Σ_i π_i Σ_j P_ij ln P_ij."""
    kernel = np.array([[1 - p, p], [q, 1 - q]])
    return float(-(stationary(p, q)[:, None] * kernel * np.log(kernel)).sum())


def bce(y: float, f: float) -> float:
    """Expected binary cross-entropy of logit f against target probability y (nats)."""
    return float(y * np.logaddexp(0.0, -f) + (1 - y) * np.logaddexp(0.0, f))


def loss_by_bias_minimization(e: float, w: float, p: float, q: float) -> float:
    """min over b of π0 ℓ_p(b - e²/2) + π1 ℓ_{1-q}(b - e²/2 + e²(1 + 2w|w|)), by scipy."""
    pi = stationary(p, q)
    c = e**2 * (1 + 2 * w * abs(w))
    objective = lambda f0: pi[0] * bce(p, f0) + pi[1] * bce(1 - q, f0 + c)  # noqa: E731
    return float(minimize_scalar(objective, bracket=(-5, 5), tol=1e-14).fun)


@pytest.mark.parametrize("p, q", PQ)
def test_entropy_rate_and_unigram_loss_match_their_definitions(p: float, q: float) -> None:
    refs = markov.canonical(p, q).references
    pi = stationary(p, q)
    assert refs["entropy_rate"] == pytest.approx(entropy_rate_by_definition(p, q), abs=1e-12)
    assert refs["unigram_loss"] == pytest.approx(-(pi * np.log(pi)).sum(), abs=1e-12)
    assert refs["phi_prime_at_zero"] == pytest.approx(pi[0] * pi[1] * (p + q - 1), abs=1e-15)


def test_reference_values_at_p05_q08() -> None:
    refs = markov.canonical(0.5, 0.8).references
    assert refs["entropy_rate"] == pytest.approx(0.619015, abs=5e-7)
    assert refs["unigram_loss"] == pytest.approx(0.666278, abs=5e-7)


@pytest.mark.parametrize("p, q", PQ)
def test_c_star_is_the_logit_gap_of_the_bigram_predictor(p: float, q: float) -> None:
    """The bigram predictor's logits are logit(p) at x_n = 0 and logit(1 - q) at x_n = 1."""
    logit = lambda x: np.log(x / (1 - x))  # noqa: E731
    c_star = markov.canonical(p, q).references["c_star"]
    assert c_star == pytest.approx(logit(1 - q) - logit(p), abs=1e-12)
    assert np.sign(c_star) == np.sign(1 - p - q)


@pytest.mark.parametrize("p, q", PQ)
def test_bias_optimized_loss_equals_numerical_minimization_over_b(p: float, q: float, rng) -> None:
    model = markov.canonical(p, q)
    points = rng.uniform(-2.5, 2.5, size=(12, 2))
    expected = [loss_by_bias_minimization(e, w, p, q) for e, w in points]
    np.testing.assert_allclose(model.loss(points), expected, rtol=0, atol=1e-11)


def test_spot_values_at_p05_q08() -> None:
    model = markov.canonical(0.5, 0.8)
    refs = model.references
    assert model.loss([1.0, 1.0]) == pytest.approx(1.118469, abs=5e-7)
    assert model.loss([1.0, -1.0]) == pytest.approx(0.622419, abs=5e-7)
    assert model.loss([0.0, 0.0]) == pytest.approx(refs["unigram_loss"], abs=1e-14)
    for e, w in [(0.445019, -2.0), (1.177410, -1.0)]:
        assert e**2 * (1 + 2 * w * abs(w)) == pytest.approx(refs["c_star"], abs=5e-6)
        assert model.loss([e, w]) == pytest.approx(refs["entropy_rate"], abs=1e-10)


@pytest.mark.parametrize("p, q", PQ)
def test_phi_slope_at_zero(p: float, q: float) -> None:
    """Φ'(0) = π0 π1 (p + q - 1): L(e, 0) = Φ(e²), so (L(e, 0) - H(π)) / e² → Φ'(0)."""
    model = markov.canonical(p, q)
    e = 1e-4
    slope = (model.loss([e, 0.0]) - model.loss([0.0, 0.0])) / e**2
    assert slope == pytest.approx(model.references["phi_prime_at_zero"], abs=1e-6)


@pytest.mark.parametrize("p, q", PQ)
def test_hessian_on_the_line_e0(p: float, q: float) -> None:
    """∇²L(0, w) = diag(2(1 + 2w|w|) Φ'(0), 0) (chain rule through c = e²(1 + 2w|w|))."""
    model = markov.canonical(p, q)
    slope = model.references["phi_prime_at_zero"]
    ws = np.array([-2.5, -1.0, -0.3, 0.4, 1.7])
    points = np.stack([np.zeros_like(ws), ws], axis=1)
    expected = np.zeros((len(ws), 2, 2))
    expected[:, 0, 0] = 2 * (1 + 2 * ws * np.abs(ws)) * slope
    np.testing.assert_allclose(model.hessian(points), expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(model.grad(points), 0.0, atol=1e-15)


def test_energy_is_conserved_along_computed_trajectories() -> None:
    """dE/dt = 0 for E = e² - w² - sgn(w) ln|w| under dθ/dt = -∇L (to 1e-6 relative)."""
    for (p, q), start in [
        ((0.9, 0.9), (0.5, -0.5)),
        ((0.1, 0.1), (0.2, -1.5)),
        ((0.7, 0.6), (1.5, 2.0)),
    ]:
        model = markov.canonical(p, q)
        path = gradflow.flow(model, start).thetas
        energy = model.invariant("E", path)
        assert np.max(np.abs(energy - energy[0])) <= 1e-6 * abs(energy[0])


def test_flow_endpoints_from_the_issue() -> None:
    """p = q = .9 from (0.5, -0.5) ends on Γ*; p = q = .1 from (0.2, -1.5) at a local minimum."""
    high = gradflow.flow(markov.canonical(0.9, 0.9), [0.5, -0.5])
    assert high.converged
    assert high.losses[-1] == pytest.approx(0.325083, abs=5e-7)
    assert high.losses[-1] == pytest.approx(
        markov.canonical(0.9, 0.9).references["entropy_rate"], abs=1e-10
    )
    low = gradflow.flow(markov.canonical(0.1, 0.1), [0.2, -1.5])
    assert low.converged
    assert low.losses[-1] == pytest.approx(np.log(2), abs=1e-10)
    assert abs(low.endpoint[0]) < 1e-6 and low.endpoint[1] < -1 / np.sqrt(2)
