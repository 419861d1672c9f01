"""The numerical search for ``∇L = 0``: multi-start Levenberg–Marquardt (all starts at
once, in one compiled loop), each root kept only where a Newton step explains its gradient: the
step is short and leaves no residual (:func:`_near_a_zero`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._compiled.store import stored_for
from .._landscape.base import GradientField, Landscape
from .._landscape.scales import loss_scales
from .pieces import (
    gradient_tol,
)

__all__ = [
    "NEWTON_RESIDUAL",
    "NEWTON_STEP",
    "PADDED_JACOBIAN_ENTRIES",
    "ROOT_STARTS",
    "ROOT_STEPS",
    "ROOT_TOL",
    "numerical_solutions",
    "root_search",
]

ROOT_TOL = 1e-13
"""Relative and absolute tolerance of the Levenberg–Marquardt search for ``∇L = 0``."""
ROOT_STEPS = 256
"""Step budget of each Levenberg–Marquardt start."""
ROOT_STARTS = 256
"""The default number of starts of the search per two parameters
(:func:`gradflow.critical_sets`' ``starts``)."""
NEWTON_STEP = 1e-4
"""A root of the numerical search is kept only where its Newton step ``‖H⁺∇L‖`` is at most this
times the landscape's length scale (see :func:`_near_a_zero`)."""
NEWTON_RESIDUAL = 1e-12
"""A root of the numerical search is kept only where the part of ``∇L`` its Newton step leaves
unexplained, ``‖∇L − H H⁺∇L‖``, is at most this times the loss's gradient scale (see
:func:`_near_a_zero`)."""


def numerical_solutions(
    landscape: Landscape,
    box: np.ndarray,
    starts: int,
    seed: int,
    symmetries: tuple[tuple[int, ...], ...] = (),
) -> np.ndarray:
    """Critical points found by Levenberg–Marquardt (:func:`_batched_root`) on ``∇L = 0``, all
    starts at once, with their images under the loss's sign symmetries.

    The initial points are the centre of ``box`` (where a maximum or a symmetric saddle often
    sits, and where uniform starts rarely land close enough for Levenberg–Marquardt to reach
    it: the index-4 maximum at the origin of ``‖UUᵀ − diag(3, 1)‖²/4``) unless a kink passes
    through it (points on kinks are the kink search's, :mod:`.kink_points`), then
    ``starts · ⌈dim/2⌉`` points uniform in ``box`` (seeded): the starts grow with the
    dimension.  Each found point's image ``s ⊙ θ`` under a sign pattern ``s`` of
    ``symmetries`` (``L(s ⊙ θ) ≡ L(θ)``, :mod:`gradflow._symbolic.symmetries`) is a critical
    point too and is added where it lies in ``box``.  A coordinate whose bounds are
    equal is pinned there (a slice): the search moves only the other coordinates and still asks
    for the whole gradient to vanish, so it finds the critical points of ``L`` that lie on the
    slice.  Returns the solutions inside ``box`` with ``‖∇L‖₂ ≤``
    :func:`~gradflow._critical.pieces.gradient_tol` and a short Newton step (:func:`_near_a_zero`), shape
    ``(n, dim)``.  Each start's residual is ``∇L / ‖∇L(θ0)‖`` (the gradient scale ``g`` where
    ``∇L(θ0)`` vanishes), so the search does not depend on the loss's scale, nor on how many
    orders of magnitude ``‖∇L‖`` spans over the box.
    """
    if starts <= 0:
        return np.zeros((0, landscape.dim))
    rng = np.random.default_rng(seed)
    uniform = rng.uniform(
        box[:, 0], box[:, 1], size=(starts * -(-landscape.dim // 2), landscape.dim)
    )
    centre = box.mean(axis=1)[None]
    kink, slope = landscape.kink_values(centre)
    on_kink = np.any((kink[0] == 0) & np.any(slope[0] != 0, axis=1))
    y0 = uniform if on_kink else np.concatenate([centre, uniform])
    with np.errstate(all="ignore"):
        scale = np.linalg.norm(landscape.grad(y0), axis=1)
    usable = np.isfinite(scale) & (scale > 0)
    scale = np.where(usable, scale, loss_scales(landscape).gradient)
    ys = root_search(landscape, y0, scale, box[:, 0] < box[:, 1], box[:, 0])
    ys = np.concatenate([ys, *(ys * np.asarray(s, dtype=float) for s in symmetries)])
    with np.errstate(all="ignore"):
        ok = np.all(np.isfinite(ys), axis=1) & np.all((ys >= box[:, 0]) & (ys <= box[:, 1]), axis=1)
        ys = ys[ok]
        if not len(ys):
            return ys
        small = np.linalg.norm(landscape.grad(ys), axis=1) <= gradient_tol(landscape)
        return ys[small & _near_a_zero(landscape, ys)]


def _near_a_zero(landscape: Landscape, ys: np.ndarray) -> np.ndarray:
    """Whether a Newton step from each of ``ys`` (shape ``(n, dim)``) supports a zero of ``∇L``
    there, shape ``(n,)``: the step ``s = H⁺∇L`` is at most :data:`NEWTON_STEP` times the
    landscape's length scale, and what it leaves unexplained, ``r = ∇L − H s`` (the part of
    ``∇L`` in the kernel of ``H``), is at most :data:`NEWTON_RESIDUAL` times its gradient scale
    ``g``.

    A gradient small against ``g`` is not enough.  Where ``L`` spans many orders of magnitude
    over its ranges (``exp((x² + y² − 1)²)``: ``g`` is set by the far corners, where ``‖∇L‖`` is
    astronomically large) a point far from the circle would pass: the Newton step, the distance
    to the nearest zero of ``∇L`` to first order, unchanged by the loss's scale, is long there.
    And where ``‖∇L‖`` has a positive minimum along a flat direction of ``H`` the root finder
    stops at that minimum: ``∂L/∂x = (x − 1)² + 10⁻⁷`` of ``(x − 1)³/3 + 10⁻⁷x + y²/2`` never
    vanishes, and at ``x = 1`` the Hessian ``diag(0, 1)`` leaves the whole gradient ``(10⁻⁷, 0)``
    unexplained.  Near a true zero ``θ*`` the residual is of second order in ``θ − θ*`` on a
    set of critical points (``∇L = H(θ − θ*) + O(‖θ − θ*‖²)``, the first term in the range of
    ``H``) and at the level of rounding at a degenerate isolated zero, where the root finder
    drives ``∇L`` itself to rounding.  Both tests are ratios of quantities that scale alike
    with ``L``, so ``c·L`` keeps the same roots.  The pseudo-inverse (relative cut-off
    ``10⁻¹²``) keeps points of a non-isolated set.  Where the Hessian is not finite the step
    is not known and the point is kept.
    """
    scales = loss_scales(landscape)
    with np.errstate(all="ignore"):
        hessians = landscape.hessian(ys)
        finite = np.all(np.isfinite(hessians), axis=(1, 2))
        steps = np.full(len(ys), np.nan)
        residuals = np.full(len(ys), np.nan)
        if finite.any():
            pinv = np.linalg.pinv(hessians[finite], rcond=1e-12, hermitian=True)
            grads = landscape.grad(ys[finite])
            step = np.einsum("nij,nj->ni", pinv, grads)
            explained = np.einsum("nij,nj->ni", hessians[finite], step)
            steps[finite] = np.linalg.norm(step, axis=1)
            residuals[finite] = np.linalg.norm(grads - explained, axis=1)
    short = steps <= NEWTON_STEP * scales.length
    return ~finite | (short & (residuals <= NEWTON_RESIDUAL * scales.gradient))


def root_search(
    landscape: Landscape, y0: np.ndarray, scale: np.ndarray, free: np.ndarray, pinned: np.ndarray
) -> np.ndarray:
    """:func:`_batched_root` of ``landscape``'s field from the starts ``y0`` (shape
    ``(n, dim)``, ``n ≥ 1``) with one gradient ``scale`` each (shape ``(n,)``), the coordinates
    where ``free`` (shape ``(dim,)``) is false held at ``pinned``; returns the limits, shape
    ``(n, dim)``.

    The starts are padded, by repeating them, to the batch of the default search
    (:data:`ROOT_STARTS` per two parameters, and the centre), or that batch times the power of
    two that holds them: the search, the refinement of a map's endpoints and of a flow's end
    then share one compiled program per loss instead of compiling one per number of points.
    Each start's iteration is its own (the batch is a ``vmap``), and a repeated start stops
    when its original does, so the padding changes no limit and adds no iteration.  Where that
    batch's Jacobians would pass :data:`PADDED_JACOBIAN_ENTRIES` (above about 10 parameters,
    where the repeated starts' work costs more than a program; a full model's thousands of
    parameters asked for terabytes), the starts are padded to the power of two that holds them
    instead.  The inputs are passed as NumPy arrays: a ``jnp.asarray`` outside ``jit`` is a
    program of its own per shape.
    """
    n, dim = y0.shape
    size = ROOT_STARTS * -(-dim // 2) + 1
    while size < n:
        size *= 2
    if size * dim * dim > PADDED_JACOBIAN_ENTRIES:
        size = 1 << (n - 1).bit_length()
    rows = np.arange(size) % n
    root = _batched_root(landscape.field)
    ys = root(y0[rows], landscape.args, np.asarray(scale, np.float64)[rows], free, pinned)
    return np.array(ys)[:n]


PADDED_JACOBIAN_ENTRIES = 1 << 17
"""The most Jacobian entries (``batch · dim²``) a padded root search may hold: the default
search's batch of a landscape of up to 10 parameters (1,281 starts of 100 entries), where
refining one point in that batch took 17 ms warm against 2 ms alone.  The cost grows with the
batch: one point of a 20-parameter loss in its 2,561-start batch took 0.12 s against 3 ms
alone, of a 40-parameter loss in 5,121 starts 1.2 s against 5 ms; those run alone."""


LM_DAMPING = 1e-3
"""The first damping ``μ₀ = τ·max diag(JᵀJ)`` of each start, ``τ`` (Madsen, Nielsen & Tingleff)."""


@functools.cache
def _batched_root(field: GradientField) -> Callable[..., jax.Array]:
    """Jitted, vmapped Levenberg–Marquardt on the residual ``r(θ) = ∇L(θ, args) / scale`` from
    many starts (one scale per start), the coordinates where ``free`` is false held at
    ``pinned``; compiled once per field (hyperparameters and the slice are arguments, so a
    sweep compiles once), its executable kept between processes where the field's programs are
    (:func:`gradflow._compiled.store.stored`: a warm ``gradflow basins --loss …`` traced and
    lowered it for 0.19 s).

    The iteration is Nielsen's (K. Madsen, H. B. Nielsen, O. Tingleff, *Methods for non-linear
    least squares problems*, 2nd ed., 2004, Algorithm 3.16), with ``J = ∂r/∂θ = H/scale``:

    - the step ``h = −(JᵀJ + μI)⁻¹ Jᵀr``, zero along pinned coordinates (their columns of
      ``J`` are zeroed);
    - the gain ratio ``ϱ = (F(θ) − F(θ + h)) / (½ hᵀ(μh − Jᵀr))`` with ``F = ½‖r‖²``; a step
      with ``ϱ > 0`` is taken and ``μ ← μ·max(1/3, 1 − (2ϱ − 1)³)``, ``ν ← 2``; otherwise
      ``μ ← μν``, ``ν ← 2ν`` (a non-finite residual counts as ``ϱ ≤ 0``);
    - a start stops when ``‖h‖ ≤`` :data:`ROOT_TOL` ``· (‖θ‖ + ROOT_TOL)``, when ``Jᵀr`` or
      ``r`` vanishes, when its residual is not finite, or after :data:`ROOT_STEPS` steps.

    A purpose-built loop instead of a library's solver: the search is traced and compiled once
    per loss, and a general solver's abstractions cost several times more to trace and compile
    than its iterations cost to run (``tests/test_roots.py`` compares its roots with
    optimistix's ``LevenbergMarquardt``).
    """

    def residual(y: jax.Array, args: Any, scale: jax.Array, free: jax.Array, pinned: jax.Array):
        return field.grad(jnp.where(free, y, pinned), args) / scale

    def linearized(y: jax.Array, *a: Any) -> tuple[jax.Array, jax.Array]:
        """``(r, J)`` at ``y``, the pinned columns of ``J`` zero."""
        r = residual(y, *a)
        return r, jax.jacfwd(residual)(y, *a) * a[2]

    def one(
        y0: jax.Array, args: Any, scale: jax.Array, free: jax.Array, pinned: jax.Array
    ) -> jax.Array:
        a = (args, scale, free, pinned)
        r0, j0 = linearized(y0, *a)
        eye = jnp.eye(y0.shape[0], dtype=y0.dtype)
        tiny = jnp.finfo(y0.dtype).tiny
        mu0 = LM_DAMPING * jnp.maximum(jnp.max(jnp.diag(j0.T @ j0)), tiny)

        def running(state: tuple[jax.Array, ...]) -> jax.Array:
            return ~state[-1]

        def step(state: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
            y, r, jac, mu, nu, k, _ = state
            g = jac.T @ r
            h = -jnp.linalg.solve(jac.T @ jac + mu * eye, g)
            y_new = y + h
            r_new, jac_new = linearized(y_new, *a)
            gain = (r @ r - r_new @ r_new) / (h @ (mu * h - g))
            take = jnp.isfinite(gain) & (gain > 0) & jnp.all(jnp.isfinite(jac_new))
            shrink = jnp.maximum(1.0 / 3.0, 1.0 - (2.0 * gain - 1.0) ** 3)
            mu = jnp.where(take, mu * shrink, mu * nu)
            nu = jnp.where(take, 2.0, 2.0 * nu)
            y, r, jac = (
                jnp.where(take, new, old) for new, old in ((y_new, y), (r_new, r), (jac_new, jac))
            )
            small = jnp.linalg.norm(h) <= ROOT_TOL * (jnp.linalg.norm(y) + ROOT_TOL)
            solved = ~jnp.any(jac.T @ r) | ~jnp.any(r)
            stop = small | solved | ~jnp.isfinite(mu) | (k + 1 >= ROOT_STEPS)
            return y, r, jac, mu, nu, k + 1, stop

        start = (y0, r0, j0, mu0, jnp.asarray(2.0, y0.dtype), 0, ~jnp.all(jnp.isfinite(r0)))
        y = jax.lax.while_loop(running, step, start)[0]
        return jnp.where(free, y, pinned)

    return stored_for(
        jax.jit(jax.vmap(one, in_axes=(0, None, 0, None, None))), field, "root search"
    )
