"""The infinite-width limit of the two-mixture dynamics, and the attention's linear escape.

Derivation (``docs/systems/two-mixture.md``, "The infinite-width limit").  With the readout
``κ = 1/√m`` and every weight ``N(0, ω²/m)``, write ``ŵ_r = √m w_r``: the network is
``f = (1/m) Σ_{h,r} out_{h,r} ReLU(⟨ŵ_{h,r}, u_h⟩)`` and under the gradient flow of the weights

    dŵ_{h,r}/dt = √m dw_{h,r}/dt = -out_{h,r} E_s[ℓ'(y_s f_s) y_s 1{⟨ŵ_{h,r}, u_{h,s}⟩ > 0} u_{h,s}],

a velocity of order 1 for every ``m``.  Only the alignments ``n = Uᵀŵ ∈ R^{2K}`` enter ``f``; at
initialization they are i.i.d. ``N(0, ω² I_{2K})``.  As ``m → ∞`` the empirical law of each
head's ``n_{h,r}`` tends to a law ``ρ_h(t)`` carried by that velocity field (the continuity
equation ``∂_t ρ_h + ∇·(ρ_h v_h) = 0``) from ``ρ_h(0) = N(0, ω² I_{2K})``, and
``f_s = Σ_h ± ∫ ReLU(⟨n, u_{h,s}⟩) dρ_h(n)``: the same law in both heads and ``B_± = 0`` give
``f ≡ 0`` at ``t = 0``.  The attention state's equations ``dB/dt = -(G P_Q + P_K G)``,
``dP_Q/dt = -(Gᵀ B + Bᵀ G)``, ``dP_K/dt = -(G Bᵀ + B Gᵀ)`` contain no ``m``; the ``d_head = m``
rows of ``N(0, ω²/m)`` entries give ``B → 0``, ``P_Q, P_K → ω² I`` (law of large numbers,
fluctuations ``ω²/√m``).  So the limit is the reduced dynamics from ``(0, ω² I, ω² I, ρ(0))``.
It exists for ``κ = 1/√m`` only: with ``κ = 1/m`` the neurons' velocity is ``O(1/m)`` and the
limit network is frozen at ``f ≡ 0``.

Discretization: :func:`normal_quadrature` replaces ``N(0, I_{2K})`` by ``M`` fixed points
(scrambled Sobol points through the normal quantile, in antithetic pairs ``±z``), the same points
in both heads (and in both halves of a ``signed-sum`` head), so the discrete ``f(0)`` is exactly
0 as in the limit; :func:`limit_init` is then the reduced state of a width-``M`` model.

**The linear escape.**  While ``|B| ≪ 1`` the neurons move as with the attention frozen at
``B = 0``, and ``X = [S_Q S_K]`` (``d_head × 4K``) follows ``dX/dt = -X M(t)`` with
``M = [[0, Gᵀ], [G, 0]]`` and ``G(t) = ∂L/∂B`` at ``B = 0``.  So ``X(t) = X(0) Φ(t)`` with
``dΦ/dt = -Φ M``, ``Φ(0) = I``, and in the limit ``Z = XᵀX = [[P_Q, Bᵀ], [B, P_K]] = ω² ΦᵀΦ``:
``B(t) = ω² b(t)`` with ``b`` the lower-left block of ``ΦᵀΦ``, computed once from the run with
the attention frozen.  The escape time ``t*`` solves ``ω² max|b(t*)| = s`` (the escape level),
and ``dt*/d ln(1/ω) = 1/λ(t*)`` with ``λ = ½ d ln max|b| / dt``.  For constant ``G`` (SVD
``Σ σ_i a_i b_iᵀ``) ``b(t) = -Σ_i sinh(2σ_i t) a_i b_iᵀ``, so ``λ → σ_1(G)`` and
``t* = ln(1/ω)/σ_1 + O(1)``.  Gradient descent with step ``η`` maps ``X ← X (I - η M)``
exactly, so :func:`limit_descent` carries ``Φ ← Φ (I - η M)``.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from gradflow import GradflowError

from .model_config import MixtureConfig
from .reduced import ReducedMixture, ReducedState, infinite_width_state

__all__ = [
    "LIMIT_PARTICLES",
    "LimitPath",
    "limit_descent",
    "limit_init",
    "normal_quadrature",
]

LIMIT_PARTICLES = 1024
"""Default number of quadrature points ``M`` of the neuron law per head."""


def normal_quadrature(r: int, points: int, seed: int = 0) -> np.ndarray:
    """``points`` fixed points of the standard normal law on ``R^r``, shape ``(points, r)``.

    Scrambled Sobol points (seeded) mapped through the normal quantile, in antithetic pairs
    ``(z, -z)``: the sample mean is exactly 0 and the covariance is ``I`` up to the quadrature
    error.

    Raises:
        GradflowError: ``points`` not a power of two ``≥ 2``.
    """
    from scipy.stats import norm, qmc

    if int(points) != points or points < 2 or points & (points - 1):
        raise GradflowError(f"points = {points!r}: need a power of two ≥ 2")
    half = norm.ppf(qmc.Sobol(r, scramble=True, seed=seed).random(points // 2))
    return np.concatenate([half, -half])


def limit_init(
    config: MixtureConfig, particles: int = LIMIT_PARTICLES
) -> tuple[ReducedMixture, ReducedState]:
    """The discretized ``m → ∞`` limit at initialization (module docstring).

    Args:
        config: the model; its ``m`` and ``d_head`` are replaced by the limit's.
        particles: quadrature points ``M`` per head, a power of two ``≥ 8``.

    Returns:
        ``(model, state)``: the reduced model of width ``M`` (``κ = 1/√M``) and the state
        ``B = 0``, ``P_Q = P_K = ω² I``, neuron alignments ``ω z_j / √M`` (the ``z_j`` of
        :func:`normal_quadrature`, the same in both heads; a ``signed-sum`` head carries the
        ``M/2`` points twice, once per output sign).

    Raises:
        GradflowError: ``readout = "mean"`` (no limit on this clock), ``particles`` not a power
            of two ``≥ 8``.
    """
    if config.readout != "sqrt":
        raise GradflowError(
            f"readout = {config.readout!r}: the m → ∞ limit exists for κ = 1/√m (readout sqrt) only"
        )
    if int(particles) != particles or particles < 8 or particles & (particles - 1):
        raise GradflowError(f"particles = {particles!r}: need a power of two ≥ 8")
    wide = dataclasses.replace(config, m=int(particles), d_head=None)
    r = 2 * config.K
    if config.combine == "signed-sum":
        z = np.tile(normal_quadrature(r, particles // 2, config.seed), (2, 1))
    else:
        z = normal_quadrature(r, particles, config.seed)
    state = infinite_width_state(wide)
    N = jnp.asarray(np.stack([z, z]) * config.omega / np.sqrt(particles))
    return ReducedMixture.from_config(wide), dataclasses.replace(state, N=N)


@dataclasses.dataclass(frozen=True)
class LimitPath:
    """A recorded descent of the reduced dynamics (:func:`limit_descent`), ``T`` records.

    Attributes:
        ts: flow times, shape ``(T,)``.
        margins: ``y_s f_s`` of every sample, shape ``(T, n)``.
        max_score: ``max_{h,a,b} |B_h[a, b]|``, shape ``(T,)``.
        tangent: with the attention frozen, ``max |b|`` of the linear escape (module docstring;
            ``B = ω² b`` while ``|B| ≪ 1``), shape ``(T,)``; NaN with the attention trained.
        drive: ``σ_1(G)``, the largest singular value of the driving gradient ``G = ∂L/∂B``
            over the attention maps, shape ``(T,)``.
    """

    ts: np.ndarray
    margins: np.ndarray
    max_score: np.ndarray
    tangent: np.ndarray
    drive: np.ndarray


def limit_descent(
    model: ReducedMixture,
    state0: ReducedState,
    lr: float,
    steps: int,
    every: int,
    attention: bool = True,
) -> LimitPath:
    """Gradient descent of the reduced dynamics, recording margins, scores and the linear escape.

    Args:
        model: the reduced model (:func:`limit_init`'s, or any width's).
        state0: the initial state.
        lr: the step ``η`` (flow-time units).
        steps: descent steps, a multiple of ``every``.
        every: steps between records.
        attention: train the attention; ``False`` freezes it and carries the propagator
            ``Φ ← Φ (I - η M(G))`` of the linear escape.

    Returns:
        ``1 + steps // every`` records, the first at ``state0``.
    """
    out = _limit_path(model, state0, float(lr), int(steps), int(every), bool(attention))
    margins, score, tangent, drive = (np.asarray(a) for a in out)
    return LimitPath(
        ts=lr * every * np.arange(len(score)),
        margins=margins,
        max_score=score,
        tangent=tangent if not attention else np.full_like(tangent, np.nan),
        drive=drive,
    )


def _coupling(G: jax.Array) -> jax.Array:
    """``M = [[0, Gᵀ], [G, 0]]`` per attention map, shape ``(H, 4K, 4K)``."""
    zero = jnp.zeros_like(G)
    top = jnp.concatenate([zero, jnp.swapaxes(G, -1, -2)], axis=-1)
    return jnp.concatenate([top, jnp.concatenate([G, zero], axis=-1)], axis=-2)


@functools.partial(jax.jit, static_argnums=(2, 3, 4, 5))
def _limit_path(
    model: ReducedMixture,
    state0: ReducedState,
    lr: float,
    steps: int,
    every: int,
    attention: bool,
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    H, r = state0.B.shape[0], state0.B.shape[-1]
    phi0 = jnp.broadcast_to(jnp.eye(2 * r), (H, 2 * r, 2 * r))
    train = (attention, True)

    def step(_: int, carry: tuple[ReducedState, jax.Array]) -> tuple[ReducedState, jax.Array]:
        state, phi = carry
        G, gN = model.gradients(state)
        moved = model.update(state, G, gN, lr, train)
        return moved, phi if attention else phi - lr * phi @ _coupling(G)

    def record(state: ReducedState, phi: jax.Array) -> tuple[jax.Array, ...]:
        G, _ = model.gradients(state)
        Z = jnp.swapaxes(phi, -1, -2) @ phi
        return (
            model.y * model.logits(state.B, state.N),
            jnp.abs(state.B).max(),
            jnp.abs(Z[:, r:, :r]).max(),
            jnp.linalg.norm(G, ord=2, axis=(-2, -1)).max(),
        )

    def block(carry: tuple, _: None) -> tuple[tuple, tuple]:
        carry = jax.lax.fori_loop(0, every, step, carry)
        return carry, record(*carry)

    first = record(state0, phi0)
    _, path = jax.lax.scan(block, (state0, phi0), None, length=steps // every)
    return tuple(jnp.concatenate([a[None], b]) for a, b in zip(first, path))
