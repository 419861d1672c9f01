"""The push the data give the reduced ``(a, b, v)`` flow at a point: why removing the unigram
signal slows the minimal model's escape from ``a = 0``.

:func:`field_at` estimates the reduced field ``-(G⁻¹∇_{(a,b)}L, ∇_v L)`` at ``θ`` on ``n``
sequences of a prior and all their relabellings, with the standard error of each component
over the ``n`` independent sequences.  :func:`leading_field` gives its ``T → ∞`` limit at
``θ = 0`` in the ``(a, b)`` block, ``G⁻¹ (D_a, D_b)`` averaged over the prior's matrices
(:func:`gradflow.systems.induction_heads.reduction.leading_drive`): zero for the doubly-stochastic prior,
whatever ``T``.  :func:`unigram_point` is where the unigram coordinate ``b`` alone fits the
data, ``b* = argmin_b L(0, b, 0)``: the state a model is left in when it learns the unigram
stage without the induction coordinate, and :func:`unigram_escape` the linear flow of
``(a, v_1)`` there: how fast a run that sits at the unigram point leaves it.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from gradflow.systems.induction_heads import minimal as mm

from .data import Prior, sample
from .reduction import leading_drive, metric_inverse

__all__ = ["Escape", "Estimate", "field_at", "leading_field", "unigram_escape", "unigram_point"]


class Estimate(NamedTuple):
    """A Monte-Carlo mean with its standard error, per component."""

    mean: np.ndarray
    se: np.ndarray


def field_at(
    theta: np.ndarray,
    prior: Prior,
    k: int,
    T: int,
    n: int,
    seed: int = 0,
    mixing: str = "softmax",
) -> Estimate:
    """The reduced field ``dθ/dt = -(G⁻¹∇_{(a,b)}L, ∇_v L)`` at ``θ = (a, b, v_1 … v_L)``.

    Each sequence's reduced loss is invariant under relabelling the states, so the field on
    ``n`` sequences is the field on their relabelling closure, where it is the image of the
    minimal model's gradient flow.

    Args:
        theta: the point, shape ``(2 + L,)``.
        prior: the prior of the sequences.
        k: number of states.
        T: sequence length.
        n: sequences drawn.
        seed: PRNG seed of the sample.
        mixing: positional mixing.

    Returns:
        Mean and standard error over the ``n`` sequences, each shape ``(2 + L,)``, per unit
        flow time.
    """
    data = sample(jax.random.key(seed), prior, n, k, T)
    single = jax.tree.map(lambda arr: arr[:, None], data)
    field = mm.reduced_field(mixing)
    per = -np.asarray(jax.jit(jax.vmap(field.grad, in_axes=(None, 0)))(jnp.asarray(theta), single))
    return Estimate(per.mean(0), per.std(0) / math.sqrt(n))


def leading_field(prior: Prior, k: int, n: int, seed: int = 0) -> Estimate:
    """``G⁻¹ (D_a, D_b)`` averaged over ``n`` matrices of ``prior``: the ``T → ∞`` limit of the
    ``(a, b)`` block of :func:`field_at` at ``θ = 0`` (softmax mixing), per unit flow time."""
    P = np.asarray(prior.matrices(jax.random.key(seed), n, k))
    per = leading_drive(P) @ metric_inverse(k).T
    return Estimate(per.mean(0), per.std(0) / math.sqrt(n))


def unigram_point(prior: Prior, k: int, T: int, n: int, seed: int = 0) -> float:
    """``b* = argmin_b L(a = 0, b, v = 0)`` (softmax mixing) on ``n`` sequences of ``prior``
    (seed ``seed``), nats.

    At ``a = 0`` the logits are ``b C`` (linear in ``b``; for softmax mixing ``C`` does not
    depend on ``v``) and the cross-entropy is convex in the logits, so ``L(0, b, 0)`` is
    convex in ``b`` and Newton's method from ``b = 0`` converges to its unique minimizer
    (stopped when the step is below ``1e-12``, at most 50 steps).

    Raises:
        GradflowError: Newton's method did not converge.
    """
    from gradflow import GradflowError

    data = sample(jax.random.key(seed), prior, n, k, T)

    def loss(b: jax.Array) -> jax.Array:
        return mm.reduced_loss(jnp.stack([0.0, b, 0.0]), data, "softmax")

    step = jax.jit(lambda b: jax.grad(loss)(b) / jax.grad(jax.grad(loss))(b))
    b = jnp.asarray(0.0, jnp.float64)  # not weakly typed, as every later iterate
    for _ in range(50):
        delta = step(b)
        b = b - delta
        if abs(float(delta)) < 1e-12:
            return float(b)
    raise GradflowError(f"Newton's method for b* did not converge (last step {float(delta):.3g})")


class Escape(NamedTuple):
    """The lag-1 reduced flow linearized at the unigram point ``(a, b, v_1) = (0, b*, 0)``.

    Attributes:
        b_star: :func:`unigram_point`.
        source: ``(da/dt, dv_1/dt)`` there, per unit flow time (``dv_1/dt = 0``: the positional
            gradient vanishes with ``a``).
        jacobian: ``∂(da/dt, dv_1/dt)/∂(a, v_1)`` there, ``(2, 2)``, ``b`` held at ``b*``.
        growth: the largest real part of its eigenvalues: the rate at which ``(a, v_1)``
            leaves the unigram point, per unit flow time.
    """

    b_star: float
    source: np.ndarray
    jacobian: np.ndarray
    growth: float


def unigram_escape(prior: Prior, k: int, T: int, n: int, seed: int = 0) -> Escape:
    """The :class:`Escape` of the lag-1 reduced model (``v_m = 0`` for ``m ≥ 2``, softmax mixing)
    at the unigram point, on ``n`` sequences of ``prior`` (seed ``seed``); the Jacobian by
    forward-mode differentiation of the field."""
    data = sample(jax.random.key(seed), prior, n, k, T)
    b_star = unigram_point(prior, k, T, n, seed)
    field = mm.reduced_field("softmax")

    def slow(av: jax.Array) -> jax.Array:
        out = -field.grad(jnp.stack([av[0], jnp.asarray(b_star), av[1]]), data)
        return jnp.stack([out[0], out[2]])

    at = jnp.zeros(2)
    J = np.asarray(jax.jacfwd(slow)(at))
    return Escape(b_star, np.asarray(slow(at)), J, float(np.max(np.linalg.eigvals(J).real)))
