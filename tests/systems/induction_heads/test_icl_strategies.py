"""In-context strategies: hand-counted values, causality, reference KL levels, Bayes optimality."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import dblquad

from gradflow.systems.induction_heads import data as d
from gradflow.systems.induction_heads import strategies as st

REFERENCE = {
    # Edelman et al. (2024): T = 100, last position, KL(true ‖ strategy), Monte Carlo with
    # standard error ≤ 6e-4 (the reference levels of docs/systems/induction-heads.md).
    2: {"uniform": 0.2123, "unigram": 0.0873, "bigram": 0.0093},
    3: {"uniform": 0.2790, "unigram": 0.1691, "bigram": 0.0264},
}
REFERENCE_SE = 6e-4


def test_strategies_by_hand():
    x = jnp.asarray([[0, 1, 0, 0, 1]])
    s = {m: np.asarray(v[0]) for m, v in st.strategies(x, 2).items()}
    np.testing.assert_allclose(s["uniform"], 0.5)
    # unigram at t = 4 (tokens 0 1 0 0): counts (3, 1) → (4, 2) / 6
    np.testing.assert_allclose(s["unigram"][3], [4 / 6, 2 / 6])
    # bigram at t = 4, x_4 = 0: transitions out of 0 before t: 0→1 (s=1), 0→0 (s=3) → (2, 2) / 4
    np.testing.assert_allclose(s["bigram"][3], [2 / 4, 2 / 4])
    # bigram at t = 5, x_5 = 1: transitions out of 1 before t: 1→0 (s=2) → (2, 1) / 3
    np.testing.assert_allclose(s["bigram"][4], [2 / 3, 1 / 3])
    # bigram at t = 1: no transitions → uniform
    np.testing.assert_allclose(s["bigram"][0], [0.5, 0.5])


def test_strategies_are_causal_and_last_position_agrees():
    x = d.sample(jax.random.key(0), d.Dirichlet(), 50, 3, 30).x
    full = st.strategies(x, 3)
    last = st.last_position(x, 3)
    for m in st.STRATEGY_NAMES:
        np.testing.assert_allclose(full[m][:, -1], last[m], atol=1e-14)
    t = 12
    changed = x.at[:, t:].set((x[:, t:] + 1) % 3)
    for m, probs in st.strategies(changed, 3).items():
        np.testing.assert_allclose(probs[:, :t], full[m][:, :t], atol=1e-14)


def test_uniform_level_k2_equals_quadrature():
    """E KL(P_{x_T,·} ‖ u) = 2 ∫∫ π0(p, q) KL((1-p, p) ‖ u) dp dq since x_T ~ π (k = 2)."""

    def integrand(q, p):
        h = sum(v * np.log(v) for v in (p, 1 - p) if v > 0)
        return 2 * q / (p + q) * (np.log(2) + h)

    exact = dblquad(integrand, 0, 1, 0, 1, epsabs=1e-11)[0]
    level = st.kl_levels(jax.random.key(11), d.Dirichlet(), 2, 100, 60_000, chunk=60_000)["uniform"]
    assert level.se < 1e-3
    assert abs(level.mean - exact) < 3 * level.se


@pytest.mark.parametrize("k", [2, 3])
def test_reference_levels(k):
    """The paper's levels at T = 100 (± 3 standard errors of the difference of two estimates)."""
    levels = st.kl_levels(jax.random.key(100 + k), d.Dirichlet(), k, 100, 60_000, chunk=60_000)
    for m, ref in REFERENCE[k].items():
        level = levels[m]
        assert level.se < 1e-3
        assert abs(level.mean - ref) < 3 * np.hypot(level.se, REFERENCE_SE), (k, m, level, ref)
    assert levels["bigram"].mean < levels["unigram"].mean < levels["uniform"].mean


def _posterior_mean_k2(x: list[int], t: int) -> float:
    """E[P_{x_t, 0} | x_1 … x_t] for k = 2 by quadrature over (p, q) = (P_01, P_10).

    Posterior density ∝ π_{x_1}(p, q) Π_{s<t} P_{x_s, x_{s+1}} on the unit square.
    """

    def density(q, p):
        P = np.array([[1 - p, p], [q, 1 - q]])
        lik = (q if x[0] == 0 else p) / (p + q)
        for s in range(t - 1):
            lik *= P[x[s], x[s + 1]]
        return lik, P[x[t - 1], 0]

    norm = dblquad(lambda q, p: density(q, p)[0], 0, 1, 0, 1, epsabs=1e-13)[0]
    return dblquad(lambda q, p: np.prod(density(q, p)), 0, 1, 0, 1, epsabs=1e-13)[0] / norm


def test_bayes_matches_quadrature_along_a_sequence(long_programs):
    """Importance-sampled posterior means against quadrature, k = 2.

    At t = 1 the posterior is ∝ π_{x_1}(P) alone, so the Bayes predictor is not the add-one
    bigram's 1/2 there; later the first token's weight fades.  With 5,000 samples the bound
    below is 0.021, under the distance of the add-one bigram's predictions (the proposal,
    unweighted) from the exact posterior means: 0.09, 0.06, 0.04 and 0.05 at t = 1, 2, 5, 8.
    """
    x = [1, 1, 0, 1, 1, 1, 0, 0]
    samples = 5_000
    with long_programs():
        estimate = st.bayes(jax.random.key(5), jnp.asarray([x]), 2, samples=samples)
    estimate = np.asarray(estimate)[0, :, 0]
    exact = {t: _posterior_mean_k2(x, t) for t in (1, 2, 5, 8)}
    for t, value in exact.items():
        # the ratio estimator's spread is below sd(P_{x_t,0}) ≤ 1/2 over √samples
        assert abs(estimate[t - 1] - value) < 3 * 0.5 / np.sqrt(samples), t
    assert abs(exact[1] - 0.5) > 0.05


def test_metrics_of_the_strategies_themselves():
    batch = d.sample(jax.random.key(6), d.Dirichlet(), 200, 3, 40)
    preds = st.strategies(batch.x, 3)
    for i, m in enumerate(st.STRATEGY_NAMES):
        out = st.metrics(preds[m], batch)
        assert float(out.distance_mean[i]) == pytest.approx(0.0, abs=1e-14)
        assert st.nearest(out.distance_mean) == i
        np.testing.assert_allclose(out.test_mean, st.kl(st.true_next(batch), preds[m]).mean())
