"""Markov-chain sampler and exact enumeration: frequencies and probabilities from the kernel."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from gradflow import GradflowError
from gradflow.systems.markov.data import (
    check_length,
    check_switching,
    enumerate_sequences,
    sample_chains,
    sequence_probabilities,
)

P, Q = 0.3, 0.6
PI1 = P / (P + Q)


def _within(observed: float, expected: float, trials: int, z: float = 4.0) -> bool:
    """``observed`` frequency within ``z`` binomial standard errors of ``expected``."""
    return abs(observed - expected) <= z * np.sqrt(expected * (1 - expected) / trials)


def test_sampler_matches_the_kernel_and_the_stationary_law():
    x = np.asarray(sample_chains(jax.random.key(0), P, Q, 4000, 50))
    assert x.shape == (4000, 50) and x.dtype == np.int32 and set(np.unique(x)) <= {0, 1}
    assert _within(x[:, 0].mean(), PI1, 4000)
    assert _within(x[:, -1].mean(), PI1, 4000)
    prev, nxt = x[:, :-1].ravel(), x[:, 1:].ravel()
    after0 = nxt[prev == 0]
    after1 = nxt[prev == 1]
    assert _within(after0.mean(), P, after0.size, z=5.0)
    assert _within(1 - after1.mean(), Q, after1.size, z=5.0)


def test_sampler_first_symbol_law():
    x = np.asarray(sample_chains(jax.random.key(1), P, Q, 2000, 3, first_one=1.0))
    assert np.all(x[:, 0] == 1)
    assert _within(x[:, 1].mean(), 1 - Q, 2000)


def test_enumeration_is_every_binary_sequence_once():
    seqs = enumerate_sequences(6)
    assert seqs.shape == (64, 6)
    assert len({tuple(r) for r in seqs}) == 64


def test_sequence_probabilities_sum_to_one_and_are_stationary():
    seqs = enumerate_sequences(7)
    prob = np.asarray(sequence_probabilities(seqs, P, Q))
    assert prob.sum() == pytest.approx(1.0, abs=1e-14)
    marginals = prob @ seqs
    np.testing.assert_allclose(marginals, PI1, atol=1e-14)


def test_sequence_probabilities_with_a_given_first_law_follow_the_kernel_powers():
    seqs = enumerate_sequences(4)
    prob = np.asarray(sequence_probabilities(seqs, P, Q, first_one=1.0))
    lam = 1 - P - Q
    # P(x_n = 1 | x_1 = 1) = π1 + (1 - π1) λ^{n-1}
    expected = PI1 + (1 - PI1) * lam ** np.arange(4)
    np.testing.assert_allclose(prob @ seqs, expected, atol=1e-14)


def test_exact_enumeration_refuses_long_sequences_and_says_why():
    with pytest.raises(GradflowError, match=r"N = 15 .*2\^N = 32,768"):
        enumerate_sequences(15)
    assert check_length(64) == 64
    with pytest.raises(GradflowError, match="integer ≥ 1"):
        check_length(0)


@pytest.mark.parametrize("p, q", [(0.0, 0.5), (0.5, 1.0), (float("nan"), 0.5), ("x", 0.5)])
def test_bad_switching_probabilities(p, q):
    with pytest.raises(GradflowError, match=r"\(0, 1\)"):
        check_switching(p, q)
