"""First-order Markov chains on ``k`` states: the kernel family, its stationary law and entropies,
a sampler and exact enumeration.

The family generalises the binary kernel ``[[1 - p, p], [q, 1 - q]]`` of
:mod:`gradflow.systems.markov.chain`: state 0 leaves with probability ``p`` and every other state
with probability ``q``, each to one of the ``k - 1`` other states chosen uniformly,

    P[0, 0] = 1 - p,   P[0, j] = p/(k - 1)   (j ≠ 0),
    P[i, i] = 1 - q,   P[i, j] = q/(k - 1)   (i ≠ 0, j ≠ i).

At ``k = 2`` it is the binary kernel; at ``p = q`` it is the symmetric switching chain
``(1 - p) I + p/(k - 1) (J - I)`` with the uniform stationary law; the rows are all equal (the
chain is i.i.d., memoryless) only at ``p = q = (k - 1)/k``.  Stationary law:
``π_0 = q/(q + (k - 1) p)``, ``π_i = p/(q + (k - 1) p)`` (balance of the flow into state 0,
``π_0 p = Σ_{i≠0} π_i q/(k - 1)``, and symmetry among the states ``1 … k - 1``).

The paper's multi-state experiments are described only in the authors' discussion of the reviews
(|S| = 5, "p = 0.6"); the authors' public multi-state code (github.com/Bond1995/Markov,
``Markov-LLM-m/src/optim/utils.py``) draws from rows proportional to
``(p/k) J + (1 - 1.5 p) I``, a one-parameter symmetric chain whose ``p`` is not the binary
switching probability.  This family is this project's choice: the one that keeps ``p`` and ``q``
the binary chain's switching probabilities; ``docs/systems/markov.md`` states both.

Entropies in nats.  Any row-stochastic kernel may be passed to the functions below; the family is
one constructor.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from gradflow import GradflowError

from .ranges import check_states

__all__ = [
    "check_kernel",
    "enumerate_states",
    "entropy_rate",
    "lumped_entropy",
    "one_state_entropy",
    "sample_states",
    "sequence_probabilities",
    "stationary",
    "switching_kernel",
    "unigram_entropy",
]


def switching_kernel(k: int, p: float, q: float) -> np.ndarray:
    """The ``k``-state kernel of the module docstring, shape ``(k, k)``, rows summing to 1.

    Raises:
        GradflowError: ``k`` outside ``2…`` :data:`~gradflow.systems.markov.ranges.MAX_STATES`,
            ``p`` or ``q`` outside ``(0, 1)``.
    """
    k = check_states(k)
    for name, value in (("p", p), ("q", q)):
        if not 0.0 < float(value) < 1.0:
            raise GradflowError(f"{name} = {value!r} is outside the valid range (0, 1)")
    leave = np.full(k, float(q))
    leave[0] = float(p)
    kernel = np.repeat((leave / (k - 1))[:, None], k, axis=1)
    np.fill_diagonal(kernel, 1.0 - leave)
    return kernel


def check_kernel(kernel: np.ndarray) -> np.ndarray:
    """A ``(k, k)`` row-stochastic matrix as float64.

    Raises:
        GradflowError: not square, ``k < 2``, a negative entry or a row not summing to 1 (to 1e-12).
    """
    P = np.asarray(kernel, dtype=np.float64)
    if P.ndim != 2 or P.shape[0] != P.shape[1] or P.shape[0] < 2:
        raise GradflowError(f"kernel of shape {P.shape} must be a square (k, k) matrix, k ≥ 2")
    if (P < 0).any() or not np.allclose(P.sum(axis=1), 1.0, rtol=0, atol=1e-12):
        raise GradflowError("kernel must have non-negative entries and rows summing to 1")
    return P


def stationary(kernel: np.ndarray) -> np.ndarray:
    """The stationary law ``π`` with ``π P = π``, ``Σ π = 1``, shape ``(k,)``: the least-squares
    solution of ``(Pᵀ - I) π = 0`` with the normalisation appended (exact for an irreducible
    kernel, whose ``π`` is unique).

    Raises:
        GradflowError: as :func:`check_kernel`.
    """
    P = check_kernel(kernel)
    k = P.shape[0]
    system = np.vstack([P.T - np.eye(k), np.ones((1, k))])
    rhs = np.zeros(k + 1)
    rhs[-1] = 1.0
    return np.linalg.lstsq(system, rhs, rcond=None)[0]


def _entropy(probabilities: np.ndarray) -> np.ndarray:
    """``-Σ x ln x`` along the last axis, with ``0 ln 0 = 0``, nats."""
    x = np.asarray(probabilities)
    return -np.sum(np.where(x > 0, x * np.log(np.where(x > 0, x, 1.0)), 0.0), axis=-1)


def entropy_rate(kernel: np.ndarray) -> float:
    """``H(x_{n+1} | x_n) = Σ_i π_i H(P[i, :])``, nats: the loss of the bigram predictor, the
    global minimum of the next-symbol cross-entropy of a stationary chain."""
    P = check_kernel(kernel)
    return float(stationary(P) @ _entropy(P))


def unigram_entropy(kernel: np.ndarray) -> float:
    """``H(π) = -Σ π_i ln π_i``, nats: the loss of predicting ``π`` everywhere (the unigram
    plateau)."""
    return float(_entropy(stationary(kernel)))


def lumped_entropy(kernel: np.ndarray, groups: list[list[int]]) -> float:
    """The loss of the predictor that lumps the states of each group: after a state of group
    ``G`` it predicts the ``π``-weighted mixture ``m_G`` of the group's rows, so its loss is
    ``Σ_G π_G H(m_G)`` (the cross-entropy of each row of ``G`` against ``m_G``, averaged by
    ``π``, is ``H(m_G)``); nats.  All singletons: the entropy rate; one group: ``H(π)``.

    Args:
        kernel: ``(k, k)`` row-stochastic.
        groups: a partition of ``0 … k − 1``.

    Raises:
        GradflowError: as :func:`check_kernel`, or ``groups`` not a partition of the states.
    """
    P = check_kernel(kernel)
    if sorted(i for g in groups for i in g) != list(range(P.shape[0])) or not all(groups):
        raise GradflowError(f"groups {groups!r} must partition the states 0 … {P.shape[0] - 1}")
    pi = stationary(P)
    total = 0.0
    for group in groups:
        weight = pi[group].sum()
        total += float(weight * _entropy(pi[group] @ P[group] / weight))
    return total


def one_state_entropy(kernel: np.ndarray) -> tuple[float, int]:
    """The least :func:`lumped_entropy` of a predictor that tells one state ``j`` from the rest
    and lumps the others, ``π_j H(P[j, :]) + (1 − π_j) H(m_j)``, over ``j``; nats.  Its logits
    ``ln P[j, :]`` after ``j`` and ``ln m_j`` elsewhere differ from a constant row by a rank-one
    matrix, so it bounds the best rank-one predictor from above (``docs/systems/markov.md``:
    equal to it to 1e-15 at ``p = q = 0.9``, ``k = 3, 5``, by a numerical search over rank-one
    logits; above it at ``p = q = 0.6``).  At ``k = 2`` it is the entropy rate.

    Returns:
        ``(loss, j)``.

    Raises:
        GradflowError: as :func:`check_kernel`.
    """
    k = check_kernel(kernel).shape[0]
    losses = [lumped_entropy(kernel, [[j], [i for i in range(k) if i != j]]) for j in range(k)]
    j = int(np.argmin(losses))
    return float(losses[j]), j


@functools.partial(jax.jit, static_argnames=("batch", "length"))
def sample_states(
    key: jax.Array, kernel: jax.Array, first: jax.Array, batch: int, length: int
) -> jax.Array:
    """``batch`` independent chains of ``length`` symbols, the first drawn from ``first``.

    Args:
        key: a ``jax.random`` key.
        kernel: ``(k, k)`` row-stochastic.
        first: law of ``x_1``, shape ``(k,)`` (usually :func:`stationary`).
        batch: number of sequences.
        length: symbols per sequence.

    Returns:
        ``int32`` array of shape ``(batch, length)`` with values in ``0 … k - 1``.
    """
    log_kernel = jnp.log(kernel)
    keys = jax.random.split(key, length)
    x1 = jax.random.categorical(keys[0], jnp.log(first), shape=(batch,))

    def step(prev: jax.Array, k: jax.Array) -> tuple[jax.Array, jax.Array]:
        nxt = jax.random.categorical(k, log_kernel[prev])
        return nxt, nxt

    _, rest = jax.lax.scan(step, x1, keys[1:])
    return jnp.concatenate([x1[None], rest], axis=0).T.astype(jnp.int32)


MAX_ENUMERATED = 1 << 14
"""Most sequences :func:`enumerate_states` writes out (``k^N``), as the binary chain's ``2^14``."""


