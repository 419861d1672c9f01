"""Two-layer attention-only transformer: the hand-built induction head counts bigrams exactly."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gradflow import GradflowError
from gradflow.systems.induction_heads import data as d
from gradflow.systems.induction_heads import strategies as st
from gradflow.systems.induction_heads import transformer as tr

K, T = 3, 40


@pytest.fixture(scope="module")
def handbuilt():
    x = d.sample(jax.random.key(0), d.Dirichlet(), 16, K, T).x
    model = tr.induction_head(K, T)
    return x, jax.jit(jax.vmap(model.trace))(x)


def _frequencies(x: jax.Array) -> tuple[np.ndarray, np.ndarray]:
    """Empirical next-token counts out of x_t among the pairs of x (no add-one), and their total."""
    counts = np.asarray(st.transition_counts(x, K))
    rows = np.take_along_axis(counts, np.asarray(x)[:, :, None, None], axis=2)[:, :, 0]
    return rows, rows.sum(-1)


def test_layer_one_attends_to_the_previous_token_exactly(handbuilt):
    _, trace = handbuilt
    pattern = np.asarray(trace.patterns[0])
    expected = np.eye(T, k=-1)
    expected[0, 0] = 1.0
    np.testing.assert_array_equal(pattern, np.broadcast_to(expected, pattern.shape))


def test_induction_head_outputs_the_bigram_counts(handbuilt):
    """Layer-2 head output = counts #{s: x_{s-1} = x_t, x_s = j} / total, exactly.

    Counted on the context with its first token doubled (no absolute positions: position 1 looks
    preceded by itself); where x_t ≠ x_1 these are the counts of the sequence itself.  Without
    any match the head averages every token seen (the unigram frequencies).
    """
    x, trace = handbuilt
    head = np.asarray(trace.heads[1])[..., :K]
    doubled = tr.doubled_first_token(x)
    rows, total = _frequencies(doubled)
    rows, total = (
        rows[:, 1:],
        total[:, 1:],
    )  # position t of x is position t + 1 of the doubled context
    seen = total > 0
    np.testing.assert_allclose(head[seen], rows[seen] / total[seen][:, None], atol=1e-14)
    own_rows, own_total = _frequencies(x)
    plain = seen & (np.asarray(x) != np.asarray(x)[:, :1]) & (own_total > 0)
    np.testing.assert_allclose(head[plain], own_rows[plain] / own_total[plain][:, None], atol=1e-14)
    unigram = np.cumsum(np.asarray(st.one_hot(x, K)), axis=1) / np.arange(1, T + 1)[:, None]
    np.testing.assert_allclose(head[~seen], unigram[~seen], atol=1e-14)
    assert seen.mean() > 0.8 and plain.sum() > 100


def test_handbuilt_prediction_ranks_like_the_bigram_counts(handbuilt):
    x, trace = handbuilt
    head = np.asarray(trace.heads[1])[..., :K]
    logits = np.asarray(trace.logits)
    distinct = np.sort(head, axis=-1)
    clear = (distinct[..., -1] - distinct[..., -2]) > 1e-9
    np.testing.assert_array_equal(logits.argmax(-1)[clear], head.argmax(-1)[clear])


def test_transformer_is_causal_and_shapes():
    model = tr.init_transformer(jax.random.key(1), K, T, d=16)
    x = d.sample(jax.random.key(2), d.Dirichlet(), 3, K, T).x
    logits = tr.transformer_logits(model, x)
    assert logits.shape == (3, T, K)
    changed = x.at[:, 25:].set((x[:, 25:] + 1) % K)
    np.testing.assert_allclose(
        tr.transformer_logits(model, changed)[:, :25], logits[:, :25], atol=1e-12
    )


def test_relative_positions_enter_the_scores():
    """Only r_1 nonzero and no keys: every position i ≥ 2 puts the same extra weight on lag 1."""
    model = tr.init_transformer(jax.random.key(3), K, T, d=16)
    layer = model.layers[0]
    layer = type(layer)(
        W_Q=jnp.zeros((16, 16)).at[0, :].set(1.0),
        W_K=jnp.zeros((16, 16)),
        W_V=layer.W_V,
        W_O=layer.W_O,
        R=jnp.zeros((T, 16)).at[1, 0].set(4.0),
    )
    h = jnp.ones((T, 16)) / 4.0  # q_i = (16 · 1/4) e_0 = 4 e_0, score at lag 1 = 4 · 4/√16 = 4
    att = np.asarray(layer.pattern(h))
    for i in range(1, T):
        expected = np.exp(4.0) / (np.exp(4.0) + i)
        assert att[i, i - 1] == pytest.approx(expected, rel=1e-12)


def test_handbuilt_needs_room():
    with pytest.raises(GradflowError, match="d = 8"):
        tr.induction_head(3, 10, d=8)
