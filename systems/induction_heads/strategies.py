"""In-context strategies for ICL-MC and the KL metrics that place a predictor among them.

Source: Edelman et al., "The Evolution of Statistical Induction Heads" (2024), §2–§3.  At
position ``t`` (having seen ``x_1 … x_t``) a strategy predicts the law of ``x_{t+1}``:

- uniform: ``q_t(j) = 1/k``;
- unigram, add-one counts: ``q_t(j) = (1 + #{s ≤ t: x_s = j}) / (t + k)``;
- bigram, add-one counts:
  ``q_t(j) = (1 + #{s < t: x_s = x_t, x_{s+1} = j}) / (k + #{s < t: x_s = x_t})``
  (the posterior mean of row ``x_t`` under a Dirichlet(1) prior when the first token's
  likelihood is ignored);
- Bayes: the posterior mean ``E[P_{x_t, ·} | x_1 … x_t]`` under the Dirichlet(1)-rows prior with
  ``x_1 ~ π(P)`` (:func:`bayes`, by self-normalized importance sampling).

Every strategy is vectorized over sequences and causal at every position: arrays of shape
``(n, T, k)`` whose entry ``[:, t-1]`` uses ``x_1 … x_t`` only.

Metrics (nats): the test loss ``E KL(P_{x_t, ·} ‖ p_θ)`` and the distance to strategy ``m``,
``E KL(q^(m) ‖ p_θ)``, each at the last position ``t = T`` and averaged over positions.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import xlogy

from .data import ICLBatch, Prior, sample, stationary

__all__ = [
    "STRATEGY_NAMES",
    "Level",
    "Metrics",
    "one_hot",
    "uniform",
    "unigram",
    "bigram",
    "bayes",
    "strategies",
    "last_position",
    "transition_counts",
    "true_next",
    "kl",
    "metrics",
    "nearest",
    "kl_levels",
]

STRATEGY_NAMES = ("uniform", "unigram", "bigram")
"""The strategies a training run passes through, in order."""


def one_hot(x: jax.Array, k: int) -> jax.Array:
    """One-hot tokens ``E``, shape ``x.shape + (k,)``, float64."""
    return jax.nn.one_hot(x, k, dtype=jnp.float64)


def uniform(x: jax.Array, k: int) -> jax.Array:
    """``q_t(j) = 1/k`` at every position; shape ``(n, T, k)``."""
    return jnp.full(x.shape + (k,), 1.0 / k, dtype=jnp.float64)


def _unigram_rule(counts: jax.Array, t: jax.Array, k: int) -> jax.Array:
    """``(1 + c_j) / (t + k)`` from the counts ``c`` of ``t`` tokens."""
    return (1.0 + counts) / (t + k)


def _bigram_rule(row: jax.Array, k: int) -> jax.Array:
    """``(1 + n_j) / (k + Σ_j n_j)`` from the transition counts ``n`` out of the current token."""
    return (1.0 + row) / (k + row.sum(-1, keepdims=True))


def unigram(x: jax.Array, k: int) -> jax.Array:
    """Add-one unigram ``q_t(j) = (1 + #{s ≤ t: x_s = j}) / (t + k)``; shape ``(n, T, k)``."""
    counts = jnp.cumsum(one_hot(x, k), axis=1)
    return _unigram_rule(counts, jnp.arange(1, x.shape[1] + 1)[:, None], k)


def transition_counts(x: jax.Array, k: int) -> jax.Array:
    """``N_t[i, j] = #{s < t: x_s = i, x_{s+1} = j}`` at every position; shape ``(n, T, k, k)``."""
    E = one_hot(x, k)
    pairs = jnp.einsum("nsi,nsj->nsij", E[:, :-1], E[:, 1:])
    zero = jnp.zeros((x.shape[0], 1, k, k))
    return jnp.concatenate([zero, jnp.cumsum(pairs, axis=1)], axis=1)


def _current_rows(N: jax.Array, x: jax.Array) -> jax.Array:
    """``N_t[x_t, :]`` for ``N`` of shape ``(n, T, k, k)``; shape ``(n, T, k)``."""
    return jnp.take_along_axis(N, x[:, :, None, None], axis=2)[:, :, 0, :]


def bigram(x: jax.Array, k: int) -> jax.Array:
    """Add-one bigram ``(1 + N_t[x_t, j]) / (k + Σ_j N_t[x_t, j])``; shape ``(n, T, k)``."""
    return _bigram_rule(_current_rows(transition_counts(x, k), x), k)


@functools.partial(jax.jit, static_argnums=(2, 3))
def bayes(key: jax.Array, x: jax.Array, k: int, samples: int = 1024) -> jax.Array:
    """Posterior-mean predictor under Dirichlet(1) rows and a stationary first token.

    The posterior of ``P`` given ``x_1 … x_t`` is ``∝ π_{x_1}(P) Π_i Dir(P_i; 1 + N_t[i])``.
    With proposals ``P^(s)`` from the product of Dirichlets (the add-one bigram posterior) and
    weights ``w_s = π_{x_1}(P^(s)) ∈ (0, 1]``,

        E[P_{x_t, j} | x_{≤t}] ≈ Σ_s w_s P^(s)_{x_t, j} / Σ_s w_s.

    The estimator is consistent in ``samples`` with bias and spread ``O(1/samples)`` and
    ``O(samples^{-1/2})``; the weights are bounded, so a few hundred samples suffice.

    Args:
        key: PRNG key.
        x: tokens, shape ``(n, T)``.
        k: number of states.
        samples: importance samples per sequence and position.

    Returns:
        Shape ``(n, T, k)``.
    """
    N = transition_counts(x, k)
    E = one_hot(x, k)
    keys = jax.random.split(key, x.shape[1])

    def at(args: tuple[jax.Array, jax.Array, jax.Array]) -> jax.Array:
        key, Nt, Et = args
        alpha = jnp.broadcast_to(1.0 + Nt[:, None], (Nt.shape[0], samples, k, k))
        g = jax.random.gamma(key, alpha, dtype=jnp.float64)
        P = g / g.sum(-1, keepdims=True)
        w = jnp.einsum("nsi,ni->ns", stationary(P), E[:, 0])
        rows = jnp.einsum("nsij,ni->nsj", P, Et)
        return jnp.einsum("ns,nsj->nj", w, rows) / w.sum(-1, keepdims=True)

    out = jax.lax.map(at, (keys, jnp.swapaxes(N, 0, 1), jnp.swapaxes(E, 0, 1)))
    return jnp.swapaxes(out, 0, 1)


@functools.partial(jax.jit, static_argnums=1)
def strategies(x: jax.Array, k: int) -> dict[str, jax.Array]:
    """Uniform, unigram and bigram predictions at every position, each ``(n, T, k)``."""
    return {"uniform": uniform(x, k), "unigram": unigram(x, k), "bigram": bigram(x, k)}


@functools.partial(jax.jit, static_argnums=1)
def last_position(x: jax.Array, k: int) -> dict[str, jax.Array]:
    """The strategies at the last position ``t = T`` only, each ``(n, k)``.

    Equal to ``strategies(x, k)[m][:, -1]``, from whole-sequence counts in ``O(n T k²)``
    without the running counts of every position.
    """
    E = one_hot(x, k)
    N = jnp.einsum("nsi,nsj->nij", E[:, :-1], E[:, 1:])
    row = jnp.einsum("nij,ni->nj", N, E[:, -1])
    return {
        "uniform": jnp.full((x.shape[0], k), 1.0 / k, dtype=jnp.float64),
        "unigram": _unigram_rule(E.sum(1), x.shape[1], k),
        "bigram": _bigram_rule(row, k),
    }


def true_next(batch: ICLBatch) -> jax.Array:
    """The true law of ``x_{t+1}``, the row ``P_{x_t, ·}``, at every position; ``(n, T, k)``."""
    return jnp.take_along_axis(batch.P, batch.x[:, :, None], axis=1)


def kl(p: jax.Array, q: jax.Array) -> jax.Array:
    """``KL(p ‖ q) = Σ_j p_j ln(p_j / q_j)`` over the last axis, nats (``0 ln 0 = 0``)."""
    return jnp.sum(xlogy(p, p) - xlogy(p, q), axis=-1)


class Metrics(NamedTuple):
    """A predictor's place among the strategies, nats.

    Attributes:
        test_last, test_mean: ``E KL(P_{x_t, ·} ‖ p_θ)`` at ``t = T`` and averaged over ``t``.
        distance_last, distance_mean: ``E KL(q^(m) ‖ p_θ)`` per strategy ``m`` in
            :data:`STRATEGY_NAMES` order, shape ``(3,)``.
    """

    test_last: jax.Array
    test_mean: jax.Array
    distance_last: jax.Array
    distance_mean: jax.Array


@jax.jit
def metrics(probs: jax.Array, batch: ICLBatch) -> Metrics:
    """The test loss and the distances to each strategy of the predictions ``probs`` (``(n, T, k)``)."""
    k = probs.shape[-1]
    test = kl(true_next(batch), probs)
    refs = strategies(batch.x, k)
    dist = jnp.stack([kl(refs[m], probs) for m in STRATEGY_NAMES])
    return Metrics(
        test_last=test[:, -1].mean(),
        test_mean=test.mean(),
        distance_last=dist[:, :, -1].mean(-1),
        distance_mean=dist.mean((1, 2)),
    )


def nearest(distances: np.ndarray) -> np.ndarray:
    """Index into :data:`STRATEGY_NAMES` of the nearest strategy, for ``distances (…, 3)``."""
    return np.argmin(np.asarray(distances), axis=-1)


class Level(NamedTuple):
    """A Monte-Carlo mean with its standard error (nats)."""

    mean: float
    se: float


@functools.partial(jax.jit, static_argnums=(1, 2, 3, 4))
def _last_kl_chunk(
    key: jax.Array, prior: Prior, n: int, k: int, T: int
) -> tuple[jax.Array, jax.Array]:
    batch = sample(key, prior, n, k, T)
    true = batch.P[jnp.arange(n), batch.x[:, -1]]
    preds = last_position(batch.x, k)
    values = jnp.stack([kl(true, preds[m]) for m in STRATEGY_NAMES], axis=-1)
    return values.sum(0), (values**2).sum(0)


def kl_levels(
    key: jax.Array, prior: Prior, k: int, T: int, n: int, chunk: int = 20_000
) -> dict[str, Level]:
    """``E KL(P_{x_T, ·} ‖ q^(m)_T)`` for each strategy at the last position, by Monte Carlo.

    Args:
        key: PRNG key.
        prior: the prior over transition matrices.
        k: number of states.
        T: sequence length.
        n: number of sequences (rounded up to a whole number of chunks).
        chunk: sequences per chunk (bounds memory: ``chunk · T · k²`` counts).

    Returns:
        Mean and standard error per strategy name.
    """
    chunks = -(-n // chunk)
    s1 = s2 = 0.0
    for sub in jax.random.split(key, chunks):
        a, b = _last_kl_chunk(sub, prior, chunk, k, T)
        s1, s2 = s1 + np.asarray(a), s2 + np.asarray(b)
    total = chunks * chunk
    mean = s1 / total
    se = np.sqrt(np.maximum(s2 / total - mean**2, 0.0) / (total - 1))
    return {m: Level(float(mean[i]), float(se[i])) for i, m in enumerate(STRATEGY_NAMES)}
