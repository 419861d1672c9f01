"""The pieces of :func:`gradflow._flow.sliding.slide` that run on the device, and the geometry of
the surfaces a point is on: the sliding mode (which surfaces slide, the slopes held on the
others) and what the host learns of a step (:class:`Mode`, :class:`Info`), the surfaces grouped
by their normals, the minimum-norm subgradient (SciPy's BVLS), independent sliding normals, and
the compiled programs: the Tsit5 step on one smooth piece with its projection onto the sliding
surfaces, the probe of a point, the one-sided gradients, a crossing's check and the normals."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._landscape.base import Kinks
from .rk import TSIT5

BAND = 1e-9
"""A point is on kink ``k`` when ``|g_k| ≤ BAND · max(1, max_j |g_j|)``: where a located step
ends and what the sliding mode is solved over.  Far below any tolerance of the flow, far above
the rounding of a point projected onto the surfaces."""
GROUP_TOL = 1e-6
"""Surfaces whose unit normals (along :data:`SIGNATURES` random directions) differ by at most
this are one surface."""
SIGNATURES = 6
"""Random directions along which the normals of the surfaces a point is on are compared."""
RANK_TOL = 1e-8
"""Sliding normals are independent when pivoted QR keeps ``|R_jj| ≥ RANK_TOL·|R_00|``."""
NEWTON = 3
"""Gauss–Newton iterations of the projection onto the sliding surfaces."""


@dataclass(frozen=True)
class Mode:
    """What the field is near a point: the kinks whose slope the mode fixes (those on their
    surfaces: ``fixed``, their slopes in ``slopes``; every other kink takes the slope of the side
    a point lies on), the kinks on sliding surfaces (``slides``), the representatives of the
    sliding surfaces (their indices into ``g``, padded to a program size, with a mask), and each
    one's jump along its normal, ``d = n·Δ/|n|²`` (``n = ∇g`` of the representative, ``Δ`` the
    jump of the gradient across the surface): the projection's multiplier ``μ`` of a surface is
    ``-λ·d``, so ``λ = -μ/d`` says, step by step, whether it still slides."""

    fixed: np.ndarray
    slopes: np.ndarray
    reps: np.ndarray
    mask: np.ndarray
    slides: np.ndarray
    jumps: np.ndarray

    @property
    def sliding(self) -> int:
        return int(self.mask.sum())


@dataclass(frozen=True)
class Info:
    """What the host learns of a step (one transfer): its scaled error, the loss and the
    field's norm at its end, whether its end is finite and how far from the origin, whether
    it crossed a surface the mode does not hold (at some stage; at the end), whether a held
    surface was left on the side whose slope it does not hold, whether its end is on a
    surface, and on one the mode does not hold or holds without sliding (its mode must be
    solved again)."""

    err: float
    loss: float
    speed: float
    finite: bool
    size: float
    crossed: bool
    end_crossed: bool
    wrong: bool
    on: bool
    new: bool


def independent_rows(normals: np.ndarray) -> np.ndarray:
    """Indices of rows of ``normals`` that are linearly independent (pivoted QR, keeping
    ``|R_jj| ≥ RANK_TOL·|R_00|``), in their order."""
    if len(normals) <= 1:
        return np.arange(len(normals))
    import scipy.linalg

    _, r, order = scipy.linalg.qr(normals.T, mode="economic", pivoting=True)
    diag = np.abs(np.diag(r))
    rank = int(np.sum(diag >= RANK_TOL * diag[0])) if diag[0] > 0 else 0
    return np.sort(order[:rank])


def padded_mode(
    fixed: np.ndarray, slopes: np.ndarray, reps: np.ndarray, slides: np.ndarray, jumps: np.ndarray
) -> Mode:
    if not reps.size:
        return Mode(fixed, slopes, reps, np.zeros(0), slides, jumps)
    size = _size(reps.size)
    mask = np.zeros(size)
    mask[: reps.size] = 1.0
    padded = np.ones(size)
    padded[: reps.size] = jumps
    return Mode(fixed, slopes, np.resize(reps, size), mask, slides, padded)


def _size(n: int) -> int:
    """The program size for ``n`` sliding surfaces: 8, then powers of two (few programs)."""
    return max(8, 1 << (n - 1).bit_length())


def grouped(signs: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Surfaces with the same unit normal, either orientation: ``(members, orientation ±1 of
    each member's normal)``, the members as indices into ``signs`` (shape ``(n, SIGNATURES)``,
    the normals along fixed random directions), the group's first member its representative.
    Sorted by the first direction, neighbours within :data:`GROUP_TOL` in every direction are
    one surface (near-equal normals that the sort separates stay apart: two surfaces where
    there is one, which the rank test of the sliding normals then merges).  Surfaces whose
    normal vanishes cannot be slid on and are left out."""
    norms = np.linalg.norm(signs, axis=1)
    top = float(norms.max(initial=0.0))
    if top == 0:
        return []
    keep = np.flatnonzero(norms > 1e-12 * top)
    units = signs[keep] / norms[keep, None]
    orient = np.where(units @ _ORIENT[: units.shape[1]] >= 0, 1.0, -1.0)
    units = units * orient[:, None]
    order = np.argsort(units[:, 0], kind="stable")
    apart = np.max(np.abs(np.diff(units[order], axis=0)), axis=1, initial=0.0) > GROUP_TOL
    label = np.empty(len(order), int)
    label[order] = np.concatenate([[0], np.cumsum(apart)])
    members = [np.flatnonzero(label == c) for c in range(int(label.max(initial=-1)) + 1)]
    return [(keep[m], orient[m]) for m in sorted(members, key=lambda m: m[0])]


