"""The two-layer attention-only transformer of ICL-MC and its hand-built induction head (equinox).

Source: Edelman et al., "The Evolution of Statistical Induction Heads" (2024), §3 and App. B:
a learned token embedding (no absolute positions), two pre-LayerNorm attention-only layers with
one head each and relative positional terms in the scores,

    score_{ij} = (q_iᵀ k_j + q_iᵀ r_{i-j}) / √d_h,     j ≤ i,

a final LayerNorm and an unembedding with bias.  ``r_m`` (``m = 0 … T-1``) are learned vectors.

:func:`induction_head` builds the weights of the textbook induction head: layer 1 attends to
lag 1 and copies the previous token into its own subspace, layer 2 attends to the positions whose
previous token equals the current token and copies the token found there.  Its layer-2 head
output is the vector of empirical bigram frequencies out of the current token.  Without absolute
positions the first position cannot be told from a position preceded by its own token, so the
counts are those of the context with its first token doubled (``x_1 x_1 x_2 … x_t``); see
:func:`doubled_first_token`.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from gradflow import GradflowError

__all__ = [
    "Attention",
    "ICLTransformer",
    "Trace",
    "init_transformer",
    "induction_head",
    "doubled_first_token",
    "transformer_logits",
]


class Attention(eqx.Module):
    """One causal attention head with relative positional vectors.

    Attributes:
        W_Q, W_K, W_V: ``(d_h, d)``.
        W_O: ``(d, d_h)``.
        R: ``(T, d_h)``, the vector ``r_m`` of lag ``m`` in row ``m``.
    """

    W_Q: jax.Array
    W_K: jax.Array
    W_V: jax.Array
    W_O: jax.Array
    R: jax.Array

    def pattern(self, h: jax.Array) -> jax.Array:
        """Attention weights ``(T, T)`` (row ``i`` over ``j ≤ i``) for normalized inputs ``h (T, d)``."""
        T = h.shape[0]
        q, k = h @ self.W_Q.T, h @ self.W_K.T
        lag = jnp.arange(T)[:, None] - jnp.arange(T)[None, :]
        relative = jnp.take_along_axis(q @ self.R[:T].T, jnp.clip(lag, 0, T - 1), axis=1)
        scores = (q @ k.T + relative) / math.sqrt(q.shape[-1])
        return jax.nn.softmax(jnp.where(lag >= 0, scores, -jnp.inf), axis=-1)

    def head(self, h: jax.Array) -> tuple[jax.Array, jax.Array]:
        """``(pattern (T, T), head output (T, d_h))`` before ``W_O``."""
        att = self.pattern(h)
        return att, att @ (h @ self.W_V.T)


class Trace(NamedTuple):
    """Intermediate values of one forward pass (one sequence).

    Attributes:
        patterns: attention weights of layers 1 and 2, each ``(T, T)``.
        heads: head outputs (before ``W_O``) of layers 1 and 2, each ``(T, d_h)``.
        logits: ``(T, k)``.
    """

    patterns: tuple[jax.Array, jax.Array]
    heads: tuple[jax.Array, jax.Array]
    logits: jax.Array


class ICLTransformer(eqx.Module):
    """Two attention-only pre-LN layers, final LayerNorm, unembedding.

    Attributes:
        embed: ``(k, d)`` token embedding.
        norms: LayerNorms before layer 1, before layer 2, and the final one.
        layers: the two attention heads.
        unembed: ``(k, d)``; ``bias``: ``(k,)``.
    """

    embed: jax.Array
    norms: tuple[eqx.nn.LayerNorm, eqx.nn.LayerNorm, eqx.nn.LayerNorm]
    layers: tuple[Attention, Attention]
    unembed: jax.Array
    bias: jax.Array

    def trace(self, x: jax.Array) -> Trace:
        """Forward pass of tokens ``x (T,)`` keeping the patterns and head outputs."""
        h = self.embed[x]
        patterns, heads = [], []
        for norm, layer in zip(self.norms[:2], self.layers):
            att, out = layer.head(jax.vmap(norm)(h))
            h = h + out @ layer.W_O.T
            patterns.append(att)
            heads.append(out)
        logits = jax.vmap(self.norms[2])(h) @ self.unembed.T + self.bias
        return Trace(patterns=tuple(patterns), heads=tuple(heads), logits=logits)

    def __call__(self, x: jax.Array) -> jax.Array:
        """Logits of ``x_{t+1}`` at every position, ``(T, k)``, for tokens ``x (T,)``."""
        return self.trace(x).logits


@eqx.filter_jit
def transformer_logits(model: ICLTransformer, x: jax.Array) -> jax.Array:
    """Logits for a batch of tokens ``x (n, T)``; shape ``(n, T, k)``."""
    return jax.vmap(model)(x)


def _check(k: int, T: int, d: int) -> None:
    if k < 2 or T < 2 or d < 1:
        raise GradflowError(
            f"transformer sizes k = {k}, T = {T}, d = {d}: need k ≥ 2, T ≥ 2, d ≥ 1"
        )


def init_transformer(
    key: jax.Array, k: int, T: int, d: int = 16, std: float = 0.02
) -> ICLTransformer:
    """Random initialization: every matrix and ``r_m`` ``N(0, std²)``, LayerNorms 1 and 0, bias 0.

    Args:
        key: PRNG key.
        k: number of states.
        T: longest sequence (number of relative positions).
        d: width, also the head dimension.
        std: standard deviation of the weights (GPT-2's 0.02).

    Raises:
        GradflowError: ``k < 2``, ``T < 2`` or ``d < 1``.
    """
    _check(k, T, d)
    keys = iter(jax.random.split(key, 12))

    def normal(*shape: int) -> jax.Array:
        return std * jax.random.normal(next(keys), shape)

    def attention() -> Attention:
        return Attention(normal(d, d), normal(d, d), normal(d, d), normal(d, d), normal(T, d))

    return ICLTransformer(
        embed=normal(k, d),
        norms=tuple(eqx.nn.LayerNorm(d) for _ in range(3)),
        layers=(attention(), attention()),
        unembed=normal(k, d),
        bias=jnp.zeros((k,)),
    )


def induction_head(
    k: int, T: int, d: int = 16, beta: float = 1000.0, out_scale: float = 10.0
) -> ICLTransformer:
    """The hand-built induction head as a model instance (float64 weights).

    Residual layout: token ``A = [0, k)``, previous token ``B = [k, 2k)``, layer-2 output
    ``C = [2k, 3k)``, and a spare dimension ``z = 3k`` on which the LayerNorm of a sum of one-hot
    vectors is the constant ``-(mean)/σ``; subtracting it removes the LayerNorm's offset exactly.

    - Layer 1: constant query on ``r_1`` with score ``β`` at lag 1 and 0 elsewhere (the other
      weights underflow to exactly 0 in float64 for ``β ≥ 750``); value and output copy ``A`` into
      ``B``.
    - Layer 2: query ``A``, key ``B``, score ``β [x_t = x_{s-1}]``; value ``A`` copied into ``C``.
    - Unembedding: ``out_scale`` times ``C``.

    Raises:
        GradflowError: ``d < 3k + 1``.
    """
    _check(k, T, d)
    if d < 3 * k + 1:
        raise GradflowError(
            f"d = {d}: the hand-built induction head needs d ≥ 3k + 1 = {3 * k + 1}"
        )
    z = 3 * k
    A, B, C = (np.arange(k) + offset for offset in (0, k, 2 * k))
    norm = eqx.nn.LayerNorm(d)
    eps = norm.eps

    def sigma(ones: int) -> float:
        """``√(var + eps)`` of a sum of ``ones`` one-hot vectors in ``d`` dimensions."""
        return math.sqrt(ones / d - (ones / d) ** 2 + eps)

    def placed(shape: tuple[int, int], rows: Any, cols: Any, value: float) -> np.ndarray:
        """Zeros of ``shape`` with ``value`` at ``[rows, cols]`` (assembled in NumPy: placed
        op by op in JAX, each scatter would be an XLA program of its own)."""
        M = np.zeros(shape)
        M[rows, cols] = value
        return M

    def read(rows: np.ndarray, cols: np.ndarray, scale: float) -> jax.Array:
        """``(d_h, d)`` map ``LN(h) ↦ scale · (LN(h)[cols] - LN(h)[z])`` into ``rows``."""
        M = placed((d, d), rows, cols, scale)
        M[rows, z] = -scale
        return jnp.asarray(M)

    s1, s2 = sigma(1), sigma(2)
    head = np.arange(k)
    layer1 = Attention(
        W_Q=jnp.asarray(placed((d, d), 0, z, -d * s1)),  # LN(h)[z] = -1/(d s1)  →  q = e_0
        W_K=jnp.zeros((d, d)),
        W_V=read(head, A, s1),
        W_O=jnp.asarray(placed((d, d), B, head, 1.0)),
        R=jnp.asarray(placed((T, d), 1, 0, beta * math.sqrt(d))),
    )
    layer2 = Attention(
        W_Q=read(head, A, beta * math.sqrt(d) * s2),
        W_K=read(head, B, s2),
        W_V=read(head, A, s2),
        W_O=jnp.asarray(placed((d, d), C, head, 1.0)),
        R=jnp.zeros((T, d)),
    )
    return ICLTransformer(
        embed=jnp.asarray(placed((k, d), np.arange(k), A, 1.0)),
        norms=(norm, norm, norm),
        layers=(layer1, layer2),
        unembed=jnp.asarray(placed((k, d), np.arange(k), C, out_scale)),
        bias=jnp.zeros((k,)),
    )


def doubled_first_token(x: jax.Array) -> jax.Array:
    """``x_1 x_1 x_2 … x_T``: the context the induction head effectively counts, ``(n, T + 1)``."""
    return jnp.concatenate([x[:, :1], x], axis=1)
