"""The minimal induction-head model and its reduction to ``(a, b, v)``, in JAX.

Source: Edelman et al., "The Evolution of Statistical Induction Heads" (2024), §4.  With one-hot
tokens ``E ∈ R^{T×k}``, a matrix ``W ∈ R^{k×k}`` and a causal positional mixing matrix ``M(v)``
built from a vector ``v`` over lags,

    f(E) = mask(E W (M E)ᵀ) E,

where ``mask`` keeps ``s ≤ t`` and divides row ``t`` by ``t`` (a causal average), and ``f_t`` are
the logits of ``x_{t+1}``.  ``M_{s, s-m}`` comes from ``v_m`` (``m = 1 … s-1``):

- ``linear``: ``M_{s, s-m} = v_m``;
- ``softmax``: ``M_{s, ·} = softmax(v_1 … v_{s-1})`` over the available lags (row 1 is zero).

Layer 1 (``M``) mixes each position with its predecessors, layer 2 (``W``) compares the current
token with that mixture.  ``v`` may hold fewer than ``T - 1`` lags; the missing ones are fixed
at 0.  The loss is the cross-entropy against the true next-token law ``P_{x_t, ·}`` (the
expectation of the sampled-target cross-entropy given the prefix), averaged over positions,
nats; minus the entropy of ``P_{x_t, ·}`` it is the test loss ``E KL(P_{x_t,·} ‖ p_θ)``.

On the symmetric family ``W = aI + b11ᵀ`` the logits are ``a U + b C``
(:mod:`gradflow.systems.induction_heads.reduction`); :func:`reduced_logits` computes them that way, by a
separate code path, and :func:`reduced_field` gives the flow of ``θ = (a, b, v)`` that the
minimal model's own gradient flow induces (``d(a, b)/dt = -G⁻¹ ∇L``).
"""

from __future__ import annotations

import functools
import itertools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from gradflow import GradientField

from .data import ICLBatch
from .reduction import metric_inverse
from .strategies import one_hot, true_next
from .task import MIXINGS, check_mixing

__all__ = [
    "MIXINGS",
    "Minimal",
    "check_mixing",
    "mixing_matrix",
    "minimal_logits",
    "minimal_loss",
    "cross_entropy",
    "initial",
    "embed",
    "project",
    "family_residual",
    "lag_weights",
    "reduced_logits",
    "reduced_loss",
    "reduced_field",
    "relabel_all",
]


class Minimal(NamedTuple):
    """Parameters of the minimal model.

    Attributes:
        W: shape ``(k, k)``, the second layer.
        v: shape ``(L,)``, the positional logits (softmax) or weights (linear) of lags ``1 … L``.
    """

    W: jax.Array
    v: jax.Array


def mixing_matrix(v: jax.Array, T: int, mixing: str) -> jax.Array:
    """``M(v)``, shape ``(T, T)``, strictly lower triangular: ``M_{s, s-m}`` from ``v_m``.

    Lags beyond ``len(v)`` have ``v_m = 0``.
    """
    v = jnp.pad(v, (0, T - 1 - v.shape[0]))
    lag = jnp.arange(T)[:, None] - jnp.arange(T)[None, :]
    valid = lag >= 1
    vm = v[jnp.clip(lag - 1, 0, T - 2)]
    if mixing == "linear":
        return jnp.where(valid, vm, 0.0)
    logits = jnp.where(valid, vm, -jnp.inf)
    z = jnp.max(logits, axis=-1, keepdims=True)
    w = jnp.where(valid, jnp.exp(logits - jnp.where(jnp.isfinite(z), z, 0.0)), 0.0)
    total = w.sum(-1, keepdims=True)
    return w / jnp.where(total > 0, total, 1.0)


def _causal_mean(T: int) -> jax.Array:
    """``mask``: ``1/t`` for ``s ≤ t`` (1-based), 0 above the diagonal; shape ``(T, T)``."""
    return jnp.tril(jnp.ones((T, T))) / jnp.arange(1, T + 1)[:, None]


def minimal_logits(params: Minimal, x: jax.Array, mixing: str) -> jax.Array:
    """``f(E) = mask(E W (M E)ᵀ) E`` for tokens ``x`` (``(n, T)``); shape ``(n, T, k)``."""
    k, T = params.W.shape[0], x.shape[1]
    E = one_hot(x, k)
    ME = jnp.einsum("sr,nrj->nsj", mixing_matrix(params.v, T, mixing), E)
    A = jnp.einsum("nti,ij,nsj->nts", E, params.W, ME) * _causal_mean(T)
    return jnp.einsum("nts,nsj->ntj", A, E)


