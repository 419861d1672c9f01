"""Causal attention of the Markov transformer, computed through the binary structure of its inputs.

The inputs are ``u_n = x_n e + p_n`` with symbols ``x_n ∈ {0, 1}``, so every linear map of them is
``W u_n = W p_n + x_n W e``: a position part shared by the whole batch plus the symbol part where
``x_n = 1``.  Queries, keys and values are given in that form (:class:`BinaryProjection`).

Softmax (:func:`softmax_attention`), ``y_n = Σ_{i≤n} softmax_i(s_{n,i}) v_i`` with
``s_{n,i} = ⟨q_n, k_i⟩/√d``.  Write the query symbol ``c = x_n``:
``s_{n,i} = A^c_{n,i} + x_i β^c_n`` with ``A^c_{n,i} = ⟨q^c_n, kp_i⟩/√d`` and
``β^c_n = ⟨q^c_n, ke⟩/√d`` (``q^c_n = qp_n + c qe``).  The two matrices
``E^c = exp(A^c - max_{i≤n} A^c_{n,i})`` (lower triangular) do not depend on the sequence, so the
``N²`` exponentials are computed twice per model instead of once per sequence.  Split the keys by
their symbol ``s``: ``Z^c_s[n] = Σ_{i≤n, x_i=s} E^c_{n,i}`` and
``Y^c_s[n] = Σ_{i≤n, x_i=s} E^c_{n,i} v_i`` are one matrix product of ``E^c`` with the columns
``1[x_i = s] (1, v_i)`` of every sequence, and

    y_n = (γ_0 Y_0 + γ_1 Y_1) / (γ_0 Z_0 + γ_1 Z_1),    γ_s = exp(s β_n - max(β_n, 0)),

read at ``c = x_n``.  This is the same function as the masked softmax (the row shifts cancel in the
ratio).  It never subtracts: the largest entry of each row of ``E^c`` is 1, so
``Z_0 + Z_1 ≥ 1`` and the denominator is at least ``exp(-|β_n|)``; in float32 it underflows only
when the symbol part of a score exceeds about 87 nats.  The products skip the blocks above the
diagonal (:func:`causal_exp_matmul`).  Cost: ``2 × 2(d + 1) × B × N²/2`` multiply-adds per pass as
matrix products, no per-sequence exponential and no ``B × N × N`` array.

Linear (:func:`linear_attention`), ``y_n = (1/n) Σ_{i≤n} s_{n,i} v_i = q_n M_n / (n√d)`` with the
prefix sums ``M_n = Σ_{i≤n} k_i v_iᵀ`` (``d × d``), by chunks: ``O(B N d (CHUNK + d))``; a short
chunk takes its scores from the four terms of the binary form shared by the batch.
"""

# ruff: noqa: F722  (jaxtyping shape strings such as "N d" are not Python expressions)

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

__all__ = [
    "BLOCK",
    "CHUNK",
    "SHARED_SCORES",
    "BinaryProjection",
    "causal_exp_matmul",
    "linear_attention",
    "softmax_attention",
]

BLOCK = 128
"""Rows per block of :func:`causal_exp_matmul` (the products skip the blocks above the diagonal)."""
CHUNK = 32
"""Positions per chunk of :func:`linear_attention` (fewer when ``N`` is shorter: a chunk never
pads a sequence beyond its length)."""
SHARED_SCORES = 8
"""The longest chunk of :func:`linear_attention` whose scores are built from terms shared by the
batch.  Measured (CPU µs; training interleaved in one process): the shared terms made the float64 exact
loss's gradient 1.4× cheaper at ``N = 6`` (the fate maps') and sampled training in float32
(batch 16) 1.5× cheaper at ``N = 8``, but training 1.8× dearer at ``N = 16`` and 1.3–1.7×
at ``N = 32 … 1024``, where each sequence's own products are large enough to pay."""


class BinaryProjection(NamedTuple):
    """``W u_n = W p_n + x_n W e`` for the inputs ``u_n = x_n e + p_n`` and a matrix ``W``.

    Attributes:
        position: ``W p_n`` for every position, shape ``(N, d)``.
        symbol: ``W e``, shape ``(d,)``.
    """

    position: Float[Array, "N d"]
    symbol: Float[Array, " d"]

    def at(self, x: Int[Array, "B N"]) -> Float[Array, "B N d"]:
        """``W u_n`` for symbols ``x``."""
        return self.position + x[..., None].astype(self.position.dtype) * self.symbol


