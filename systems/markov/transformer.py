"""The single-layer transformer on binary Markov chains (Makkuva et al., Local to Global, NeurIPS 2024), in equinox.

``u_n = x_n e + p_n`` (token embedding plus learned position), causal attention
``y_n = u_n + W_O Σ_{i≤n} att_{n,i} W_V u_i`` with scores ``s_{n,i} = ⟨W_Q u_n, W_K u_i⟩/√d``
(softmax: ``att = softmax_i(s)``; linear: ``att_{n,i} = s_{n,i}/n``, the mean over the visible
positions), residual ReLU FFN ``z_n = y_n + W_2 ReLU(W_1 y_n)`` (``W_1: 4d × d``,
``W_2: d × 4d``, no biases), no LayerNorm, logit ``⟨e, z_n⟩ + b`` (weight tying; untied: a
separate unembedding vector), binary cross-entropy against ``x_{n+1}``, averaged over the ``N``
positions.  Source: Makkuva et al., "Local to Global" (NeurIPS 2024), §2 and Appendix
(architecture); the linear-attention switch with the ``1/n`` mean is this project's choice, see
``docs/systems/markov.md``.

Losses (all in nats, averaged over the ``N`` positions ``n = 1…N``, each predicting ``x_{n+1}``):

- :func:`sample_loss`: sampled sequences of ``N + 1`` symbols (training);
- :func:`conditional_loss`: sampled inputs of ``N`` symbols, the next symbol integrated out with the
  kernel, ``E[ℓ | x_1…x_N]`` (unbiased for the population loss, lower variance: evaluation);
- :func:`exact_loss`: the population loss, all ``2^N`` inputs weighted by their probabilities.
"""

# ruff: noqa: F722  (jaxtyping shape strings such as "N d" are not Python expressions)

from __future__ import annotations

import functools
import math
from typing import Literal

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from .causal_attention import BinaryProjection, linear_attention, softmax_attention
from .data import (
    check_length,
    enumerate_sequences,
    next_one_probability,
    prefix_ends,
    sequence_probabilities,
)
from .ranges import ATTENTION_KINDS, check_attention, check_width

__all__ = [
    "ATTENTION_KINDS",
    "MarkovTransformer",
    "check_attention",
    "check_width",
    "conditional_loss",
    "exact_loss",
    "exact_loss_at",
    "expected_cross_entropy",
    "logits",
    "normal_blocks",
    "prefix_preactivations",
    "residual_stream",
    "sample_loss",
    "standard_init",
    "stream_logits",
]

STANDARD_STD = 0.02
"""Standard deviation of the standard init, N(0, 0.02²); output projections get 0.02/√2."""


class MarkovTransformer(eqx.Module):
    """Parameters of the single-layer transformer; a pytree (equinox module).

    Attributes:
        e: token embedding of the symbol 1, shape ``(d,)`` (the symbol 0 embeds as 0).
        positions: learned positions ``p_n``, shape ``(N, d)``.
        W_Q, W_K, W_V, W_O: attention matrices, ``(d, d)``.
        W_1: FFN input ``(4d, d)``; W_2: FFN output ``(d, 4d)``.
        b: logit bias, shape ``()``.
        unembed: ``None`` for weight tying (the logit reads ``e``), else a vector ``(d,)``.
        attention: ``"softmax"`` or ``"linear"`` (static).
    """

    e: Float[Array, " d"]
    positions: Float[Array, "N d"]
    W_Q: Float[Array, "d d"]
    W_K: Float[Array, "d d"]
    W_V: Float[Array, "d d"]
    W_O: Float[Array, "d d"]
    W_1: Float[Array, "h d"]
    W_2: Float[Array, "d h"]
    b: Float[Array, ""]
    unembed: Float[Array, " d"] | None
    attention: str = eqx.field(static=True)

    @property
    def d(self) -> int:
        """Embedding width."""
        return int(self.e.shape[0])

    @property
    def length(self) -> int:
        """Number of positions ``N``."""
        return int(self.positions.shape[0])

    def readout(self) -> Float[Array, " d"]:
        """The unembedding vector: ``e`` under weight tying."""
        return self.e if self.unembed is None else self.unembed


