"""Gradient descent of the shallow encoder against its linearized (kernel) flow.

Full-batch gradient descent with step ``γ`` on ``ℓ = ½ Σ_n (f(X_n) - y_n)²`` moves the outputs
by ``f_{k+1} - f_k ≈ -γ K (f_k - y)``; in the kernel regime ``K`` stays at its initial value
``K_0`` and the outputs follow the linear flow

    df/dt = -K (f - y),      f(0) = f_0,      t = γ k.

That flow is the gradient flow of ``½ ‖f_0 + Φ z - y‖²`` over ``z ∈ R^N`` for any factor
``Φ Φᵀ = K`` (then ``df/dt = Φ dz/dt = -Φ Φᵀ (f - y)``), which :func:`linearized_flow`
integrates with the engine (:func:`gradflow.flow` of a field).  Wu et al. (2023) bound the GD loss by
``ℓ_k ≤ (1 - γ τ1² α_0² / 2)^k ℓ_0`` (:func:`loss_bound`).
"""

from __future__ import annotations

from dataclasses import dataclass

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from gradflow import PID, FlowOptions, GradflowError, GradientField, Outcome, StopRule, flow

from .encoder import ShallowEncoder, predict, squared_loss

__all__ = [
    "Descent",
    "bound_holds",
    "linearized_descent",
    "linearized_flow",
    "loss_bound",
    "run_gd",
    "train_gd",
]


@dataclass(frozen=True)
class Descent:
    """A run of full-batch gradient descent.

    Attributes:
        model: the network after the last step.
        losses: ``ℓ_k`` for ``k = 0 … steps``, shape ``(steps + 1,)`` (squared output units).
        outputs: ``f(X_n)`` at every step, shape ``(steps + 1, N)``.
        lr: the step ``γ``.
    """

    model: ShallowEncoder
    losses: np.ndarray
    outputs: np.ndarray
    lr: float


@eqx.filter_jit
def run_gd(
    model: ShallowEncoder, X: jax.Array, y: jax.Array, lr: jax.Array, steps: int
) -> tuple[ShallowEncoder, jax.Array, jax.Array]:
    """``steps`` full-batch GD steps as one traced program (:func:`train_gd` without the checks),
    so that it can be ``vmap``-ped over networks and steps.

    Returns:
        The final network, the losses ``ℓ_0 … ℓ_steps`` (shape ``(steps + 1,)``) and the outputs
        at every step (shape ``(steps + 1, N)``).
    """
    optimizer = optax.sgd(lr)

    def loss_and_outputs(m: ShallowEncoder) -> tuple[jax.Array, jax.Array]:
        return squared_loss(m, X, y), predict(m, X)

    def step(carry, _):
        m, state = carry
        (loss, out), grads = eqx.filter_value_and_grad(loss_and_outputs, has_aux=True)(m)
        updates, state = optimizer.update(grads, state, m)
        return (eqx.apply_updates(m, updates), state), (loss, out)

    (final, _), (losses, outputs) = jax.lax.scan(
        step, (model, optimizer.init(model)), None, length=steps
    )
    last_loss, last_out = loss_and_outputs(final)
    return final, jnp.append(losses, last_loss), jnp.concatenate([outputs, last_out[None]])


def train_gd(
    model: ShallowEncoder, X: jax.Array, y: jax.Array, *, lr: float, steps: int
) -> Descent:
    """Full-batch gradient descent ``θ ← θ - γ ∇ℓ(θ)`` on every weight (optax ``sgd``).

    Args:
        model: the initial network.
        X: inputs, shape ``(N, d_s, d)``.
        y: targets, shape ``(N,)``.
        lr: the step ``γ > 0``.
        steps: number of steps ``≥ 1``.

    Raises:
        GradflowError: ``lr ≤ 0`` or ``steps < 1``.
    """
    if not lr > 0:
        raise GradflowError(f"lr = {lr!r} must be > 0")
    if not (isinstance(steps, int) and steps >= 1):
        raise GradflowError(f"steps = {steps!r} must be a positive integer")
    final, losses, outputs = run_gd(
        model, jnp.asarray(X), jnp.asarray(y), jnp.asarray(lr, jnp.asarray(X).dtype), steps
    )
    return Descent(
        model=final, losses=np.asarray(losses), outputs=np.asarray(outputs), lr=float(lr)
    )


def _residual_loss(z: jax.Array, args: tuple[jax.Array, jax.Array]) -> jax.Array:
    """``½ ‖r_0 + Φ z‖²`` with ``args = (Φ, r_0)``."""
    factor, residual0 = args
    return 0.5 * jnp.sum((residual0 + factor @ z) ** 2)


_FIELD = GradientField.from_loss(_residual_loss)

_OPTIONS = FlowOptions(
    solver=diffrax.Tsit5(),
    controller=PID(rtol=1e-10, atol=1e-13),
    stop=StopRule(gtol=1e-13, t_max=1.0, max_steps=100_000, divergence_radius=1e12),
)
"""Solver and stopping rule of the normalized flow (time ``s = t / t_max`` on ``[0, 1]``, unit
initial residual); fixed, so that every call reuses one compiled solve."""