_ORIENT = np.array([1.0, 1 / 3, 1 / 7, 1 / 11, 1 / 13, 1 / 17, 1 / 19, 1 / 23])
"""Orients a unit normal: its sign is chosen so that its product with this vector is ≥ 0."""


def min_norm_weights(w: np.ndarray, jumps: np.ndarray) -> np.ndarray:
    """``argmin ‖w + J λ‖`` over ``λ ∈ [0, 1]^m`` (``J`` of shape ``(dim, m)``), by SciPy's
    bounded-variable least squares (Stark & Parker 1995), exact for an active-set problem this
    small, on ``J = QR``: ``‖w + Jλ‖² = ‖Qᵀw + Rλ‖² + ‖w - QQᵀw‖²``, so the iterations work on
    the ``m × m`` factor instead of the ``dim × m`` jumps.  A surface whose jump vanishes (the
    gradient is continuous across it) keeps ``λ = 0``."""
    from scipy.optimize import lsq_linear

    lam = np.zeros(jumps.shape[1])
    norms = np.linalg.norm(jumps, axis=0)
    live = np.flatnonzero(norms > 1e-10 * max(1.0, float(np.linalg.norm(w))))
    if not live.size:
        return lam
    q, r = np.linalg.qr(jumps[:, live])
    fit = lsq_linear(r, -(q.T @ w), bounds=(0.0, 1.0), method="bvls", tol=1e-14)
    lam[live] = np.clip(fit.x, 0.0, 1.0)
    return lam


def _normals(kinks: Kinks, y: jax.Array, reps: jax.Array, args: Any) -> jax.Array:
    """``∇g`` of the surfaces ``reps``, shape ``(len(reps), dim)``."""
    g, pull = jax.vjp(lambda x: kinks.surfaces(x, args), y)
    rows = jax.nn.one_hot(reps, g.shape[0], dtype=y.dtype)
    return jax.vmap(lambda r: pull(r)[0])(rows)


