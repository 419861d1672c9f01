"""The full Markov transformer: hand-built weights, causality, the exact population loss."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gradflow import GradflowError
from gradflow.systems.markov.data import (
    enumerate_sequences,
    prefix_ends,
    sample_chains,
    sequence_probabilities,
)
from gradflow.systems.markov.transformer import (
    MarkovTransformer,
    conditional_loss,
    exact_loss,
    expected_cross_entropy,
    logits,
    sample_loss,
    standard_init,
)

P, Q = 0.3, 0.6
PI1 = P / (P + Q)


def _scalar_model(
    attention: str, *, wq: float = 1.0, wo: float = 1.0, length: int = 5, b: float = 0.0
) -> MarkovTransformer:
    """d = 1: e = 1, p_n = 0, W_Q = W_K = wq, W_V = 1, W_O = wo, FFN off; logits by hand below."""
    one = jnp.ones((1, 1))
    return MarkovTransformer(
        e=jnp.ones(1),
        positions=jnp.zeros((length, 1)),
        W_Q=wq * one,
        W_K=wq * one,
        W_V=one,
        W_O=wo * one,
        W_1=jnp.zeros((4, 1)),
        W_2=jnp.zeros((1, 4)),
        b=jnp.asarray(b),
        unembed=None,
        attention=attention,
    )


def test_linear_attention_is_the_mean_of_score_times_value():
    x = np.array([[1, 0, 1, 1, 0]])
    f = np.asarray(logits(_scalar_model("linear"), jnp.asarray(x)))[0]
    # u_i = x_i, s_{n,i} = x_n x_i, y_n = x_n + (1/n) Σ_{i≤n} x_n x_i · x_i
    n = np.arange(1, 6)
    expected = x[0] + x[0] * np.cumsum(x[0]) / n
    np.testing.assert_allclose(f, expected, atol=1e-12)


def test_softmax_attention_with_zero_scores_is_the_causal_mean():
    x = np.array([[1, 0, 1, 1, 0]])
    f = np.asarray(logits(_scalar_model("softmax", wq=0.0, wo=2.0), jnp.asarray(x)))[0]
    n = np.arange(1, 6)
    np.testing.assert_allclose(f, x[0] + 2.0 * np.cumsum(x[0]) / n, atol=1e-12)


def test_ffn_and_bias_by_hand():
    model = MarkovTransformer(
        e=jnp.array([1.0, 0.0]),
        positions=jnp.array([[-0.5, 0.0]] * 3),
        W_Q=jnp.zeros((2, 2)),
        W_K=jnp.zeros((2, 2)),
        W_V=jnp.zeros((2, 2)),
        W_O=jnp.zeros((2, 2)),
        W_1=jnp.zeros((8, 2)).at[0, 0].set(2.0),
        W_2=jnp.zeros((2, 8)).at[0, 0].set(3.0),
        b=jnp.asarray(0.25),
        unembed=None,
        attention="linear",
    )
    # u = x - 1/2 on the first axis; z = u + 3 ReLU(2u); logit = z_1 + 0.25
    x = jnp.array([[0, 1, 1]])
    u = np.array([-0.5, 0.5, 0.5])
    np.testing.assert_allclose(
        np.asarray(logits(model, x))[0], u + 6 * np.maximum(u, 0) + 0.25, atol=1e-12
    )


def _random_model(
    rng: np.random.Generator, d: int, length: int, attention: str, scale: float = 1.0
) -> MarkovTransformer:
    """Weights N(0, scale²/d), float64, untied: large enough that every term matters."""
    shapes = {
        "e": (d,),
        "positions": (length, d),
        "W_Q": (d, d),
        "W_K": (d, d),
        "W_V": (d, d),
        "W_O": (d, d),
        "W_1": (4 * d, d),
        "W_2": (d, 4 * d),
        "b": (),
        "unembed": (d,),
    }
    weights = {
        k: jnp.asarray(scale * rng.standard_normal(s) / math.sqrt(d)) for k, s in shapes.items()
    }
    return MarkovTransformer(**weights, attention=attention)


@pytest.mark.parametrize("attention", ["softmax", "linear"])
def test_logits_are_causal(attention, rng):
    model = _random_model(rng, 4, 6, attention, scale=3.0)
    x = jnp.array([[1, 0, 1, 1, 0, 1]])
    flipped = x.at[0, 4:].set(1 - x[0, 4:])
    fx, ff = np.asarray(logits(model, x))[0], np.asarray(logits(model, flipped))[0]
    np.testing.assert_array_equal(fx[:4], ff[:4])
    assert np.all(fx[4:] != ff[4:])


def test_exact_loss_of_the_unigram_predictor_is_the_stationary_entropy():
    """Weights zero except ``b = ln(p/q)``: ``σ(b) = π1`` at every position, loss ``H(π)``."""
    model = _scalar_model("linear", wq=0.0, wo=0.0, b=math.log(P / Q))
    model = MarkovTransformer(**{**model.__dict__, "e": jnp.zeros(1)})
    h_pi = -PI1 * math.log(PI1) - (1 - PI1) * math.log(1 - PI1)
    assert float(exact_loss(model, P, Q)) == pytest.approx(h_pi, abs=1e-14)


def test_prefix_ends_are_the_blocks_of_sequences_sharing_a_prefix():
    """Every sequence's prefix ``x_1…x_n`` is the prefix of exactly one listed row, and the
    listed rows of one length have distinct prefixes: ``2 + 4 + … + 2^N`` of them."""
    seqs = enumerate_sequences(4)
    rows, cols = prefix_ends(4)
    assert rows.size == 2**5 - 2
    for n in range(1, 5):
        mine = rows[cols == n - 1]
        listed = {tuple(seqs[r, :n]) for r in mine}
        assert len(listed) == mine.size == 2**n
        assert {tuple(s[:n]) for s in seqs} == listed


@pytest.mark.parametrize("attention", ["softmax", "linear"])
def test_exact_loss_is_the_sum_over_every_sequence_and_position(attention, rng):
    """The prefix sum of :func:`exact_loss` against its definition, ``Σ_x P(x) E[ℓ | x]`` with
    the logits of every position of every sequence: value and gradient to rounding."""
    model = _random_model(rng, 4, 6, attention, scale=2.0)
    seqs = jnp.asarray(enumerate_sequences(6))

    def by_sequence(m: MarkovTransformer) -> jax.Array:
        weights = sequence_probabilities(seqs, jnp.asarray(P), jnp.asarray(Q))
        return jnp.sum(weights * conditional_loss(m, seqs, P, Q))

    value, grad = jax.value_and_grad(lambda m: exact_loss(m, P, Q))(model)
    expected, expected_grad = jax.value_and_grad(by_sequence)(model)
    assert float(value) == pytest.approx(float(expected), rel=1e-14)
    leaves, expected_leaves = jax.tree.leaves(grad), jax.tree.leaves(expected_grad)
    size = max(float(jnp.max(jnp.abs(g))) for g in expected_leaves)
    for a, b in zip(leaves, expected_leaves):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-13 * size)


def test_exact_loss_matches_monte_carlo_within_its_standard_error(rng):
    model = _random_model(rng, 4, 6, "softmax", scale=2.0)
    exact = float(exact_loss(model, P, Q))
    seqs = sample_chains(jax.random.key(6), P, Q, 20_000, 7)
    f = logits(model, seqs[:, :-1])
    per_sequence = np.asarray(
        jnp.mean(expected_cross_entropy(seqs[:, 1:].astype(f.dtype), f), axis=1)
    )
    se = per_sequence.std() / math.sqrt(per_sequence.size)
    assert abs(per_sequence.mean() - exact) <= 4 * se
    assert float(sample_loss(model, seqs)) == pytest.approx(per_sequence.mean(), rel=1e-12)
    conditional = np.asarray(conditional_loss(model, seqs[:, :-1], P, Q))
    assert abs(conditional.mean() - exact) <= 4 * conditional.std() / math.sqrt(conditional.size)
    assert conditional.std() < per_sequence.std()


def test_standard_init_scales():
    model = standard_init(jax.random.key(0), 64, 16)
    assert model.e.dtype == jnp.float32 and model.unembed is None
    for name, std in (
        ("W_Q", 0.02),
        ("W_1", 0.02),
        ("W_O", 0.02 / math.sqrt(2)),
        ("W_2", 0.02 / math.sqrt(2)),
    ):
        values = np.asarray(getattr(model, name)).ravel()
        # sample standard deviation of n normal draws: relative standard error 1/√(2n)
        assert abs(values.std() / std - 1) <= 4 / math.sqrt(2 * values.size)
    assert float(model.b) == 0.0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"d": 0}, "width d = 0"),
        ({"length": 0}, "N = 0"),
        ({"attention": "cosine"}, "attention = 'cosine'"),
    ],
)
def test_bad_settings(kwargs, message):
    settings = {"d": 4, "length": 4, **kwargs}
    attention = settings.pop("attention", "softmax")
    with pytest.raises(GradflowError, match=message):
        standard_init(jax.random.key(0), settings["d"], settings["length"], attention=attention)


def test_exact_loss_refuses_long_models():
    model = _scalar_model("linear", length=15)
    with pytest.raises(GradflowError, match="too long for exact enumeration"):
        exact_loss(model, P, Q)
