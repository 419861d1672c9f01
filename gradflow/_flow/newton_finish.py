"""The endpoint of a flow that has stalled beside a nondegenerate minimum, by Newton's method.

An explicit Runge–Kutta pair whose steps have grown to the edge of its stability region at a
minimum ``x*`` (``h·λ_max ≈ 3.5`` for Tsit5) keeps the iterate about ``rtol·|x*|`` away from
``x*``: the error estimate, not the flow, limits it there, and ``‖∇L‖ ≈ λ·rtol·|x*|`` stays above
a tighter steady-state test until the step budget runs out (Hairer & Wanner, *Solving ODEs II*,
§IV.2).  Where the member is that close to a nondegenerate minimum its endpoint need not be
integrated: it is the minimum, which Newton's method finds in a few iterations.

:func:`newton_finish` accepts the Newton limit ``x*`` of a member at ``x0`` as the member's
endpoint when (all in the units of the integrated field)

1. three Newton iterations ``x ← x − H(x)⁻¹∇L(x)`` from ``x0`` converge quadratically (the
   last step a millionth of the first, or at rounding) to a point that meets the stage's
   steady-state test;
2. ``H(x*)`` is positive definite, with smallest eigenvalue ``μ > 0``;
3. ``L`` is ``μ/2``-strongly convex on the ball ``B(x*, ρ)``, ``ρ² = 8‖∇L(x0)‖·‖x0 − x*‖/μ``:
   checked by the Hessian's smallest eigenvalue being at least ``μ/2`` at ``x0`` and at the
   ``2·dim`` points ``x* ± ρ·v`` (``v`` the eigenvectors of ``H(x*)``), a numerical test of
   a ball that is tiny (``ρ ≤ 2‖x0 − x*‖·√κ``), not a proof.

Then the flow from ``x0`` ends at ``x*``, in any metric: by convexity along the segment,
``L(x0) − L(x*) ≤ ∇L(x0)·(x0 − x*) ≤ ‖∇L(x0)‖·‖x0 − x*‖``, while on the ball's boundary
``L ≥ L(x*) + μρ²/4 = L(x*) + 2‖∇L(x0)‖·‖x0 − x*‖``; strong convexity also gives
``‖x0 − x*‖ ≤ 2‖∇L(x0)‖/μ``, so ``ρ ≥ 2‖x0 − x*‖`` and ``x0`` lies inside.  The loss never
increases along the flow, so the trajectory stays in the ball, whose only critical point is
``x*``, and converges to it.  A degenerate minimum (a curve or a surface of minima, a quartic
well) fails test 2 and is integrated on.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from .._compiled.store import stored_for
from .._landscape.base import GradientField
from .._outcome import Outcome
from .integrate import status_code
from .options import FlowOptions

__all__ = ["NEWTON_ITERATIONS", "newton_finish"]

NEWTON_ITERATIONS = 3
"""Newton iterations from a stalled member: from ``‖x0 − x*‖ ≈ 1e-6`` quadratic convergence
reaches rounding in two."""

CONTRACTION = 1e-6
"""The last Newton step must be this much shorter than the first (or at rounding): Newton's
method converges quadratically to a nondegenerate critical point, linearly (by ``(k−1)/k`` a
step at a zero of order ``k``) to a degenerate one, where a small gradient is no endpoint."""

CONVERGED_ULPS = 64
"""A Newton step of at most this many units of rounding of ``1 + ‖x‖`` has converged."""


@functools.cache
def newton_finish(field: GradientField, options: FlowOptions) -> Callable[..., Any]:
    """The test above, jitted and vectorized, for members of a batched flow of ``field`` under
    the stage ``options`` (its solver and budgets; the steady-state tolerance is an argument).

    Returns:
        ``finish(y, args, level, gtol) -> (ok, x)``: for members ``y`` of shape ``(B, dim)``,
        whether each one's endpoint is its Newton limit (``ok``, shape ``(B,)``) and the limits
        ``x`` (shape ``(B, dim)``, meaningful where ``ok``).  ``args`` and ``level`` are the
        field's arguments and the decision level of the batched integration, ``gtol`` the
        stage's steady-state tolerance.  Its executable is kept between processes where the
        field's programs are (:func:`gradflow._compiled.store.stored`: a warm
        ``gradflow basins --loss …`` traced and lowered it for 0.2 s).
    """
    grad = jax.grad(field.loss)
    hessian = jax.hessian(field.loss)

    def smallest(x: jax.Array, args: Any) -> jax.Array:
        return jnp.linalg.eigvalsh(hessian(x, args))[0]

    def one(x0: jax.Array, args: Any, level: jax.Array, gtol: jax.Array):
        x, steps = x0, []
        for _ in range(NEWTON_ITERATIONS):
            step = jnp.linalg.solve(hessian(x, args), grad(x, args))
            steps.append(jnp.linalg.norm(step))
            x = x - step
        floor = CONVERGED_ULPS * jnp.finfo(x.dtype).eps * (1 + jnp.linalg.norm(x))
        quadratic = steps[-1] <= jnp.maximum(CONTRACTION * steps[0], floor)
        mu_all, vectors = jnp.linalg.eigh(hessian(x, args))
        mu = mu_all[0]
        rho = jnp.sqrt(8.0 * jnp.linalg.norm(grad(x0, args)) * jnp.linalg.norm(x0 - x) / mu)
        probes = jnp.concatenate([x + rho * vectors.T, x - rho * vectors.T, x0[None]])
        convex = jnp.min(jax.vmap(smallest, in_axes=(0, None))(probes, args)) >= 0.5 * mu
        code = status_code(field, options, x, args, level, gtol=gtol)
        finite = jnp.all(jnp.isfinite(x))
        steady = code == int(Outcome.CONVERGED)
        return finite & quadratic & (mu > 0) & convex & steady, x

    jitted = jax.jit(jax.vmap(one, in_axes=(0, None, None, None)))
    description = f"Newton finish {options!r}"
    return stored_for(jitted, field, description, describable=options.by_name)