def _blocks(n: int) -> list[tuple[int, int]]:
    """Row ranges ``[lo, hi)`` of at most :data:`BLOCK` rows covering ``0 … n - 1``."""
    return [(lo, min(lo + BLOCK, n)) for lo in range(0, n, BLOCK)]


def _block_scores(q: Array, k: Array, lo: int) -> Array:
    """``⟨q_n, k_i⟩`` for the rows ``n = lo …`` of a block ``q`` and ``i ≤ n``, else ``-∞``."""
    rows, hi = q.shape[-2], k.shape[0]
    visible = (lo + jnp.arange(rows))[:, None] >= jnp.arange(hi)[None, :]
    return jnp.where(visible, q @ k.T, -jnp.inf)


@jax.custom_vjp
def causal_exp_matmul(
    q: Float[Array, "C N d"],
    k: Float[Array, "N d"],
    r: Float[Array, "N K"],
    shift: Float[Array, "C N"],
) -> Float[Array, "C N K"]:
    """``G_c = E_c r`` with ``E_c[n, i] = exp(⟨q_c[n], k_i⟩ - shift_c[n])`` for ``i ≤ n``, else 0.

    Computed by blocks of :data:`BLOCK` rows, each against the keys it sees; the gradient (all four
    arguments) recomputes nothing but one product per block.  ``shift`` is usually the row maximum
    (then every entry of ``E`` is at most 1), passed by the caller so that the function and its
    gradient are those of the formula above for any ``shift``.
    """
    return _forward(q, k, r, shift)[0]


def _forward(q: Array, k: Array, r: Array, shift: Array) -> tuple[Array, tuple]:
    outs, weights = [], []
    for lo, hi in _blocks(q.shape[-2]):
        w = jnp.exp(_block_scores(q[:, lo:hi], k[:hi], lo) - shift[:, lo:hi, None])
        outs.append(w @ r[:hi])
        weights.append(w)
    return jnp.concatenate(outs, axis=1), (q, k, r, weights)


def _backward(residuals: tuple, g: Array) -> tuple[Array, Array, Array, Array]:
    q, k, r, weights = residuals
    dk, dr, dq, dshift = jnp.zeros_like(k), jnp.zeros_like(r), [], []
    for (lo, hi), w in zip(_blocks(q.shape[-2]), weights):
        gb = g[:, lo:hi]
        ds = w * (gb @ r[:hi].T)
        dr = dr.at[:hi].add(jnp.einsum("cti,ctk->ik", w, gb))
        dk = dk.at[:hi].add(jnp.einsum("cti,ctd->id", ds, q[:, lo:hi]))
        dq.append(ds @ k[:hi])
        dshift.append(-jnp.sum(ds, axis=-1))
    return jnp.concatenate(dq, axis=1), dk, dr, jnp.concatenate(dshift, axis=1)


causal_exp_matmul.defvjp(_forward, _backward)


def _row_max(q: Array, k: Array) -> Array:
    """``max_{i≤n} ⟨q_c[n], k_i⟩``, shape ``(C, N)``, by the blocks of :func:`causal_exp_matmul`."""
    blocks = [
        jnp.max(_block_scores(q[:, lo:hi], k[:hi], lo), axis=-1) for lo, hi in _blocks(q.shape[-2])
    ]
    return jnp.concatenate(blocks, axis=1)


def softmax_attention(
    x: Int[Array, "B N"], q: BinaryProjection, k: BinaryProjection, v: BinaryProjection
) -> Float[Array, "B N d"]:
    """``Σ_{i≤n} softmax_i(⟨q_n, k_i⟩/√d) v_i`` for every sequence and position (module docstring).

    Args:
        x: symbols in ``{0, 1}``, shape ``(B, N)``.
        q: the query map of the inputs (``d`` = width of the queries).
        k: the key map.
        v: the value map.
    """
    n, dtype = x.shape[-1], q.position.dtype
    scale = 1 / math.sqrt(q.position.shape[-1])
    queries = scale * (q.position + jnp.arange(2, dtype=dtype)[:, None, None] * q.symbol)
    shift = jax.lax.stop_gradient(_row_max(queries, k.position))
    one = jnp.stack([1 - x, x]).astype(dtype)  # 1[x_i = s], (2, B, N)
    ones = jnp.ones((n, 1), dtype)
    values = jnp.stack(  # (1, v_i) where x_i = s, (2, N, d + 1)
        [
            jnp.concatenate([ones, v.position], axis=1),
            jnp.concatenate([ones, v.position + v.symbol], axis=1),
        ]
    )
    columns = jnp.einsum("sbn,snj->nbsj", one, values)  # (N, B, 2, d + 1)
    g = causal_exp_matmul(queries, k.position, columns.reshape(n, -1), shift)
    g = g.reshape(2, *columns.shape)
    query_one = x.T[:, :, None, None] == 1
    g = jnp.where(query_one, g[1], g[0])  # read at c = x_n, (N, B, 2, d + 1)
    beta = queries @ k.symbol  # (2, N)
    beta = jnp.where(x.T == 1, beta[1][:, None], beta[0][:, None])  # (N, B)
    top = jax.lax.stop_gradient(jnp.maximum(beta, 0))
    # γ_0 (Z_0, Y_0) + γ_1 (Z_1, Y_1), (N, B, d + 1); written out: a sum over the axis of size 2
    # becomes an XLA CPU reduction that is 7× slower under vmap (the seeds of a training run)
    mixed = jnp.exp(-top)[..., None] * g[:, :, 0] + jnp.exp(beta - top)[..., None] * g[:, :, 1]
    return jnp.swapaxes(mixed[..., 1:] / mixed[..., :1], 0, 1)