def cross_entropy(logits: jax.Array, batch: ICLBatch) -> jax.Array:
    """``-E Σ_j P_{x_t, j} ln softmax(f_t)_j`` averaged over sequences and positions, nats."""
    return -jnp.mean(jnp.sum(true_next(batch) * jax.nn.log_softmax(logits), axis=-1))


def minimal_loss(params: Minimal, batch: ICLBatch, mixing: str) -> jax.Array:
    """The minimal model's cross-entropy on ``batch``, nats."""
    return cross_entropy(minimal_logits(params, batch.x, mixing), batch)


def initial(k: int, T: int, lags: int, mixing: str) -> Minimal:
    """The starting point of training: ``W = 0`` and the uninformative mixing.

    Softmax: ``v = 0``, every available lag weighted equally (the paper's start).  Linear:
    ``v_m = 1/T``; ``v = 0`` would be a critical point there, since ``W = 0`` and ``M = 0``
    annihilate each other's gradients.
    """
    v0 = 0.0 if mixing == "softmax" else 1.0 / T
    return Minimal(W=jnp.zeros((k, k)), v=jnp.full((lags,), v0, dtype=jnp.float64))


def embed(theta: jax.Array, k: int) -> Minimal:
    """``θ = (a, b, v_1 … v_L)`` → ``W = aI + b11ᵀ``, ``v``."""
    return Minimal(W=theta[0] * jnp.eye(k) + theta[1] * jnp.ones((k, k)), v=theta[2:])


def project(params: Minimal) -> jax.Array:
    """The Frobenius-orthogonal projection of ``W`` onto ``{aI + b11ᵀ}`` joined with ``v``.

    ``b`` = mean off-diagonal entry, ``a + b`` = mean diagonal entry.  Returns ``(a, b, v…)``.
    """
    W = params.W
    k = W.shape[0]
    diag = jnp.trace(W) / k
    off = (W.sum() - jnp.trace(W)) / (k * (k - 1))
    return jnp.concatenate([jnp.stack([diag - off, off]), params.v])


def family_residual(W: jax.Array) -> jax.Array:
    """``‖W - proj(W)‖_F``: the part of ``W`` (or of a gradient) outside ``{aI + b11ᵀ}``."""
    theta = project(Minimal(W=W, v=jnp.zeros((0,))))
    return jnp.linalg.norm(W - embed(theta, W.shape[0]).W)


def lag_weights(v: jax.Array, T: int, mixing: str) -> tuple[jax.Array, jax.Array]:
    """Row ``s`` of ``M(v)`` in lag form: ``(w (T, L), tail (T,))``.

    ``M_{s, s-m} = w[s, m-1]`` for ``m ≤ L = len(v)`` and ``M_{s, s-m} = tail[s]`` for every
    lag ``m > L`` (whose ``v_m = 0``); zero for ``m > s - 1`` (1-based ``s``).
    """
    L = v.shape[0]
    s = jnp.arange(T)[:, None]  # 0-based row: lags 1 … s are available
    available = jnp.arange(1, L + 1)[None, :] <= s
    if mixing == "linear":
        return jnp.where(available, v[None, :], 0.0), jnp.zeros(T)
    c = jnp.maximum(jnp.max(v), 0.0)
    e = jnp.where(available, jnp.exp(v - c)[None, :], 0.0)
    n_tail = jnp.maximum(jnp.arange(T) - L, 0)
    Z = e.sum(1) + n_tail * jnp.exp(-c)
    Z = jnp.where(Z > 0, Z, 1.0)
    return e / Z[:, None], jnp.exp(-c) / Z


