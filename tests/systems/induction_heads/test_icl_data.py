"""ICL-MC sampler: priors, stationarity of the first token, bad input."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gradflow import GradflowError
from gradflow.systems.induction_heads import data as d


def test_dirichlet_rows_are_uniform_on_the_simplex():
    P = np.asarray(d.Dirichlet().matrices(jax.random.key(0), 50_000, 3))
    np.testing.assert_allclose(P.sum(-1), 1.0, atol=1e-12)
    assert P.min() > 0
    # Dirichlet(1, 1, 1) marginals are Beta(1, 2): E X = 1/3, E X² = 1/6.
    for power, moment in ((1, 1 / 3), (2, 1 / 6)):
        values = P[:, :, 0].ravel() ** power
        assert abs(values.mean() - moment) < 4 * values.std() / np.sqrt(values.size)


def test_doubly_stochastic_is_in_the_birkhoff_polytope_and_uniform_for_k2():
    P = np.asarray(d.DoublyStochastic().matrices(jax.random.key(1), 4000, 3))
    assert P.min() >= 0
    np.testing.assert_allclose(P.sum(-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(P.sum(-2), 1.0, atol=1e-12)
    P2 = np.asarray(d.DoublyStochastic().matrices(jax.random.key(2), 40_000, 2))
    off = P2[:, 0, 1]
    np.testing.assert_allclose(P2[:, 1, 0], off, atol=1e-12)
    # k = 2: B_2 = {[[1-p, p], [p, 1-p]]}, p uniform on [0, 1]: E p = 1/2, E p² = 1/3.
    for power, moment in ((1, 1 / 2), (2, 1 / 3)):
        values = off**power
        assert abs(values.mean() - moment) < 4 * values.std() / np.sqrt(values.size)


def test_unigram_prior_has_identical_rows():
    P = np.asarray(d.Unigram().matrices(jax.random.key(3), 100, 4))
    np.testing.assert_array_equal(P, np.broadcast_to(P[:, :1], P.shape))


def test_mixture_share_of_doubly_stochastic_sequences():
    rho, n = 0.25, 4000
    P = np.asarray(d.parse_prior(f"mixture:{rho}").matrices(jax.random.key(4), n, 3))
    doubly = np.all(np.abs(P.sum(-2) - 1) < 1e-9, axis=-1)
    assert abs(doubly.mean() - rho) < 4 * np.sqrt(rho * (1 - rho) / n)


def test_stationary_law_solves_the_balance_equation():
    P = d.Dirichlet().matrices(jax.random.key(5), 200, 4)
    pi = d.stationary(P)
    np.testing.assert_allclose(jnp.einsum("ni,nij->nj", pi, P), pi, atol=1e-12)
    np.testing.assert_allclose(pi.sum(-1), 1.0, atol=1e-12)


def test_chain_starts_stationary_and_follows_P():
    """x_1 ~ π and the transition frequencies match P, for one fixed matrix."""
    P1 = jnp.asarray([[0.7, 0.2, 0.1], [0.3, 0.3, 0.4], [0.5, 0.1, 0.4]])
    n, T = 20_000, 6
    x = np.asarray(d.sample_chain(jax.random.key(6), jnp.broadcast_to(P1, (n, 3, 3)), T))
    pi = np.asarray(d.stationary(P1))
    for t in (0, T - 1):
        freq = np.bincount(x[:, t], minlength=3) / n
        assert np.all(np.abs(freq - pi) < 4 * np.sqrt(pi * (1 - pi) / n))
    from_0 = x[:, 1:][x[:, :-1] == 0]
    freq = np.bincount(from_0, minlength=3) / from_0.size
    assert np.all(np.abs(freq - P1[0]) < 4 * np.sqrt(P1[0] * (1 - P1[0]) / from_0.size))


def test_sample_shapes():
    batch = d.sample(jax.random.key(7), d.Dirichlet(), 5, 3, 11)
    assert batch.x.shape == (5, 11) and batch.P.shape == (5, 3, 3)
    assert int(batch.x.min()) >= 0 and int(batch.x.max()) <= 2


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: d.sample(jax.random.key(0), d.Dirichlet(), 4, 1, 10), "k = 1"),
        (lambda: d.sample(jax.random.key(0), d.Dirichlet(), 4, 3, 1), "T = 1"),
        (lambda: d.sample(jax.random.key(0), d.DoublyStochastic(), 4, 5, 10), "k = 5"),
        (lambda: d.parse_prior("mixture:1.5"), r"\[0, 1\]"),
        (lambda: d.parse_prior("mixture:-0.1"), r"\[0, 1\]"),
        (lambda: d.parse_prior("mixture:abc"), "number"),
        (lambda: d.parse_prior("zipf"), "unknown prior 'zipf'"),
    ],
)
def test_bad_input_is_one_line(call, match):
    with pytest.raises(GradflowError, match=match) as info:
        call()
    assert "\n" not in str(info.value)
