"""The single-layer transformer of :mod:`gradflow.systems.markov.transformer` on ``k``-state chains.

The same architecture with ``k`` symbols: ``u_n = E[x_n] + p_n`` (token embedding ``E``, one row
per state, plus a learned position), causal attention ``y_n = u_n + W_O Σ_{i≤n} att_{n,i} W_V u_i``
with scores ``⟨W_Q u_n, W_K u_i⟩/√d`` (softmax, or linear: ``att_{n,i} = s_{n,i}/n``), residual
ReLU FFN ``z_n = y_n + W_2 ReLU(W_1 y_n)`` (``W_1: 4d × d``, no biases), no LayerNorm, ``k``
logits ``E z_n + b`` (weight tying; untied: a separate ``(k, d)`` unembedding) and the softmax
cross-entropy against ``x_{n+1}``, averaged over the ``N`` positions.

At ``k = 2`` with ``E = [0; e]`` and ``b = (0, b₁)`` the logit gap ``⟨e, z_n⟩ + b₁`` is the binary
model's logit and the two-class softmax cross-entropy its binary cross-entropy, so the losses are
equal (the binary model embeds the symbol 0 as 0).  Source: Makkuva et al., "Local to Global"
(NeurIPS 2024), §2 and the authors' discussion of multi-state chains; the attention is computed
plainly (masked scores), without the binary model's shared-position shortcut.

Losses, nats: :func:`states_sample_loss` (sampled targets, training),
:func:`states_conditional_loss` (next symbol integrated out with the kernel, evaluation) and
:func:`states_exact_loss` (all ``k^N`` inputs weighted by their probabilities).
"""

# ruff: noqa: F722  (jaxtyping shape strings such as "N d" are not Python expressions)

from __future__ import annotations

import functools
import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from .ranges import check_attention, check_length, check_states, check_width
from .states import enumerate_states, sequence_probabilities
from .transformer import STANDARD_STD, normal_blocks

__all__ = [
    "StatesTransformer",
    "states_conditional_loss",
    "states_exact_loss",
    "states_logits",
    "states_sample_loss",
    "states_standard_init",
]


class StatesTransformer(eqx.Module):
    """Parameters of the ``k``-state single-layer transformer; a pytree (equinox module).

    Attributes:
        E: token embedding, one row per state, shape ``(k, d)``.
        positions: learned positions ``p_n``, shape ``(N, d)``.
        W_Q, W_K, W_V, W_O: attention matrices, ``(d, d)``.
        W_1: FFN input ``(4d, d)``; W_2: FFN output ``(d, 4d)``.
        b: logit biases, shape ``(k,)``.
        unembed: ``None`` for weight tying (the logits read ``E``), else ``(k, d)``.
        attention: ``"softmax"`` or ``"linear"`` (static).
    """

    E: Float[Array, "k d"]
    positions: Float[Array, "N d"]
    W_Q: Float[Array, "d d"]
    W_K: Float[Array, "d d"]
    W_V: Float[Array, "d d"]
    W_O: Float[Array, "d d"]
    W_1: Float[Array, "h d"]
    W_2: Float[Array, "d h"]
    b: Float[Array, " k"]
    unembed: Float[Array, "k d"] | None
    attention: str = eqx.field(static=True)

    @property
    def states(self) -> int:
        """Number of states ``k``."""
        return int(self.E.shape[0])


def states_logits(model: StatesTransformer, x: Int[Array, "B N"]) -> Float[Array, "B N k"]:
    """The ``k`` logits of ``x_{n+1}`` at every position of ``x`` (``N ≤`` the model's positions)."""
    n, d = x.shape[-1], model.E.shape[1]
    u = model.E[x] + model.positions[:n]
    q, k, v = (u @ w.T for w in (model.W_Q, model.W_K, model.W_V))
    scores = q @ jnp.swapaxes(k, -1, -2) / math.sqrt(d)
    visible = jnp.tril(jnp.ones((n, n), dtype=bool))
    if model.attention == "softmax":
        att = jax.nn.softmax(jnp.where(visible, scores, -jnp.inf), axis=-1)
    else:
        att = jnp.where(visible, scores, 0.0) / jnp.arange(1, n + 1, dtype=u.dtype)[:, None]
    y = u + (att @ v) @ model.W_O.T
    z = y + jax.nn.relu(y @ model.W_1.T) @ model.W_2.T
    readout = model.E if model.unembed is None else model.unembed
    return z @ readout.T + model.b