def enumerate_states(k: int, length: int) -> np.ndarray:
    """All ``k^N`` sequences of ``N`` symbols in ``0 … k - 1``, shape ``(k^N, N)``, in base-``k``
    counting order.

    Raises:
        GradflowError: ``k^N`` above :data:`MAX_ENUMERATED` or ``N < 1``.
    """
    k = check_states(k)
    if isinstance(length, bool) or int(length) != length or length < 1:
        raise GradflowError(f"sequence length N = {length!r} must be an integer ≥ 1")
    if k**length > MAX_ENUMERATED:
        raise GradflowError(
            f"k^N = {k}^{length} = {k**length:,} sequences are too many to enumerate (at most "
            f"{MAX_ENUMERATED:,}); use a shorter N or a Monte Carlo estimate"
        )
    codes = np.arange(k**length)
    powers = k ** np.arange(length - 1, -1, -1)
    return ((codes[:, None] // powers[None, :]) % k).astype(np.int32)


def sequence_probabilities(sequences: jax.Array, kernel: jax.Array, first: jax.Array) -> jax.Array:
    """``P(x) = first[x_1] Π_n P[x_n, x_{n+1}]`` of each row of ``sequences`` ``(B, N)``, shape
    ``(B,)``."""
    x = jnp.asarray(sequences)
    return first[x[:, 0]] * jnp.prod(kernel[x[:, :-1], x[:, 1:]], axis=1)
