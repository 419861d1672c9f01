"""The limiting NTK of the shallow encoder under ``τ0 = d_m^{-1}``, derived in SymPy.

The reduced model of :mod:`gradflow.systems.shallow_ntk.encoder` in the kernel regime: as the width
``d_m`` grows with ``τ0 = d_m^{-1}``, the scores ``τ0 · X W_Qᵀ W_K Xᵀ`` are averages of ``d_m``
independent zero-mean products, so they vanish like ``d_m^{-1/2}`` and the attention tends to
uniform: every token's attention output becomes ``W_V x̄`` with ``x̄ = (1/d_s) Σ_tokens x`` the
mean token.  The network becomes a two-layer ReLU network of the mean tokens (with
``W_H``: a three-layer one with a linear first layer), whose tangent kernel converges by the law of
large numbers to a deterministic kernel built from the two arc-cosine kernels of a standard
Gaussian ``w`` in the plane of two vectors ``u, v`` at angle ``θ``:

    κ0(θ)    = P(wᵀu > 0, wᵀv > 0)              = (π - θ) / (2π),
    κ1(u, v) = E[ReLU(wᵀu) ReLU(wᵀv)]           = ‖u‖‖v‖ (sin θ + (π - θ) cos θ) / (2π).

Both are derived here by integrating the Gaussian in polar coordinates over the wedge where both
half-planes overlap (:func:`arc_cosine_kernels`).  The score blocks ``Q, K`` contribute
``O(d_m^{-1})`` and vanish in the limit.  Under NTK initialization (no hidden layer):

    K∞(X, X') = κ1(x̄, x̄') + x̄ᵀx̄' κ0(θ)        (Wu et al. 2023, NTK analysis; ``docs/systems/shallow-ntk.md``),

the first term from ``w_O``, the second from ``W_V``.  For LeCun and He initializations the same
derivation gives a kernel growing like ``d_m`` (:func:`limit_blocks` keeps every constant).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import sympy as sp

from gradflow import lambdify_jax

from .encoder import check_size, init_scheme

__all__ = [
    "CONSTANTS",
    "LIMIT_SYMBOLS",
    "arc_cosine_kernels",
    "limit_blocks",
    "limit_kernel",
    "mean_tokens",
]

theta = sp.Symbol("theta", nonnegative=True)
"""Angle ``θ ∈ [0, π]`` between two mean tokens."""

n_i, n_j = sp.symbols("n_i n_j", positive=True)
"""Norms ``‖x̄_i‖``, ``‖x̄_j‖`` of two mean tokens."""

rho = sp.Symbol("rho", real=True)
"""Cosine ``cos θ = x̄_iᵀx̄_j / (‖x̄_i‖‖x̄_j‖) ∈ [-1, 1]``."""

d_m, var_in, var_out, tau1, tau_H = sp.symbols("d_m var_in var_out tau1 tau_H", positive=True)
"""Width, variances of ``W_{Q,K,V}`` and of ``w_O, W_H``, and the multipliers ``τ1``, ``τ_H``."""

LIMIT_SYMBOLS = (n_i, n_j, rho)
"""The per-pair arguments of the lambdified kernel."""

CONSTANTS = (d_m, var_in, var_out, tau1, tau_H)
"""The network constants the kernel depends on (under NTK init they cancel)."""


@functools.cache
def arc_cosine_kernels() -> tuple[sp.Expr, sp.Expr]:
    """``(κ0(θ), κ1(θ))`` for unit vectors at angle ``θ``, by symbolic Gaussian integration.

    Write ``w = r (cos φ, sin φ)`` in the plane of ``u = (1, 0)`` and ``v = (cos θ, sin θ)``: the
    standard Gaussian density is ``e^{-r²/2} r dr dφ / (2π)``, ``wᵀu = r cos φ`` and
    ``wᵀv = r cos(φ - θ)``.  For ``θ ∈ [0, π]`` both are positive exactly on the arc
    ``θ - π/2 < φ < π/2`` of length ``π - θ``.  Hence

        κ0 = ∫_0^∞ r e^{-r²/2} dr / (2π) · ∫_arc dφ,
        κ1 = ∫_0^∞ r³ e^{-r²/2} dr / (2π) · ∫_arc cos φ cos(φ - θ) dφ.

    Source: Cho & Saul (2009), arc-cosine kernels of order 0 and 1 (normalized by 1/(2π)).

    Returns:
        SymPy expressions in :data:`theta`: ``(π - θ)/(2π)`` and
        ``(sin θ + (π - θ) cos θ)/(2π)``.
    """
    r, phi = sp.symbols("r phi", positive=True)
    radial = [
        sp.integrate(r ** (k + 1) * sp.exp(-(r**2) / 2), (r, 0, sp.oo)) / (2 * sp.pi)
        for k in (0, 2)
    ]
    arc = (phi, theta - sp.pi / 2, sp.pi / 2)
    kappa0 = sp.simplify(radial[0] * sp.integrate(1, arc))
    kappa1 = sp.simplify(radial[1] * sp.integrate(sp.cos(phi) * sp.cos(phi - theta), arc))
    return kappa0, kappa1


def _relu_moments(scale: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
    """``E[ReLU(g_i) ReLU(g_j)]`` and ``P(g_i > 0, g_j > 0)`` for a centred Gaussian pair with
    covariance ``scale · [[n_i², n_i n_j ρ], [n_i n_j ρ, n_j²]]``, in the symbols ``n_i, n_j, ρ``.

    ``g = √scale · wᵀ(x̄_i, x̄_j)`` with ``w`` standard Gaussian, so the arc-cosine kernels apply
    with ``‖u‖‖v‖ = scale · n_i n_j`` and ``θ = arccos ρ``.
    """
    kappa0, kappa1 = arc_cosine_kernels()
    angle = {theta: sp.acos(rho)}
    return scale * n_i * n_j * kappa1.subs(angle), kappa0.subs(angle)


@functools.cache
def limit_blocks(hidden: bool = False) -> dict[str, sp.Expr]:
    """The limiting kernel per trained block, as SymPy expressions.

    The tangent kernel of ``f = τ1 w_Oᵀ ReLU(g)`` is the sum over blocks of ``Σ_r ∂f/∂θ_r ·
    ∂f'/∂θ_r``; by the law of large numbers over the ``d_m`` units (with the attention uniform):

    - ``O``: ``τ1² Σ_r ReLU(g_r) ReLU(g_r') → τ1² d_m E[ReLU(g) ReLU(g')]``;
    - a block ``B`` below the ReLU: ``τ1² Σ_r w_{O,r}² 1[g_r > 0] 1[g_r' > 0] Θ_B
      → τ1² d_m var_out P(g > 0, g' > 0) Θ_B``, with ``Θ_B`` the tangent kernel of one unit
      ``g_r`` with respect to ``B``;
    - ``Q``, ``K``: 0 (their gradients carry ``τ0 = d_m^{-1}`` and vanish like ``d_m^{-1/2}``).

    Without ``W_H``: ``g = W_V x̄`` has covariance ``var_in · x̄ᵀx̄'`` and ``Θ_V = x̄ᵀx̄'``.
    With ``W_H``: ``z = W_V x̄`` (covariance ``var_in · x̄ᵀx̄'``), ``g = τ_H W_H z`` has covariance
    ``ρ_H var_in x̄ᵀx̄'`` with ``ρ_H = τ_H² d_m var_out``, ``Θ_H = τ_H² d_m var_in x̄ᵀx̄'`` and
    ``Θ_V = ρ_H x̄ᵀx̄'``.

    Returns:
        ``{"Q": 0, "K": 0, "V": …, "O": …}`` (and ``"H"`` with the hidden layer), expressions in
        :data:`LIMIT_SYMBOLS` and :data:`CONSTANTS`.
    """
    dot = n_i * n_j * rho
    gain = tau_H**2 * d_m * var_out if hidden else sp.Integer(1)
    relu_relu, both_positive = _relu_moments(gain * var_in)
    below = tau1**2 * d_m * var_out * both_positive
    blocks = {"Q": sp.Integer(0), "K": sp.Integer(0), "V": below * gain * dot}
    if hidden:
        blocks["H"] = below * tau_H**2 * d_m * var_in * dot
    blocks["O"] = tau1**2 * d_m * relu_relu
    return {name: sp.simplify(expr) for name, expr in blocks.items()}


@functools.cache
def _compiled_blocks(hidden: bool) -> dict[str, Callable[..., jax.Array]]:
    return {
        name: lambdify_jax((*LIMIT_SYMBOLS, *CONSTANTS), expr)
        for name, expr in limit_blocks(hidden).items()
    }


def mean_tokens(X: jax.Array) -> jax.Array:
    """``x̄_n = (1/d_s) Σ_tokens X_n``: shape ``(N, d)`` for ``X`` of shape ``(N, d_s, d)``."""
    return jnp.mean(jnp.asarray(X), axis=-2)


def limit_kernel(
    X: jax.Array, init: str = "ntk", d_m: int = 1, *, hidden: bool = False
) -> dict[str, np.ndarray]:
    """The limiting NTK Gram matrices of the network under ``τ0 = d_m^{-1}``, per block and total.

    Args:
        X: inputs, shape ``(N, d_s, d)``.
        init: ``"lecun"``, ``"he"`` or ``"ntk"``; under ``"ntk"`` the kernel does not depend on
            ``d_m``, under the others it is the leading order in ``d_m`` (it grows like ``d_m``).
        d_m: the width.
        hidden: the network has the hidden layer ``W_H``.

    Returns:
        ``{"Q", "K", "V", "O"[, "H"], "total"}``, each an ``(N, N)`` float64 array.

    Raises:
        GradflowError: unknown init or a size that is not a positive integer.
    """
    X = jnp.asarray(X, jnp.float64)
    d_m = check_size("d_m", d_m)
    scheme = init_scheme(init, int(X.shape[-1]), d_m)
    xbar = mean_tokens(X)
    norms = jnp.linalg.norm(xbar, axis=-1)
    outer = norms[:, None] * norms[None, :]
    cosine = jnp.where(outer > 0, (xbar @ xbar.T) / jnp.where(outer > 0, outer, 1.0), 0.0)
    args = (
        norms[:, None],
        norms[None, :],
        jnp.clip(cosine, -1.0, 1.0),
        d_m,
        scheme.var_in,
        scheme.var_out,
        scheme.tau1,
        scheme.tau_H,
    )
    shape = (xbar.shape[0],) * 2
    blocks = {
        name: np.asarray(jnp.broadcast_to(fn(*args), shape))
        for name, fn in _compiled_blocks(hidden).items()
    }
    blocks["total"] = sum(blocks.values())
    return blocks
