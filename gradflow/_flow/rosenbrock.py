"""Batches of stiff flow trajectories with a Rosenbrock method: linearly implicit steps, one
LU factorization of ``I/(hγ) − ∂F`` per step and member, no Newton iteration.

A gradient flow is stiff where its Hessian's eigenvalues spread over many orders of magnitude:
beside a line of minima, or near the canonical model's global-minimum curve, where an explicit
pair is held to steps of ``2/λ_max`` while the flow creeps along the slow direction.  An
L-stable method takes steps as long as the slow direction allows.  A Rosenbrock method gets
there with linear solves alone, and its program is a few stages of the field, its Jacobian and
a batched LU: tracing and compiling it costs a fraction of diffrax's ``Kvaerno5`` (an ESDIRK
whose stages each run a Newton iteration with a root finder and a linear solver), which is
the reference its tests compare with.

:data:`RODAS4` is Hairer and Wanner's RODAS (order 4, embedded order 3, L-stable and stiffly
accurate); :class:`BatchedRosenbrock` steps it in the members' loop of
:class:`~gradflow._flow.rk.BatchedIntegrator`, with the same step-size control as the explicit
pairs, so a batch round, a single recorded trajectory and a stop rule work as they do there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax.scipy.linalg import lu_factor, lu_solve

from .rk import BatchedIntegrator, BatchField, BatchJacobian

__all__ = ["RODAS4", "BatchedRosenbrock", "RosenbrockTableau"]


@dataclass(frozen=True)
class RosenbrockTableau:
    """A Rosenbrock method for an autonomous system ``y' = F(y)``, in Hairer and Wanner's
    transformed form (*Solving ODEs II*, §IV.7, (7.25)): with ``W = I/(hγ) − ∂F(y₀)``, stage
    ``i`` solves

        ``W kᵢ = F(y₀ + Σⱼ aᵢⱼ kⱼ) + Σⱼ (cᵢⱼ/h) kⱼ``  (sums over ``j < i``),

    and ``y₁ = y₀ + Σᵢ mᵢ kᵢ``, with local error estimate ``Σᵢ eᵢ kᵢ``.

    Attributes:
        name: the method's usual name.
        gamma: the diagonal ``γ``.
        a: rows 2…s of ``aᵢⱼ`` (stage arguments).
        c: rows 2…s of ``cᵢⱼ``.
        m: weights of the solution.
        e: weights of the error estimate.
        order: the order of the error estimate's leading term (``err = O(h^order)``): the
            step factor is ``err^(-1/order)``.
    """

    name: str
    gamma: float
    a: tuple[tuple[float, ...], ...]
    c: tuple[tuple[float, ...], ...]
    m: tuple[float, ...]
    e: tuple[float, ...]
    order: int


_RODAS4_A5 = (1.221224509226641, 6.019134481288629, 12.53708332932087, -0.6878860361058950)
RODAS4 = RosenbrockTableau(
    name="Rodas4",
    gamma=0.25,
    a=(
        (1.544,),
        (0.9466785280815826, 0.2557011698983284),
        (3.314825187068521, 2.896124015972201, 0.9986419139977817),
        _RODAS4_A5,
        (*_RODAS4_A5, 1.0),
    ),
    c=(
        (-5.6688,),
        (-2.430093356833875, -0.2063599157091915),
        (-0.1073529058151375, -9.594562251023355, -20.47028614809616),
        (7.496443313967647, -10.24680431464352, -33.99990352819905, 11.70890893206160),
        (
            8.083246795921522,
            -7.981132988064893,
            -31.52159432874371,
            16.31930543123136,
            -6.058818238834054,
        ),
    ),
    m=(*_RODAS4_A5, 1.0, 1.0),
    e=(0.0, 0.0, 0.0, 0.0, 0.0, 1.0),
    order=4,
)
"""RODAS of order 4(3): E. Hairer, G. Wanner, *Solving Ordinary Differential Equations II*,
2nd ed., Springer 1996, §VI.4, Table 4.2 (the coefficients of Hairer's ``rodas.f``).  Stiffly
accurate: the last two stage arguments are the solutions of order 3 and 4, so the error
estimate is the last stage ``k₆`` and ``y₁ = y₀ + Σⱼ a₆ⱼkⱼ + k₆``."""


@dataclass(frozen=True)
class BatchedRosenbrock(BatchedIntegrator):
    """An adaptive Rosenbrock integrator of a batch of trajectories (stiff flows); its
    ``tableau`` is the method (the other fields: :class:`~gradflow._flow.rk.BatchedIntegrator`,
    whose step-size control it shares with the explicit pairs).

    Each step evaluates the field's Jacobian at every member (forward mode, ``dim`` products),
    LU-factors ``I/(hγ) − ∂F`` and solves with it once per stage.  A step whose matrix is
    singular (``1/(hγ)`` an eigenvalue of ``∂F``, beside a saddle) has a non-finite error and
    is rejected like any other.
    """

    tableau: RosenbrockTableau

    def attempt(
        self, f: BatchField, jacobian: BatchJacobian, y: jax.Array, h: jax.Array, f0: jax.Array
    ) -> tuple[jax.Array, jax.Array, jax.Array]:
        """The method's step (:meth:`~gradflow._flow.rk.BatchedIntegrator.attempt`)."""
        tab = self.tableau
        eye = jnp.eye(y.shape[0], dtype=y.dtype)
        solve = _solver(eye / (tab.gamma * h[0, :, None, None]) - jacobian(y))
        ks = [solve(f0)]
        for a_row, c_row in zip(tab.a, tab.c):
            stage = f(y + sum(a * k for a, k in zip(a_row, ks)))
            ks.append(solve(stage + sum(c * k for c, k in zip(c_row, ks)) / h))
        y1 = y + sum(m * k for m, k in zip(tab.m, ks))
        err = sum(e * k for e, k in zip(tab.e, ks) if e != 0.0)
        return y1, err, f(y1)


def _solver(w: jax.Array) -> Callable[[jax.Array], jax.Array]:
    """Solving ``wᵢ kᵢ = rᵢ`` for the members' matrices ``w`` (shape ``(B, dim, dim)``) and
    right-hand sides laid out ``(dim, B)``: by LU with partial pivoting, factored once; in
    two dimensions by Cramer's rule, which is forward stable there (N. J. Higham, *Accuracy
    and Stability of Numerical Algorithms*, 2nd ed., SIAM 2002, §1.10.1) and commutes
    exactly with the plane's signed permutations, as a pivoted elimination does not: a step
    from a point on the invariant line of a symmetric loss (``b = −a`` of a loss symmetric
    under ``(a, b) → (−b, −a)``, a saddle's stable manifold) stays on it bit for bit, where
    rounding off the line would grow along the saddle's unstable direction and end at a
    minimum."""
    if w.shape[-1] == 2:
        a, b, c, d = w[:, 0, 0], w[:, 0, 1], w[:, 1, 0], w[:, 1, 1]
        det = a * d - b * c
        return lambda r: jnp.stack([(d * r[0] - b * r[1]) / det, (a * r[1] - c * r[0]) / det])
    factors = lu_factor(w)

    def one(lu: jax.Array, piv: jax.Array, r: jax.Array) -> jax.Array:
        return lu_solve((lu, piv), r)

    return lambda r: jax.vmap(one, in_axes=(0, 0, 1), out_axes=1)(*factors, r)