@dataclass(frozen=True, eq=False)
class Programs:
    """What :func:`slide` evaluates, for one :class:`Kinks` at one pair of tolerances.  Four
    compiled programs (built once per kinks, see the builders below): the step, the gradients
    at rows of slopes, the surfaces with the loss and the surfaces' directions, the surfaces'
    normals.  The small linear algebra of the projections runs on the host."""

    kinks: Kinks
    rtol: float
    atol: float

    def probe(self, y: np.ndarray, args: Any) -> tuple[np.ndarray, float]:
        """``(g(y), L(y))``."""
        g, loss, _ = _probe(self.kinks)(y, args)
        return np.asarray(g), float(loss)

    def grads(self, rows: np.ndarray, y: np.ndarray, args: Any) -> np.ndarray:
        """The gradient at each row of slopes ``rows`` (shape ``(n, K)``), shape ``(n, dim)``;
        the rows are padded to 8 or a multiple of 64 (few programs: a program of the full model
        takes seconds to compile, and eight gradients in one vectorized call cost about three)."""
        n = len(rows)
        size = 8 if n <= 8 else 64 * -(-n // 64)
        padded = np.concatenate([rows, np.repeat(rows[:1], size - n, axis=0)])
        return np.asarray(_grads(self.kinks)(padded, y, args))[:n]

    def signatures(self, y: np.ndarray, args: Any) -> np.ndarray:
        """Each surface's normal ``∇g_k`` along :data:`SIGNATURES` fixed random directions,
        shape ``(K, SIGNATURES)``."""
        return np.asarray(_probe(self.kinks)(y, args)[2])

    def normals(self, y: np.ndarray, reps: np.ndarray, args: Any) -> np.ndarray:
        """``∇g`` of the surfaces ``reps`` (padded to a program size), ``(len(reps), dim)``."""
        size = _size(len(reps))
        return np.asarray(_normals_program(self.kinks)(y, np.resize(reps, size), args))[: len(reps)]

    def field(self, mode: Mode, g: np.ndarray, y: Any, args: Any) -> np.ndarray:
        """The mode's field ``-P ∇_θ L_s`` at ``y``, where the surfaces are ``g``: each kink's
        slope the mode's where it holds one, else its side's."""
        side = np.where(np.asarray(g) > 0, self.kinks.hi, self.kinks.lo)
        slopes = np.where(mode.fixed, mode.slopes, side).astype(np.float64)
        w = self.grads(slopes[None], y, args)[0]
        if not mode.sliding:
            return -w
        n = self.normals(y, mode.reps[: mode.sliding], args)
        return -(w - n.T @ np.linalg.solve(n @ n.T, n @ w))

    def step(self, mode: Mode, y: Any, k1: Any, h: float, g0: Any, args: Any) -> tuple[Any, ...]:
        """One Tsit5 step of the mode's field from ``y`` (``k1`` the field there, ``g0`` the
        surfaces), each kink's slope held at the mode's or its side's at ``y``: ``(y1, f(y1),
        g(y1), crossed, μ, wrong, info)`` on the device, ``y1`` projected onto the sliding
        surfaces, ``crossed`` the kinks the mode does not hold that some point of the step
        reached the other side of, ``μ`` the projection's multipliers at ``y1``, ``wrong`` the
        kinks the mode holds without sliding that some point of the step left on the side
        whose slope it does not hold, ``info`` an :class:`Info`'s values."""
        reps, mask = (mode.reps, mode.mask) if mode.sliding else (np.zeros(8, int), np.zeros(8))
        tolerances = np.array([self.rtol, self.atol])
        return _step_program(self.kinks)(
            mode.fixed,
            mode.slopes,
            mode.slides,
            reps,
            mask,
            y,
            k1,
            np.float64(h),
            g0,
            args,
            tolerances,
        )

    def crossing(
        self, near: np.ndarray, far: np.ndarray, y: Any, args: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        """At ``y``, the jump of the gradient from the slopes ``near`` to ``far`` (shape
        ``(dim,)``) and the rate of change of every surface along the field of ``far``
        (shape ``(K,)``)."""
        jump, rates = _crossing(self.kinks)(near, far, y, args)
        return np.asarray(jump), np.asarray(rates)

    def project(self, mode: Mode, y: np.ndarray, args: Any) -> np.ndarray:
        """``y`` moved onto the mode's sliding surfaces (Gauss–Newton along their normals)."""
        reps = mode.reps[: mode.sliding]
        for _ in range(NEWTON):
            g = self.probe(y, args)[0][reps]
            n = self.normals(y, reps, args)
            y = y - n.T @ np.linalg.solve(n @ n.T, g)
        return y


@functools.cache
def _probe(kinks: Kinks) -> Callable[..., tuple[jax.Array, ...]]:
    """``(y, args) → (g, L, signatures)``: the surfaces, the loss, and each surface's normal
    along :data:`SIGNATURES` fixed random directions (one program: each program of a large
    loss takes seconds to compile)."""

    def probe(y: jax.Array, args: Any) -> tuple[jax.Array, ...]:
        rng = np.random.default_rng(20240)
        dirs = jnp.asarray(rng.standard_normal((SIGNATURES, y.shape[0])), y.dtype)
        g, along = jax.vmap(lambda v: jax.jvp(lambda x: kinks.surfaces(x, args), (y,), (v,)))(dirs)
        return g[0], kinks.loss_at(y, kinks.slopes(g[0]), args), along.T

    return jax.jit(probe)


@functools.cache
def _grads(kinks: Kinks) -> Callable[..., jax.Array]:
    return jax.jit(jax.vmap(lambda s, y, a: kinks.grad_at(y, s, a), in_axes=(0, None, None)))


@functools.cache
def _crossing(kinks: Kinks) -> Callable[..., tuple[jax.Array, jax.Array]]:
    """``(near, far, y, args) → (∇L_far - ∇L_near, ∂g/∂θ · (-∇L_far))`` at ``y``."""

    def crossing(near, far, y, args):
        w_near, w_far = kinks.grad_at(y, near, args), kinks.grad_at(y, far, args)
        rates = jax.jvp(lambda x: kinks.surfaces(x, args), (y,), (-w_far,))[1]
        return w_far - w_near, rates

    return jax.jit(crossing)


@functools.cache
def _normals_program(kinks: Kinks) -> Callable[..., jax.Array]:
    return jax.jit(functools.partial(_normals, kinks))


@functools.cache
def _step_program(kinks: Kinks) -> Callable[..., tuple[jax.Array, ...]]:
    """One Tsit5 step (:meth:`Programs.step`): the stages in a loop, so that the field is
    compiled once, and the projection on the sliding surfaces behind a ``cond`` (a step off
    them does not pay for it).  The step size and the tolerances ``(rtol, atol)`` are
    arguments, each a float64 array, so that one program serves every step and every pair of
    tolerances (a step of the full transformer takes about a second to compile)."""
    tab = TSIT5
    stages = len(tab.a) + 1
    a = np.zeros((stages, stages))
    for i, row in enumerate(tab.a):
        a[i + 1, : len(row)] = row
    coefficients = jnp.asarray(a)
    b_error = jnp.asarray(tab.b_error)

    def step(fixed, held, slides, reps, mask, y, k1, h, g0, args, tolerances):
        rtol, atol = tolerances[0], tolerances[1]
        lo, hi = jnp.asarray(kinks.lo, y.dtype), jnp.asarray(kinks.hi, y.dtype)
        s = jnp.where(fixed, held, kinks.slopes(g0))
        sliding = jnp.any(mask > 0)

        def normals(x: jax.Array) -> jax.Array:
            return _normals(kinks, x, reps, args) * mask[:, None]

        def solve(n: jax.Array, b: jax.Array) -> jax.Array:
            return jnp.linalg.solve(n @ n.T + jnp.diag(1.0 - mask), b)

        def projected(x: jax.Array) -> tuple[jax.Array, jax.Array]:
            """``(-P ∇L_s, μ)`` at ``x``: the sliding field and the multipliers."""
            w, n = kinks.grad_at(x, s, args), normals(x)
            mu = solve(n, n @ w)
            return -(w - n.T @ mu), mu

        def field(x: jax.Array) -> jax.Array:
            return jax.lax.cond(
                sliding, lambda x: projected(x)[0], lambda x: -kinks.grad_at(x, s, args), x
            )

        def project(x: jax.Array) -> jax.Array:
            """Chord Newton onto the sliding surfaces (the normals of the step's end)."""
            n = normals(x)
            for _ in range(NEWTON):
                x = x - n.T @ solve(n, kinks.surfaces(x, args)[reps] * mask)
            return x

        def stage(i: int, carry: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
            ks, lowest, highest = carry
            x = y + h * (coefficients[i] @ ks)
            g = kinks.surfaces(x, args)
            return ks.at[i].set(field(x)), jnp.minimum(lowest, g), jnp.maximum(highest, g)

        ks = jnp.zeros((stages, y.shape[0]), y.dtype).at[0].set(k1)
        ks, lowest, highest = jax.lax.fori_loop(1, stages, stage, (ks, g0, g0))
        end = y + h * (coefficients[-1] @ ks)
        err = h * (b_error @ ks)
        scale = atol + rtol * jnp.maximum(jnp.abs(y), jnp.abs(end))
        norm = jnp.sqrt(jnp.mean((err / scale) ** 2))
        y1 = jax.lax.cond(sliding, project, lambda x: x, end)
        f1, mu = jax.lax.cond(sliding, projected, lambda x: (ks[-1], jnp.zeros_like(mask)), y1)
        g1 = kinks.surfaces(y1, args)
        band0 = BAND * jnp.maximum(1.0, jnp.max(jnp.abs(g0)))
        crossed = ~fixed & (((g0 > 0) & (lowest < 0)) | ((g0 < 0) & (highest > 0)))
        wrong = (fixed & ~slides) & (
            ((s == hi) & (lowest < -band0)) | ((s == lo) & (highest > band0))
        )
        on = jnp.abs(g1) <= BAND * jnp.maximum(1.0, jnp.max(jnp.abs(g1)))
        info = jnp.stack(
            [
                norm,
                kinks.loss_at(y1, kinks.slopes(g1), args),
                jnp.linalg.norm(f1),
                jnp.all(jnp.isfinite(y1)),
                jnp.linalg.norm(y1),
                jnp.any(crossed),
                jnp.any(crossed & (jnp.sign(g1) != jnp.sign(g0))),
                jnp.any(wrong),
                jnp.any(on),
                jnp.any(on & ~slides),
            ]
        )
        return y1, f1, g1, crossed, mu, wrong, info

    return jax.jit(step)
