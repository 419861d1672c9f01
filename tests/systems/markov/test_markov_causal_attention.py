"""Batch-wide causal attention over binary inputs equals the masked softmax (mean) it replaces.

The reference is the textbook formula on one sequence: scores ``⟨q_n, k_i⟩/√d``, the positions
``i > n`` masked, softmax (or ``1/n`` times the scores), times the values.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gradflow.systems.markov import causal_attention as mca
from gradflow.systems.markov.causal_attention import (
    BinaryProjection,
    causal_exp_matmul,
    linear_attention,
    softmax_attention,
)


def _plain(kind: str, x: jax.Array, q: BinaryProjection, k, v) -> jax.Array:
    """The masked attention of each sequence, materializing its ``N × N`` scores."""

    def one(seq: jax.Array) -> jax.Array:
        qs, ks, vs = q.at(seq), k.at(seq), v.at(seq)
        n = seq.shape[0]
        scores = qs @ ks.T / math.sqrt(qs.shape[-1])
        causal = jnp.tril(jnp.ones((n, n), dtype=bool))
        if kind == "softmax":
            att = jax.nn.softmax(jnp.where(causal, scores, -jnp.inf), axis=-1)
        else:
            att = jnp.where(causal, scores, 0.0) / jnp.arange(1, n + 1)[:, None]
        return att @ vs

    return jax.vmap(one)(x)


ATTEND = {"softmax": softmax_attention, "linear": linear_attention}
PLAIN = {kind: functools.partial(_plain, kind) for kind in ATTEND}


def _inputs(rng: np.random.Generator, batch: int, n: int, d: int, scale: float, dtype):
    """Random symbols and projections with entries ``N(0, scale²)``."""
    x = jnp.asarray(rng.integers(0, 2, (batch, n)), jnp.int32)

    def proj() -> BinaryProjection:
        return BinaryProjection(
            jnp.asarray(scale * rng.standard_normal((n, d)), dtype),
            jnp.asarray(scale * rng.standard_normal(d), dtype),
        )

    return x, proj(), proj(), proj()


@functools.partial(jax.jit, static_argnums=0)
def _value_and_pullback(attend, x, q, k, v, w):
    """``attend(x, q, k, v)`` and the gradient of ``Σ w ⊙ attend`` in ``(q, k, v)``."""
    out, pullback = jax.vjp(lambda *p: attend(x, *p), q, k, v)
    return out, pullback(w)


@pytest.mark.parametrize("kind", ["softmax", "linear"])
@pytest.mark.parametrize("n", [1, 7, 300])  # 300: three blocks, the last one ragged
def test_equals_the_masked_attention_with_its_gradient(kind, n, rng):
    x, q, k, v = _inputs(rng, 5, n, 4, 1.5, jnp.float64)
    w = jnp.asarray(rng.standard_normal((5, n, 4)))
    got, grads = _value_and_pullback(ATTEND[kind], x, q, k, v, w)
    expected, expected_grads = _value_and_pullback(PLAIN[kind], x, q, k, v, w)
    np.testing.assert_allclose(got, expected, rtol=1e-11, atol=1e-11)
    size = max(float(jnp.max(jnp.abs(b))) for b in jax.tree.leaves(expected_grads))
    for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(expected_grads)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12 * size)


def test_float32_agrees_to_float32_rounding_on_peaked_scores(rng):
    """Scores spread over tens of nats (peaked rows, both symbol parts of either sign)."""
    x, q, k, v = _inputs(rng, 4, 200, 8, 3.0, jnp.float32)
    ref = _plain(
        "softmax", x, *(jax.tree.map(lambda a: a.astype(jnp.float64), p) for p in (q, k, v))
    )
    got = jax.jit(softmax_attention)(x, q, k, v)
    assert got.dtype == jnp.float32
    np.testing.assert_allclose(got, ref, rtol=0, atol=2e-5 * float(jnp.max(jnp.abs(ref))))


def test_symbol_scores_far_beyond_the_row_shift_stay_finite(rng):
    """Symbol parts ``β_n`` of the scores near 85 nats (the float32 limit of the method): one symbol
    class carries all the weight, no overflow, no 0/0."""
    x, q, k, v = _inputs(rng, 3, 40, 2, 0.1, jnp.float32)
    q = q._replace(symbol=jnp.array([10.0, 0.0], jnp.float32))
    k = k._replace(symbol=jnp.array([12.0, 0.0], jnp.float32))
    k = k._replace(position=k.position.at[:, 0].set(0.0))
    got = jax.jit(softmax_attention)(x, q, k, v)
    f64 = [jax.tree.map(lambda a: a.astype(jnp.float64), p) for p in (q, k, v)]
    np.testing.assert_allclose(got, _plain("softmax", x, *f64), atol=1e-5)


def test_prefix_does_not_see_the_future(rng):
    x, q, k, v = _inputs(rng, 1, 260, 3, 2.0, jnp.float64)
    flipped = x.at[0, 200:].set(1 - x[0, 200:])
    for attend in map(jax.jit, ATTEND.values()):
        a, b = attend(x, q, k, v), attend(flipped, q, k, v)
        np.testing.assert_array_equal(a[:, :200], b[:, :200])


def test_causal_exp_matmul_is_the_masked_product_for_any_shift(rng, monkeypatch):
    """Small blocks (many of them, ragged), an arbitrary shift: value and all four gradients."""
    monkeypatch.setattr(mca, "BLOCK", 3)
    c, n, d, width = 2, 11, 3, 5
    q, shift = jnp.asarray(rng.standard_normal((c, n, d))), jnp.asarray(rng.standard_normal((c, n)))
    k, r = jnp.asarray(rng.standard_normal((n, d))), jnp.asarray(rng.standard_normal((n, width)))
    w = jnp.asarray(rng.standard_normal((c, n, width)))

    def plain(q, k, r, shift):
        causal = jnp.tril(jnp.ones((n, n), dtype=bool))
        return jnp.where(causal, jnp.exp(q @ k.T - shift[..., None]), 0.0) @ r

    def value_and_pullback(f):
        out, pullback = jax.vjp(f, q, k, r, shift)
        return out, pullback(w)

    got, grads = jax.jit(lambda: value_and_pullback(causal_exp_matmul))()
    expected, expected_grads = jax.jit(lambda: value_and_pullback(plain))()
    assert len(grads) == 4
    np.testing.assert_allclose(got, expected, rtol=1e-13)
    for a, b in zip(grads, expected_grads):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
