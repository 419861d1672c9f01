"""ICL-MC: sequences from Markov chains whose transition matrix is drawn afresh for each sequence.

Source: Edelman, Edelman, Goel, Malach, Tsilivis, "The Evolution of Statistical Induction Heads:
In-Context Learning Markov Chains" (ICML 2024 workshop / NeurIPS 2024), §2 (the task) and §5
(other priors).  For each sequence a k-state transition matrix ``P`` is drawn from a prior, the
first token ``x_1`` from the stationary law ``π`` of ``P`` (``πᵀP = πᵀ``), and ``x_2, …, x_T``
from the chain.  Tokens are integers ``0 … k-1``.

Priors (:class:`Prior`):

- :class:`Dirichlet`: rows of ``P`` i.i.d. ``Dirichlet(1_k)`` (uniform on the simplex), the
  paper's main prior.
- :class:`DoublyStochastic`: ``P`` uniform on the Birkhoff polytope (all row and column sums 1),
  by rejection from the free ``(k-1) × (k-1)`` block.  Its stationary law is uniform, so the
  in-context unigram statistics carry no signal about the next token.
- :class:`Unigram`: all rows equal to one ``π ~ Dirichlet(1_k)``: i.i.d. tokens.
- :class:`Mixture`: each sequence's prior drawn from components with given weights.

:func:`parse_prior` reads the command-line spelling (``dirichlet``, ``doubly-stochastic``,
``unigram``, ``mixture:ρ`` for a share ``ρ`` of doubly-stochastic sequences among Dirichlet ones).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from gradflow import GradflowError

from .task import (
    MAX_DOUBLY_STOCHASTIC_K,
    PRIOR_NAMES,
    Dirichlet,
    DoublyStochastic,
    Mixture,
    Prior,
    Unigram,
    check_sizes,
    doubly_stochastic_mixture,
    parse_prior,
)

__all__ = [
    "ICLBatch",
    "Prior",
    "Dirichlet",
    "DoublyStochastic",
    "Unigram",
    "Mixture",
    "PRIOR_NAMES",
    "MAX_DOUBLY_STOCHASTIC_K",
    "doubly_stochastic_mixture",
    "parse_prior",
    "check_sizes",
    "stationary",
    "sample",
    "sample_chain",
]


class ICLBatch(NamedTuple):
    """A batch of ICL-MC sequences.

    Attributes:
        x: tokens, shape ``(n, T)``, integers in ``0 … k-1``.
        P: each sequence's transition matrix, shape ``(n, k, k)``, rows summing to 1.
    """

    x: jax.Array
    P: jax.Array


@jax.jit
def stationary(P: jax.Array) -> jax.Array:
    """The stationary law ``π`` (``πᵀP = πᵀ``, ``Σπ = 1``) of each matrix in ``P`` (``(..., k, k)``).

    Solves ``(Pᵀ - I)π = 0`` with the last equation replaced by ``Σπ = 1``; the solution is
    unique when ``P`` is irreducible, which holds almost surely under every prior here.
    Shape ``(..., k)``.
    """
    k = P.shape[-1]
    A = jnp.swapaxes(P, -1, -2) - jnp.eye(k, dtype=P.dtype)
    A = A.at[..., -1, :].set(1.0)
    rhs = jnp.zeros(P.shape[:-1], dtype=P.dtype).at[..., -1].set(1.0)
    return jnp.linalg.solve(A, rhs[..., None])[..., 0]


def _inverse_cdf(probs: jax.Array, u: jax.Array) -> jax.Array:
    """Index ``j`` with ``F(j-1) ≤ u < F(j)`` for the rows ``probs`` (``(n, k)``), ``u`` (``(n,)``)."""
    cdf = jnp.cumsum(probs, axis=-1)
    return jnp.minimum(jnp.sum(cdf <= u[:, None], axis=-1), probs.shape[-1] - 1).astype(jnp.int32)


@functools.partial(jax.jit, static_argnums=2)
def sample_chain(key: jax.Array, P: jax.Array, T: int) -> jax.Array:
    """Tokens ``x_1 … x_T`` of each chain ``P`` (``(n, k, k)``), ``x_1 ~ π(P)``; shape ``(n, T)``."""
    n = P.shape[0]
    u = jax.random.uniform(key, (T, n), dtype=P.dtype)
    x1 = _inverse_cdf(stationary(P), u[0])
    rows = jnp.arange(n)

    def step(x: jax.Array, ut: jax.Array) -> tuple[jax.Array, jax.Array]:
        nxt = _inverse_cdf(P[rows, x], ut)
        return nxt, nxt

    _, rest = jax.lax.scan(step, x1, u[1:])
    return jnp.concatenate([x1[:, None], rest.T], axis=1)


@functools.partial(jax.jit, static_argnums=(1, 2, 3, 4))
def _sample(key: jax.Array, prior: Prior, n: int, k: int, T: int) -> ICLBatch:
    k_matrix, k_chain = jax.random.split(key)
    P = prior.draw(k_matrix, n, k)
    return ICLBatch(x=sample_chain(k_chain, P, T), P=P)


def sample(key: jax.Array, prior: Prior, n: int, k: int, T: int) -> ICLBatch:
    """``n`` ICL-MC sequences of length ``T`` over ``k`` states, matrices from ``prior``.

    Args:
        key: a JAX PRNG key.
        prior: the prior over transition matrices.
        n: number of sequences (≥ 1).
        k: number of states (≥ 2).
        T: tokens per sequence (≥ 2).

    Returns:
        :class:`ICLBatch` with ``x`` of shape ``(n, T)`` and ``P`` of shape ``(n, k, k)``.

    Raises:
        GradflowError: ``k < 2``, ``T < 2``, ``n < 1``, or a prior that cannot use ``k`` states.
    """
    check_sizes(k, T)
    if int(n) != n or n < 1:
        raise GradflowError(f"n = {n!r}: the number of sequences must be an integer ≥ 1")
    prior.check(k)
    return _sample(key, prior, int(n), int(k), int(T))