def linearized_flow(
    K: np.ndarray, f0: np.ndarray, y: np.ndarray, ts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The outputs and loss of ``df/dt = -K (f - y)`` at the flow times ``ts``.

    Integrated by the engine (explicit Tsit5, relative tolerance 1e-10) as the gradient flow of
    ``½ ‖f_0 + Φ z - y‖²`` from ``z = 0`` with ``Φ = U Λ^{1/2}`` from ``K = U Λ Uᵀ`` (module
    docstring).  The flow is linear in the residual ``r = f - y``, so it is solved for the unit
    residual ``r_0 / ‖r_0‖`` in the normalized time ``s = t / ts[-1]`` (kernel ``ts[-1] K``) and
    scaled back; one compiled solve serves every width.  If the flow reaches its steady state
    before ``ts[-1]`` (gradient below 1e-13) the later values repeat it.

    Args:
        K: a symmetric positive semi-definite kernel, shape ``(N, N)``.
        f0: initial outputs, shape ``(N,)``.
        y: targets, shape ``(N,)``.
        ts: ascending flow times from 0, shape ``(T,)`` (GD step ``k`` is ``t = γ k``).

    Returns:
        ``(f, ℓ)`` with shapes ``(T, N)`` and ``(T,)``, ``ℓ = ½ ‖f - y‖²``.

    Raises:
        GradflowError: ``ts`` is not ascending from 0, or ``K`` is not square of size ``N``.
    """
    K, f0, y, ts = (np.asarray(a, np.float64) for a in (K, f0, y, ts))
    if K.shape != (f0.size, f0.size) or y.shape != f0.shape:
        raise GradflowError(
            f"K of shape {K.shape} does not match f0 of shape {f0.shape} and y of shape {y.shape}"
        )
    if ts.ndim != 1 or ts.size < 2 or ts[0] != 0 or np.any(np.diff(ts) <= 0):
        raise GradflowError("ts must be at least two ascending flow times starting at 0")
    t_end = float(ts[-1])
    lam, U = np.linalg.eigh(0.5 * (K + K.T))
    factor = U * np.sqrt(t_end * np.clip(lam, 0.0, None))
    residual0 = f0 - y
    scale = float(np.linalg.norm(residual0)) or 1.0
    trajectory = flow(
        _FIELD, np.zeros(f0.size), _OPTIONS, args=(factor, residual0 / scale), ts=ts / t_end
    )
    if trajectory.time < 1.0 and trajectory.status is not Outcome.CONVERGED:
        raise GradflowError(
            f"the linearized flow stopped at t = {trajectory.time * t_end:g} < {t_end:g} ({trajectory.status.name})"
        )
    residual = residual0 + scale * trajectory.thetas[: ts.size] @ factor.T
    if len(residual) < ts.size:
        residual = np.concatenate(
            [residual, np.repeat(residual[-1:], ts.size - len(residual), axis=0)]
        )
    return y + residual, 0.5 * np.sum(residual**2, axis=1)


def linearized_descent(K: np.ndarray, residual0: np.ndarray, lr: float, steps: int) -> np.ndarray:
    """Loss of gradient descent on the linearized network: ``r_{k+1} = (I - γ K) r_k``.

    Args:
        K: kernel, shape ``(N, N)``.
        residual0: ``f_0 - y``, shape ``(N,)``.
        lr: the step ``γ``.
        steps: number of steps.

    Returns:
        ``ℓ_k = ½ ‖r_k‖²`` for ``k = 0 … steps``, shape ``(steps + 1,)``.
    """
    lam, U = np.linalg.eigh(0.5 * (np.asarray(K) + np.asarray(K).T))
    coefficients = U.T @ np.asarray(residual0)
    factors = (1.0 - lr * lam)[None, :] ** np.arange(steps + 1)[:, None]
    return 0.5 * np.sum((factors * coefficients) ** 2, axis=1)


def bound_holds(losses: np.ndarray, bound: np.ndarray) -> bool:
    """Whether a loss curve stays within :func:`loss_bound` at every step, up to rounding (1e-9
    relative, and 1e-12 of ``ℓ_0`` absolute)."""
    losses = np.asarray(losses)
    return bool(np.all(losses <= np.asarray(bound) * (1 + 1e-9) + 1e-12 * losses[0]))


def loss_bound(loss0: float, lr: float, tau1: float, alpha0: float, steps: int) -> np.ndarray:
    """``ℓ_0 (1 - γ τ1² α_0² / 2)^k`` for ``k = 0 … steps``: Wu et al. (2023)'s linear rate.

    Returns:
        Shape ``(steps + 1,)``; where ``γ τ1² α_0² / 2 ≥ 1`` the factor is clipped at 0.
    """
    rate = max(1.0 - lr * tau1**2 * alpha0**2 / 2.0, 0.0)
    return loss0 * rate ** np.arange(steps + 1)