def reduced_logits(theta: jax.Array, x: jax.Array, k: int, mixing: str) -> jax.Array:
    """``f_t(j) = a U_t(j) + b C_t(j)`` (see :mod:`gradflow.systems.induction_heads.reduction`); ``(n, T, k)``.

    ``U_t(j) = Q_t[x_t, j] / t`` with the running sum ``Q_t = Σ_{s ≤ t} (M E)_s ⊗ E_s``, and
    ``C_t(j) = Σ_{s ≤ t} ρ_s E_s[j] / t`` with the row sums ``ρ_s`` of ``M``.  With at most
    :data:`SHIFTED_LAGS` ``· T`` lags, ``M E`` is computed without the ``T × T`` mixing matrix,
    in ``O(n T (L k + k²))`` for ``L`` lags, as
    ``(M E)_s = Σ_{m ≤ L} w_{s,m} E_{s-m} + tail_s Σ_{r ≤ s-L-1} E_r`` (shifted sums); with more,
    as one product with :func:`mixing_matrix` (``O(n T² k)``, five times faster than ``T - 1``
    shifted sums at ``T = 50``).
    """
    a, b, v = theta[0], theta[1], theta[2:]
    n, T = x.shape
    E = one_hot(x, k)
    L = v.shape[0]
    if L > SHIFTED_LAGS * T:
        M = mixing_matrix(v, T, mixing)
        ME = jnp.einsum("sr,nrj->nsj", M, E)
        rho = M.sum(1)
    else:
        ME, rho = _shifted_mixing(v, E, mixing)
    t = jnp.arange(1, T + 1)[None, :, None]
    Q = jnp.cumsum(jnp.einsum("nsi,nsj->nsij", ME, E), axis=1)
    U = jnp.einsum("nsij,nsi->nsj", Q, E) / t
    C = jnp.cumsum(rho[None, :, None] * E, axis=1) / t
    return a * U + b * C


SHIFTED_LAGS = 0.25
"""The share of ``T`` up to which :func:`reduced_logits` mixes by shifted sums."""


def _shifted_mixing(v: jax.Array, E: jax.Array, mixing: str) -> tuple[jax.Array, jax.Array]:
    """``(M E (n, T, k), row sums ρ (T,))`` by shifted sums over the ``L`` lags of ``v``."""
    T = E.shape[1]
    w, tail = lag_weights(v, T, mixing)

    def shift(X: jax.Array, m: jax.Array) -> jax.Array:
        """``X_{s-m}`` at position ``s`` (zero where ``s < m``)."""
        return jnp.where((jnp.arange(T) >= m)[None, :, None], jnp.roll(X, m, axis=1), 0.0)

    def add_lag(ME: jax.Array, lag: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, None]:
        m, wm = lag
        return ME + wm[None, :, None] * shift(E, m), None

    L = v.shape[0]
    ME, _ = jax.lax.scan(
        add_lag,
        tail[None, :, None] * shift(jnp.cumsum(E, axis=1), L + 1),
        (jnp.arange(1, L + 1), w.T),
    )
    return ME, w.sum(1) + tail * jnp.maximum(jnp.arange(T) - L, 0)


def reduced_loss(theta: jax.Array, batch: ICLBatch, mixing: str) -> jax.Array:
    """``L(a, b, v)`` on ``batch``, nats."""
    return cross_entropy(reduced_logits(theta, batch.x, batch.P.shape[-1], mixing), batch)


@functools.cache
def reduced_field(mixing: str) -> GradientField:
    """The flow of ``θ = (a, b, v)`` induced by the minimal model's gradient flow on ``(W, v)``.

    ``loss(θ, batch)`` is :func:`reduced_loss`; ``grad`` is ``∇L`` with its ``(a, b)`` block
    multiplied by ``G⁻¹`` (:func:`gradflow.systems.induction_heads.reduction.metric_inverse`), so that
    ``dθ/dt = -grad`` is the image of ``d(W, v)/dt = -∇L`` on the family.  Both are jitted, so
    the engine's own un-jitted calls (status, losses along a path) compile once.

    Raises:
        GradflowError: unknown ``mixing``.
    """
    check_mixing(mixing)

    def loss(theta: jax.Array, batch: ICLBatch) -> jax.Array:
        return reduced_loss(theta, batch, mixing)

    def grad(theta: jax.Array, batch: ICLBatch) -> jax.Array:
        g = jax.grad(loss)(theta, batch)
        G_inv = jnp.asarray(metric_inverse(batch.P.shape[-1]))
        return g.at[:2].set(G_inv @ g[:2])

    return GradientField(loss=jax.jit(loss), grad=jax.jit(grad))


def relabel_all(batch: ICLBatch) -> ICLBatch:
    """The batch under all ``k!`` relabellings of the states, stacked: ``k! · n`` sequences.

    ``x → σ(x)``, ``P'_{σ(i) σ(j)} = P_{ij}``.  On such a batch the empirical loss is exactly
    invariant under ``W → ΠᵀWΠ``, so ``{aI + b11ᵀ}`` is exactly invariant under its gradient flow.
    """
    k = batch.P.shape[-1]
    xs, Ps = [], []
    for perm in itertools.permutations(range(k)):
        sigma = jnp.asarray(perm)
        inverse = jnp.asarray(np.argsort(perm))
        xs.append(sigma[batch.x])
        Ps.append(batch.P[:, inverse][:, :, inverse])
    return ICLBatch(x=jnp.concatenate(xs), P=jnp.concatenate(Ps))