def linear_attention(
    x: Int[Array, "B N"], q: BinaryProjection, k: BinaryProjection, v: BinaryProjection
) -> Float[Array, "B N d"]:
    """``(1/n) Σ_{i≤n} (⟨q_n, k_i⟩/√d) v_i`` for every sequence and position, by chunks.

    Chunks of ``min(N, CHUNK)`` positions (:data:`CHUNK`): inside a chunk the masked scores
    times the values, from the chunks before it ``q_n M`` with ``M`` the sum of their
    ``k_i v_iᵀ`` (``d × d``).  A chunk of at most :data:`SHARED_SCORES` positions builds its
    scores from the binary form of the inputs (module docstring): with
    ``A_{t,s} = ⟨qp_t, kp_s⟩``, ``α_s = ⟨qe, kp_s⟩``, ``ρ_t = ⟨qp_t, ke⟩``, ``σ = ⟨qe, ke⟩``,
    shared by every sequence,

        ⟨q_t, k_s⟩ = A_{t,s} + x_t α_s + x_s ρ_t + x_t x_s σ,

    and its values ``vp_s + x_s ve`` enter as one product with the shared ``vp`` and a sum
    times ``ve``, so that no sequence has a small matrix product of its own.

    Args:
        x: symbols in ``{0, 1}``, shape ``(B, N)``.
        q: the query map of the inputs (``d`` = width of the queries).
        k: the key map.
        v: the value map.
    """
    n, dtype = x.shape[-1], q.position.dtype
    size = min(n, CHUNK)
    chunks = -(-n // size)

    def chunked(a: Array, axis: int) -> Array:  # positions → (chunks, size), zeros after N
        pad = [(0, 0)] * a.ndim
        pad[axis] = (0, chunks * size - n)
        return jnp.pad(a, pad).reshape(*a.shape[:axis], chunks, size, *a.shape[axis + 1 :])

    causal = jnp.tril(jnp.ones((size, size), dtype))
    qs, ks, vs = (chunked(p.at(x), 1) for p in (q, k, v))  # (B, chunks, size, d)
    if size <= SHARED_SCORES:
        xs = chunked(x.astype(dtype), 1)  # (B, chunks, size)
        qp, kp, vp = (chunked(p.position, 0) for p in (q, k, v))  # (chunks, size, d)
        rows, cols = xs[..., :, None], xs[..., None, :]
        scores = causal * (
            jnp.einsum("ctd,csd->cts", qp, kp)
            + rows * (kp @ q.symbol)[:, None, :]
            + cols * ((qp @ k.symbol)[:, :, None] + rows * (q.symbol @ k.symbol))
        )
        out = jnp.einsum("bcts,cse->bcte", scores, vp)
        out = out + jnp.sum(scores * cols, axis=-1, keepdims=True) * v.symbol
    else:
        out = jnp.einsum("bcts,bcse->bcte", jnp.einsum("bctd,bcsd->bcts", qs, ks) * causal, vs)
    if chunks > 1:
        sums = jnp.einsum("bcsd,bcse->bcde", ks, vs)
        before = jnp.cumsum(jnp.pad(sums[:, :-1], ((0, 0), (1, 0), (0, 0), (0, 0))), axis=1)
        out = out + jnp.einsum("bctd,bcde->bcte", qs, before)
    visible = jnp.arange(1, n + 1, dtype=dtype)[:, None] * math.sqrt(q.position.shape[-1])
    return out.reshape(x.shape[0], chunks * size, -1)[:, :n] / visible