def _cross_entropy(target: Array, logits: Array) -> Array:
    """``-Σ_j target_j ln softmax_j(logits)`` over the last axis, nats."""
    return -jnp.sum(target * jax.nn.log_softmax(logits, axis=-1), axis=-1)


@eqx.filter_jit
def states_sample_loss(model: StatesTransformer, sequences: Int[Array, "B N1"]) -> Float[Array, ""]:
    """Mean cross-entropy over a batch of ``N + 1``-symbol sequences and the ``N`` positions."""
    logits = states_logits(model, sequences[:, :-1])
    targets = jax.nn.one_hot(sequences[:, 1:], model.states, dtype=logits.dtype)
    return jnp.mean(_cross_entropy(targets, logits))


@eqx.filter_jit
def states_conditional_loss(
    model: StatesTransformer, inputs: Int[Array, "B N"], kernel: Float[Array, "k k"]
) -> Float[Array, " B"]:
    """``E[ℓ | x_1…x_N]`` per sequence, each next symbol integrated out with ``kernel``, nats; the
    batch mean is unbiased for the population loss."""
    return jnp.mean(_cross_entropy(kernel[inputs], states_logits(model, inputs)), axis=1)


def states_exact_loss(
    model: StatesTransformer, kernel: Array, first: Array, length: int | None = None
) -> Float[Array, ""]:
    """The population loss ``Σ_x P(x) (1/N) Σ_n CE(P[x_n, :], logits_n(x))`` over all ``k^N``
    inputs of ``N = length`` symbols (default: the model's positions), the first symbol drawn
    from ``first``, the next symbol integrated out exactly; nats.

    Raises:
        GradflowError: ``k^N`` above :data:`gradflow.systems.markov.states.MAX_ENUMERATED`.
    """
    n = model.positions.shape[0] if length is None else length
    seqs = jnp.asarray(enumerate_states(model.states, n))
    weights = sequence_probabilities(seqs, jnp.asarray(kernel), jnp.asarray(first))
    return weights @ states_conditional_loss(model, seqs, jnp.asarray(kernel))


def states_standard_init(
    key: jax.Array,
    k: int,
    d: int,
    length: int,
    *,
    attention: str = "softmax",
    tied: bool = True,
    dtype: jnp.dtype = jnp.float32,
) -> StatesTransformer:
    """The standard init of the binary model (every weight N(0, 0.02²), ``W_O, W_2``
    N(0, 0.02²/2), ``b = 0``) with ``k`` embedding rows.

    Raises:
        GradflowError: invalid ``k``, ``d``, ``length`` or ``attention``.
    """
    k, d, length = check_states(k), check_width(d), check_length(length)
    check_attention(attention)
    return _standard_weights(key, k, d, length, attention, tied, jnp.dtype(dtype))


@functools.partial(jax.jit, static_argnums=(1, 2, 3, 4, 5, 6))
def _standard_weights(
    key: jax.Array, k: int, d: int, length: int, attention: str, tied: bool, dtype: jnp.dtype
) -> StatesTransformer:
    std, out_std = STANDARD_STD, STANDARD_STD / math.sqrt(2)
    blocks = {
        "E": ((k, d), std),
        "positions": ((length, d), std),
        "W_Q": ((d, d), std),
        "W_K": ((d, d), std),
        "W_V": ((d, d), std),
        "W_O": ((d, d), out_std),
        "W_1": ((4 * d, d), std),
        "W_2": ((d, 4 * d), out_std),
    }
    if not tied:
        blocks["unembed"] = ((k, d), std)
    weights = normal_blocks(key, blocks, dtype)
    weights.setdefault("unembed", None)
    return StatesTransformer(**weights, b=jnp.zeros((k,), dtype), attention=attention)
