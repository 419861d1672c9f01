"""The reduced ``(a, b, v_1)`` flow drawn in the ``(v_1, a)`` plane, with ``b`` at its optimum.

The lag-1 truncation of the reduced model keeps ``v_1`` and fixes ``v_m = 0`` for ``m ≥ 2``
(``lags = 1``).  For fixed ``(a, v_1)`` the loss is convex in ``b`` (the logits are linear in
``(a, b)`` and the cross-entropy is convex in the logits), so ``b*(a, v_1) = argmin_b L`` is
unique; Newton's method finds it.  Along a training run ``b`` settles on ``b*`` early (the
unigram phase) and then follows it, so the field

    (dv_1/dt, da/dt) = -(∂L/∂v_1, (G⁻¹ ∇L)_a)   at   b = b*(a, v_1)

(``(G⁻¹∇L)_a = G⁻¹_aa ∂L/∂a`` there, since ``∂L/∂b = 0``) is the slow flow the trajectory
follows.  All losses are empirical means over one fixed relabelling-closed sample (nats) and
carry its Monte-Carlo error, reported as ``loss_se``.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from gradflow.systems.induction_heads import minimal as mm

from .data import ICLBatch, Prior, sample
from .reduction import metric_inverse

__all__ = ["SlowField", "slow_field"]


@dataclass(frozen=True)
class SlowField:
    """The reduced flow on the grid of ``(v_1, a)`` with ``b = b*``.

    Attributes:
        v1, a: grid axes, shapes ``(nv,)``, ``(na,)``.
        b_star: ``(na, nv)`` optimal ``b``.
        dv1, da: ``(na, nv)`` components of the flow, per unit flow time.
        loss: ``(na, nv)`` ``L(a, b*, v_1)``, nats.
        loss_se: standard error of ``loss`` at the grid's centre over the ``n`` independent
            sequences (each averaged over its relabellings).
    """

    v1: np.ndarray
    a: np.ndarray
    b_star: np.ndarray
    dv1: np.ndarray
    da: np.ndarray
    loss: np.ndarray
    loss_se: float


def _per_sequence_loss(theta: jax.Array, batch: ICLBatch, mixing: str) -> jax.Array:
    logits = mm.reduced_logits(theta, batch.x, batch.P.shape[-1], mixing)
    true = jnp.take_along_axis(batch.P, batch.x[:, :, None], axis=1)
    return -jnp.mean(jnp.sum(true * jax.nn.log_softmax(logits), axis=-1), axis=1)


def slow_field(
    prior: Prior,
    k: int,
    T: int,
    v1: np.ndarray,
    a: np.ndarray,
    n: int = 32,
    seed: int = 0,
    mixing: str = "softmax",
    newton_steps: int = 8,
) -> SlowField:
    """The slow flow of the lag-1 reduced model on the grid ``v1 × a``.

    Args:
        prior: the data prior.
        k: number of states.
        T: sequence length.
        v1: grid axis of the lag-1 weight ``v_1``.
        a: grid axis of the induction coordinate ``a``.
        n: sequences drawn before the ``k!`` relabellings.
        seed: PRNG seed of the sample.
        mixing: positional mixing.
        newton_steps: Newton iterations for ``b*`` from ``b = 0``.
    """
    data = mm.relabel_all(sample(jax.random.key(seed), prior, n, k, T))
    G_inv = metric_inverse(k)

    def loss(theta: jax.Array) -> jax.Array:
        return mm.reduced_loss(theta, data, mixing)

    grad = jax.grad(loss)
    d2b = jax.grad(lambda th: grad(th)[1])

    @jax.jit
    def at(point: jax.Array) -> jax.Array:
        a_, v1_ = point

        def newton(b, _):
            th = jnp.stack([a_, b, v1_])
            return b - grad(th)[1] / d2b(th)[1], None

        b = jax.lax.scan(newton, jnp.asarray(0.0), None, length=newton_steps)[0]
        th = jnp.stack([a_, b, v1_])
        g = grad(th)
        return jnp.stack([b, -g[2], -G_inv[0, 0] * g[0] - G_inv[0, 1] * g[1], loss(th)])

    A, V = np.meshgrid(np.asarray(a, float), np.asarray(v1, float), indexing="ij")
    points = jnp.asarray(np.stack([A.ravel(), V.ravel()], axis=1))
    out = np.asarray(jax.lax.map(at, points)).reshape(A.shape + (4,))
    centre = jnp.asarray([a[len(a) // 2], out[len(a) // 2, len(v1) // 2, 0], v1[len(v1) // 2]])
    per_seq = np.asarray(jax.jit(_per_sequence_loss, static_argnums=2)(centre, data, mixing))
    per_seq = per_seq.reshape(-1, n).mean(0)  # the k! relabellings of one sequence are one draw
    return SlowField(
        v1=np.asarray(v1, float),
        a=np.asarray(a, float),
        b_star=out[..., 0],
        dv1=out[..., 1],
        da=out[..., 2],
        loss=out[..., 3],
        loss_se=float(per_seq.std() / np.sqrt(per_seq.size)),
    )
