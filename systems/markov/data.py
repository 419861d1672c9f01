"""Binary first-order Markov chains: a vectorized sampler and exact enumeration of sequences.

Kernel ``P = [[1 - p, p], [q, 1 - q]]`` (``p = P(1|0)``, ``q = P(0|1)``), stationary law
``π = (q, p)/(p + q)``; the first symbol is drawn from ``π`` unless another law is given.  Source:
Makkuva et al., "Attention with Markov" and "Local to Global" (NeurIPS 2024), §2.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from .ranges import MAX_EXACT_LENGTH, check_length, check_switching

__all__ = [
    "MAX_EXACT_LENGTH",
    "check_length",
    "check_switching",
    "enumerate_sequences",
    "next_one_probability",
    "prefix_ends",
    "sample_chains",
    "sequence_probabilities",
]


def next_one_probability(x: jax.Array, p: jax.Array, q: jax.Array) -> jax.Array:
    """``P(x_{n+1} = 1 | x_n = x)``: ``p`` after a 0, ``1 - q`` after a 1; same shape as ``x``."""
    return jnp.where(x == 1, 1 - q, p)


@functools.partial(jax.jit, static_argnames=("batch", "length"))
def sample_chains(
    key: jax.Array,
    p: float | jax.Array,
    q: float | jax.Array,
    batch: int,
    length: int,
    first_one: float | jax.Array | None = None,
) -> jax.Array:
    """Sample ``batch`` independent chains of ``length`` symbols.

    Args:
        key: a ``jax.random`` key.
        p: switching probability ``P(1|0)`` in ``(0, 1)``.
        q: switching probability ``P(0|1)`` in ``(0, 1)``.
        batch: number of sequences.
        length: symbols per sequence.
        first_one: ``P(x_1 = 1)``; default the stationary ``π1 = p/(p + q)``.

    Returns:
        ``int32`` array of shape ``(batch, length)`` with values in ``{0, 1}``.
    """
    first = p / (p + q) if first_one is None else first_one
    u = jax.random.uniform(key, (length, batch))
    x1 = (u[0] < first).astype(jnp.int32)

    def step(prev: jax.Array, ui: jax.Array) -> tuple[jax.Array, jax.Array]:
        nxt = (ui < next_one_probability(prev, p, q)).astype(jnp.int32)
        return nxt, nxt

    _, rest = jax.lax.scan(step, x1, u[1:])
    return jnp.concatenate([x1[None], rest], axis=0).T


def enumerate_sequences(length: int) -> np.ndarray:
    """All ``2^N`` binary sequences of length ``N``, shape ``(2^N, N)``, in binary counting order.

    Raises:
        GradflowError: ``N`` outside ``1…14`` (see :data:`MAX_EXACT_LENGTH`).
    """
    n = check_length(length, exact=True)
    codes = np.arange(2**n)
    return ((codes[:, None] >> np.arange(n - 1, -1, -1)[None, :]) & 1).astype(np.int32)


def prefix_ends(length: int) -> tuple[np.ndarray, np.ndarray]:
    """Where each prefix ``x_1…x_n`` (``n = 1…N``) of the ``2^N`` sequences of
    :func:`enumerate_sequences` first ends: ``(rows, cols)``, each of shape ``(2^{N+1} - 2,)``,
    ordered by ``n`` and then as the sequences.

    In binary counting order the sequences that share a prefix of length ``n`` are the
    ``2^{N-n}`` consecutive rows of a block; ``rows`` holds the first row of each block,
    ``cols = n - 1`` the prefix's last position.

    Raises:
        GradflowError: ``N`` outside ``1…14`` (see :data:`MAX_EXACT_LENGTH`).
    """
    n = check_length(length, exact=True)
    rows = [np.arange(0, 2**n, 2 ** (n - m)) for m in range(1, n + 1)]
    cols = [np.full(2**m, m - 1) for m in range(1, n + 1)]
    return np.concatenate(rows), np.concatenate(cols)


@jax.jit
def sequence_probabilities(
    sequences: jax.Array, p: jax.Array, q: jax.Array, first_one: jax.Array | None = None
) -> jax.Array:
    """Probability of each sequence under the chain, shape ``(B,)`` for ``sequences`` ``(B, N)``.

    ``P(x) = P(x_1) Π_n P(x_{n+1} | x_n)`` with ``P(x_1 = 1) = first_one`` (default ``π1``).
    """
    first = p / (p + q) if first_one is None else first_one
    x = jnp.asarray(sequences)
    p1 = jnp.where(x[:, 0] == 1, first, 1 - first)
    up = next_one_probability(x[:, :-1], p, q)
    steps = jnp.where(x[:, 1:] == 1, up, 1 - up)
    return p1 * jnp.prod(steps, axis=1)
