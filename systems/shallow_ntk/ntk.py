"""The empirical neural tangent kernel of the shallow encoder, per parameter block.

For a network ``f`` with parameters ``θ`` and ``N`` inputs, the empirical NTK Gram matrix is
``K = J Jᵀ`` (shape ``N × N``) with ``J = ∂f(X_n)/∂θ`` (shape ``N × P``).  Split by the trained
blocks ``Q, K, V, O`` (and ``H``), ``K = Σ_b J_b J_bᵀ``; the output block is exactly
``K_O = τ1² F_pre F_preᵀ``, so ``λ_min(K) ≥ τ1² σ_min(F_pre)² = τ1² α²`` (Wu et al. 2023).

Three ways to compute ``K`` (``gradflow bench shallow-ntk`` times them):

- ``"jacobian"``: ``jax.jacobian`` (reverse mode) of the batched outputs, then ``J Jᵀ`` — the
  plain baseline.  Its ``N`` vector-Jacobian products each run back through the whole batch.
- ``"per-sample"``: the gradient of each sample's output, ``jax.vmap`` over samples, then
  ``J Jᵀ``: one backward pass per sample, the fastest here (the default).
- ``"ntvp"``: NTK-vector products ``K e_n = J (Jᵀ e_n)`` (a VJP then a JVP), never forming ``J``.
"""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from gradflow import GradflowError

from .encoder import ShallowEncoder, init_scheme, predict
from .limit import limit_kernel

__all__ = [
    "BLOCKS",
    "METHODS",
    "PROPOSITION1_MARGIN",
    "alpha",
    "block_names",
    "empirical_ntk",
    "feature_floor",
    "feature_matrix",
    "kernel_blocks",
    "proposition1_holds",
    "softmax_deviation",
]

BLOCKS = {"Q": "W_Q", "K": "W_K", "V": "W_V", "O": "w_O", "H": "W_H"}
"""Kernel block name → weight of :class:`ShallowEncoder`."""

METHODS = ("per-sample", "jacobian", "ntvp")
"""Implementations of :func:`empirical_ntk`; the first is the default (fastest measured)."""


def block_names(model: ShallowEncoder) -> tuple[str, ...]:
    """The blocks the model trains: ``("Q", "K", "V", "O")``, plus ``"H"`` with a hidden layer."""
    return tuple(b for b, attr in BLOCKS.items() if getattr(model, attr) is not None)


def _gram_blocks(model: ShallowEncoder, jac: ShallowEncoder) -> dict[str, jax.Array]:
    """``J_b J_bᵀ`` per block from a Jacobian pytree with leaves of shape ``(N, *weight)``."""
    out = {}
    for b in block_names(model):
        leaf = getattr(jac, BLOCKS[b])
        flat = leaf.reshape(leaf.shape[0], -1)
        out[b] = flat @ flat.T
    return out


@eqx.filter_jit
def _ntk_jacobian(model: ShallowEncoder, X: jax.Array) -> dict[str, jax.Array]:
    return _gram_blocks(model, jax.jacobian(predict)(model, X))


@eqx.filter_jit
def kernel_blocks(model: ShallowEncoder, X: jax.Array) -> dict[str, jax.Array]:
    """``J_b J_bᵀ`` per trained block from the per-sample gradients (``"per-sample"`` of
    :func:`empirical_ntk`), as JAX arrays: traceable, so it can be ``vmap``-ped over networks.

    Args:
        model: the network.
        X: inputs, shape ``(N, d_s, d)``.

    Returns:
        ``{"Q", "K", "V", "O"[, "H"]}``, each of shape ``(N, N)`` (no ``"total"``).
    """
    grads = jax.vmap(jax.grad(lambda m, x: m(x)), in_axes=(None, 0))(model, X)
    return _gram_blocks(model, grads)


def _only(tangent: ShallowEncoder, keep: str) -> ShallowEncoder:
    """``tangent`` with every weight but ``keep`` (an attribute name) set to zero."""
    others = [a for a in BLOCKS.values() if a != keep and getattr(tangent, a) is not None]
    return eqx.tree_at(
        lambda m: [getattr(m, a) for a in others], tangent, replace_fn=jnp.zeros_like
    )


@eqx.filter_jit
def _ntk_vector_products(
    model: ShallowEncoder, X: jax.Array, per_block: bool = True
) -> dict[str, jax.Array]:
    def f(m: ShallowEncoder) -> jax.Array:
        return predict(m, X)

    _, pullback = jax.vjp(f, model)
    basis = jnp.eye(X.shape[0], dtype=X.dtype)

    def column(e: jax.Array, keep: str | None) -> jax.Array:
        (cotangent,) = pullback(e)
        tangent = cotangent if keep is None else _only(cotangent, keep)
        return jax.jvp(f, (model,), (tangent,))[1]

    if not per_block:
        return {"total": jax.vmap(lambda e: column(e, None))(basis).T}
    return {b: jax.vmap(lambda e, a=BLOCKS[b]: column(e, a))(basis).T for b in block_names(model)}