@eqx.filter_jit
def logits(model: MarkovTransformer, x: Int[Array, "B N"]) -> Float[Array, "B N"]:
    """Logits ``⟨e, z_n⟩ + b`` of ``P(x_{n+1} = 1)`` for a batch of ``N ≤ model.length`` symbols.

    The attention is computed batch-wide by :mod:`gradflow.systems.markov.causal_attention` (the
    same function as the masked softmax, or mean, over the visible positions).
    """
    return stream_logits(model, residual_stream(model, x))


def stream_logits(
    model: MarkovTransformer, y: Float[Array, "*B d"], slopes: Float[Array, "*B h"] | None = None
) -> Float[Array, "*B"]:
    """The logit ``⟨e, z⟩ + b`` of residual-stream vectors ``y`` after the FFN
    ``z = y + W_2 ReLU(W_1 y)``; any leading shape.  With ``slopes``, each ReLU is
    ``s·u`` with the given slope ``s`` (the ReLU itself where ``s`` is ``1`` for ``u > 0`` and
    ``0`` for ``u < 0``; at ``u = 0`` the value is the same for every ``s``): the pieces of the
    loss, whose gradients a flow sliding along a kink combines."""
    u = y @ model.W_1.T
    z = y + (jax.nn.relu(u) if slopes is None else slopes * u) @ model.W_2.T
    return z @ model.readout() + model.b


def residual_stream(model: MarkovTransformer, x: Int[Array, "B N"]) -> Float[Array, "B N d"]:
    """The residual stream ``y_n`` after the attention layer (token and position embedding plus
    attention output): the FFN's input, ``W_1 y_n`` its ReLU's pre-activations."""
    positions = model.positions[: x.shape[-1]]
    q, k, v = (
        BinaryProjection(positions @ w.T, w @ model.e) for w in (model.W_Q, model.W_K, model.W_V)
    )
    attend = softmax_attention if model.attention == "softmax" else linear_attention
    return BinaryProjection(positions, model.e).at(x) + attend(x, q, k, v) @ model.W_O.T


def expected_cross_entropy(y: Array, f: Array) -> Array:
    """``ℓ_y(f) = -y ln σ(f) - (1 - y) ln σ(-f)``, nats; ``y`` = probability of the target 1."""
    return -y * jax.nn.log_sigmoid(f) - (1 - y) * jax.nn.log_sigmoid(-f)


@eqx.filter_jit
def sample_loss(model: MarkovTransformer, sequences: Int[Array, "B N1"]) -> Float[Array, ""]:
    """Mean cross-entropy over a batch of ``N + 1``-symbol sequences and the ``N`` positions."""
    f = logits(model, sequences[:, :-1])
    return jnp.mean(expected_cross_entropy(sequences[:, 1:].astype(f.dtype), f))


@eqx.filter_jit
def conditional_loss(
    model: MarkovTransformer, inputs: Int[Array, "B N"], p: Array, q: Array
) -> Float[Array, " B"]:
    """``E[ℓ | x_1…x_N]`` per sequence: each next symbol integrated out with the kernel, nats.

    The batch mean is an unbiased estimate of the population loss; its standard error is the
    standard deviation of the returned values over ``√B``.
    """
    f = logits(model, inputs)
    return jnp.mean(expected_cross_entropy(next_one_probability(inputs, p, q), f), axis=1)


def exact_loss(
    model: MarkovTransformer, p: Array, q: Array, length: int | None = None
) -> Float[Array, ""]:
    """The population loss by enumeration: ``Σ_x P(x) (1/N) Σ_n ℓ_{P(1|x_n)}(logit_n(x))``, nats.

    The sum runs over all ``2^N`` input sequences ``x_1…x_N`` (first symbol from π); the next
    symbol ``x_{n+1}`` is integrated out exactly, so there is no sampling noise.  The attention
    is causal, so ``logit_n`` depends on the prefix ``x_1…x_n`` only, and the sum over the
    sequences that share a prefix weighs it by the prefix's probability:
    ``(1/N) Σ_n Σ_{x_1…x_n} P(x_1…x_n) ℓ_{P(1|x_n)}(logit_n)``, the FFN and the loss evaluated at
    the ``2^{N+1} - 2`` distinct prefixes (:func:`~gradflow.systems.markov.data.prefix_ends`)
    instead of the ``N·2^N`` positions.

    Raises:
        GradflowError: ``N > 14`` (see :data:`gradflow.systems.markov.data.MAX_EXACT_LENGTH`).
    """
    return _prefix_loss(
        model, jnp.asarray(p), jnp.asarray(q), model.length if length is None else length
    )


def exact_loss_at(
    model: MarkovTransformer, p: Array, q: Array, slopes: Float[Array, "P h"]
) -> Float[Array, ""]:
    """:func:`exact_loss` with the slope of every ReLU given: ``slopes[r, j]`` for hidden unit
    ``j`` at prefix ``r`` (in the order of :func:`prefix_preactivations`), nats.  Equal to
    :func:`exact_loss` where each slope is that of the side of 0 its pre-activation lies on."""
    return _prefix_loss(model, jnp.asarray(p), jnp.asarray(q), model.length, slopes)


def prefix_preactivations(model: MarkovTransformer) -> Float[Array, "P h"]:
    """The inputs ``W_1 y`` of the FFN's ReLUs at every distinct prefix of the exact loss
    (:func:`~gradflow.systems.markov.data.prefix_ends`, ``P = 2^{N+1} - 2``), shape
    ``(P, 4d)``: the loss has a kink where one of them is 0."""
    seqs = enumerate_sequences(model.length)
    rows, cols = prefix_ends(model.length)
    return residual_stream(model, jnp.asarray(seqs))[rows, cols] @ model.W_1.T


@eqx.filter_jit
def _prefix_loss(
    model: MarkovTransformer, p: Array, q: Array, n: int, slopes: Array | None = None
) -> Array:
    """:func:`exact_loss` over the prefixes of length ``1…n`` (``slopes``: see
    :func:`exact_loss_at`)."""
    seqs = enumerate_sequences(n)
    rows, cols = prefix_ends(n)
    f = stream_logits(model, residual_stream(model, jnp.asarray(seqs))[rows, cols], slopes)
    probabilities = sequence_probabilities(jnp.asarray(seqs), p, q)
    prefix = jnp.concatenate([probabilities.reshape(2**m, -1).sum(axis=1) for m in range(1, n + 1)])
    target = next_one_probability(jnp.asarray(seqs[rows, cols]), p, q)
    return jnp.sum(prefix * expected_cross_entropy(target, f)) / n


def standard_init(
    key: jax.Array,
    d: int,
    length: int,
    *,
    attention: Literal["softmax", "linear"] = "softmax",
    tied: bool = True,
    dtype: jnp.dtype = jnp.float32,
) -> MarkovTransformer:
    """The standard init: every weight N(0, 0.02²), output projections ``W_O, W_2`` N(0, 0.02²/2),
    ``b = 0`` (GPT-2 convention, as in the paper's experiments).

    Raises:
        GradflowError: invalid ``d``, ``length`` or ``attention``.
    """
    d, length = check_width(d), check_length(length)
    check_attention(attention)
    return _standard_weights(key, d, length, attention, tied, jnp.dtype(dtype))


def normal_blocks(
    key: jax.Array, blocks: dict[str, tuple[tuple[int, ...], float]], dtype: jnp.dtype
) -> dict[str, jax.Array]:
    """Independent N(0, std²) arrays ``{name: (shape, std)}`` from one draw (one random kernel to
    compile instead of one per array)."""
    sizes = [math.prod(shape) for shape, _ in blocks.values()]
    flat = jax.random.normal(key, (sum(sizes),))
    out, start = {}, 0
    for (name, (shape, std)), size in zip(blocks.items(), sizes):
        out[name] = (std * flat[start : start + size].reshape(shape)).astype(dtype)
        start += size
    return out


@functools.partial(jax.jit, static_argnums=(1, 2, 3, 4, 5))
def _standard_weights(
    key: jax.Array, d: int, length: int, attention: str, tied: bool, dtype: jnp.dtype
) -> MarkovTransformer:
    std, out_std = STANDARD_STD, STANDARD_STD / math.sqrt(2)
    blocks = {
        "e": ((d,), std),
        "positions": ((length, d), std),
        "W_Q": ((d, d), std),
        "W_K": ((d, d), std),
        "W_V": ((d, d), std),
        "W_O": ((d, d), out_std),
        "W_1": ((4 * d, d), std),
        "W_2": ((d, 4 * d), out_std),
    }
    if not tied:
        blocks["unembed"] = ((d,), std)
    weights = normal_blocks(key, blocks, dtype)
    weights.setdefault("unembed", None)
    return MarkovTransformer(**weights, b=jnp.zeros((), dtype), attention=attention)