_IMPLEMENTATIONS: dict[str, Callable[..., dict[str, jax.Array]]] = {
    "per-sample": kernel_blocks,
    "jacobian": _ntk_jacobian,
    "ntvp": _ntk_vector_products,
}


def empirical_ntk(
    model: ShallowEncoder, X: jax.Array, method: str = "per-sample", *, per_block: bool = True
) -> dict[str, np.ndarray]:
    """The empirical NTK Gram matrix ``K = J Jᵀ`` over all parameters and per block.

    Args:
        model: the network.
        X: inputs, shape ``(N, d_s, d)``.
        method: ``"per-sample"``, ``"jacobian"`` or ``"ntvp"`` (module docstring); all give the
            same matrix up to rounding.
        per_block: also return each block's kernel.  Without it ``"ntvp"`` needs one JVP per
            sample instead of one per sample and block; the Jacobian methods cost the same.

    Returns:
        ``{"Q", "K", "V", "O"[, "H"], "total"}`` (only ``"total"`` without ``per_block``):
        ``(N, N)`` arrays in output units squared.

    Raises:
        GradflowError: unknown method.
    """
    if method not in _IMPLEMENTATIONS:
        raise GradflowError(f"method = {method!r} is not one of {', '.join(METHODS)}")
    X = jnp.asarray(X)
    computed = (
        _ntk_vector_products(model, X, per_block)
        if method == "ntvp"
        else _IMPLEMENTATIONS[method](model, X)
    )
    blocks = {b: np.asarray(k) for b, k in computed.items()}
    if "total" not in blocks:
        blocks["total"] = sum(blocks.values())
    return blocks if per_block else {"total": blocks["total"]}


@eqx.filter_jit
def _features(model: ShallowEncoder, X: jax.Array) -> jax.Array:
    return jax.vmap(model.features)(X)


def feature_matrix(model: ShallowEncoder, X: jax.Array) -> np.ndarray:
    """``F_pre``: the features before the output layer, shape ``(N, d_m)``."""
    return np.asarray(_features(model, jnp.asarray(X)))


def alpha(F: np.ndarray) -> float:
    """``α = σ_min(F_pre)``: the ``N``-th singular value of the ``N × d_m`` feature matrix
    (0 when ``N > d_m``), so that ``σ_min(F)² = λ_min(F Fᵀ)``."""
    n, m = F.shape
    return float(np.linalg.svd(F, compute_uv=False)[-1]) if n <= m else 0.0


@eqx.filter_jit
def _attention(model: ShallowEncoder, X: jax.Array) -> jax.Array:
    return jax.vmap(model.attention)(X)


def softmax_deviation(model: ShallowEncoder, X: jax.Array) -> float:
    """``max |A(X_n)_{ij} - 1/d_s|`` over samples and entries: the distance from uniform
    attention (→ 0 as ``d_m`` grows under ``τ0 = d_m^{-1}``)."""
    A = np.asarray(_attention(model, jnp.asarray(X)))
    return float(np.max(np.abs(A - 1.0 / A.shape[-1])))


PROPOSITION1_MARGIN = 0.25
"""Proposition 1 of Wu et al. (2023) bounds ``α_0`` below through the concentration of
``F_pre F_preᵀ`` around its mean ``d_m Φ``; it is taken as met where ``α_0² ≥ PROPOSITION1_MARGIN ·
d_m λ_min(Φ)``, the features concentrated to at least a quarter of their mean (a margin chosen
here: the statement's constants were not recovered)."""


def feature_floor(X: jax.Array, init: str, d_m: int) -> float:
    """``λ* = λ_min(Φ)``, ``Φ = E[F_pre F_preᵀ] / d_m`` the features' mean Gram per unit under
    uniform attention: ``Φ_ij = σ_in² ‖x̄_i‖‖x̄_j‖ κ1(θ_ij)`` (mean tokens ``x̄``), the ``O``
    block of :func:`gradflow.systems.shallow_ntk.limit.limit_kernel` over ``τ1² d_m``.  Under
    ``τ0 = d_m^{-1}`` the attention tends to uniform and ``F_pre F_preᵀ / d_m → Φ``.

    Args:
        X: inputs, shape ``(N, d_s, d)``.
        init: ``"lecun"``, ``"he"`` or ``"ntk"``.
        d_m: the width.
    """
    tau1 = init_scheme(init, int(np.shape(X)[-1]), d_m).tau1
    return float(np.linalg.eigvalsh(limit_kernel(X, init, d_m)["O"] / (tau1**2 * d_m))[0])


def proposition1_holds(alpha0: float, d_m: int, lambda_star: float) -> bool:
    """Whether ``α_0² ≥ PROPOSITION1_MARGIN · d_m λ*`` (:data:`PROPOSITION1_MARGIN`): never where
    ``d_m < N`` (``α_0 = 0``), and not at ``d_m = N`` either, where ``F_pre`` is square and its
    smallest singular value is near 0 (measured ``α_0² / (d_m λ*)`` ≈ 0.001–0.01)."""
    return bool(alpha0**2 >= PROPOSITION1_MARGIN * d_m * lambda_star)
