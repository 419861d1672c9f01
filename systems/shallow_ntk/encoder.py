"""The shallow encoder-only transformer of Wu et al. (NeurIPS 2023), in JAX (equinox).

Source: Y. Wu, F. Liu, G. Chrysos, V. Cevher, "On the Convergence of Encoder-only Shallow
Transformers", NeurIPS 2023.  The paper's exact equation for the network was not recovered; this
is the most likely form (``docs/systems/shallow-ntk.md`` states what is assumed).  For a sample
``X ∈ R^{d_s × d}`` (rows are the ``d_s`` tokens) and width ``d_m``:

    A(X)     = softmax_rows(τ0 · X W_Qᵀ W_K Xᵀ)                     (d_s × d_s)
    F_pre(X) = (1/d_s) Σ_tokens ReLU(A(X) X W_Vᵀ)                    (d_m)
    f(X)     = τ1 · w_Oᵀ F_pre(X)

with ``W_Q, W_K, W_V ∈ R^{d_m × d}`` and ``w_O ∈ R^{d_m}``.  With the optional hidden layer
``W_H ∈ R^{d_m × d_m}`` the attention output is pooled first and passed through one ReLU layer:

    F_pre(X) = ReLU(τ_H · W_H (1/d_s) Σ_tokens A(X) X W_Vᵀ).

Scalings of the scores: ``"sqrt"`` (τ0 = d_m^{-1/2}) and ``"linear"`` (τ0 = d_m^{-1}).
Initializations (every weight i.i.d. Gaussian with mean 0):

    init    W_Q, W_K, W_V   w_O, W_H    τ1          τ_H
    lecun   1/d             1/d_m       1           1
    he      2/d             2/d_m       1           1
    ntk     1               1           d_m^{-1/2}  d_m^{-1/2}

The loss is the squared loss ``ℓ = ½ Σ_n (f(X_n) - y_n)²`` over the ``N`` samples, trained by
full-batch gradient descent on all weights.
"""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp

from gradflow import GradflowError

from .scheme import INITS, SCALINGS, InitScheme, check_size, init_scheme, tau0_of

__all__ = [
    "INITS",
    "SCALINGS",
    "InitScheme",
    "ShallowEncoder",
    "check_size",
    "init_encoder",
    "init_scheme",
    "pad_width",
    "predict",
    "squared_loss",
    "synthetic_data",
    "tau0_of",
]


class ShallowEncoder(eqx.Module):
    """``f(X) = τ1 · w_Oᵀ F_pre(X)`` (module docstring); a pytree whose leaves are the weights.

    Attributes:
        W_Q, W_K, W_V: shape ``(d_m, d)``.
        w_O: shape ``(d_m,)``.
        W_H: shape ``(d_m, d_m)``, or ``None`` without the hidden layer.
        tau0, tau1, tau_H: the multipliers, scalar arrays that are not trained: the forward pass
            reads them through ``stop_gradient``, so their gradient is zero and gradient descent
            leaves them unchanged.  Being arrays rather than static fields, networks that differ
            only in scaling or initialization share one compiled program.
    """

    W_Q: jax.Array
    W_K: jax.Array
    W_V: jax.Array
    w_O: jax.Array
    W_H: jax.Array | None
    tau0: jax.Array
    tau1: jax.Array
    tau_H: jax.Array

    def scores(self, X: jax.Array) -> jax.Array:
        """``τ0 · X W_Qᵀ W_K Xᵀ``, shape ``(d_s, d_s)`` for ``X`` of shape ``(d_s, d)``."""
        return jax.lax.stop_gradient(self.tau0) * (X @ self.W_Q.T) @ (X @ self.W_K.T).T

    def attention(self, X: jax.Array) -> jax.Array:
        """Row-stochastic ``A(X) = softmax_rows(scores)``, shape ``(d_s, d_s)``."""
        return jax.nn.softmax(self.scores(X), axis=-1)

    def features(self, X: jax.Array) -> jax.Array:
        """``F_pre(X)``, the features before the output layer, shape ``(d_m,)``."""
        values = self.attention(X) @ X @ self.W_V.T
        if self.W_H is None:
            return jnp.mean(jax.nn.relu(values), axis=0)
        return jax.nn.relu(
            jax.lax.stop_gradient(self.tau_H) * (self.W_H @ jnp.mean(values, axis=0))
        )

    def __call__(self, X: jax.Array) -> jax.Array:
        """The scalar output ``f(X)`` for ``X`` of shape ``(d_s, d)``."""
        return jax.lax.stop_gradient(self.tau1) * (self.w_O @ self.features(X))


def init_encoder(
    key: jax.Array,
    d: int,
    d_m: int,
    *,
    init: str = "lecun",
    scaling: str = "sqrt",
    hidden: bool = False,
    dtype: jnp.dtype = jnp.float64,
) -> ShallowEncoder:
    """A randomly initialized :class:`ShallowEncoder`.

    Args:
        key: JAX PRNG key.
        d: token dimension.
        d_m: width.
        init: ``"lecun"``, ``"he"`` or ``"ntk"`` (module docstring).
        scaling: ``"sqrt"`` (τ0 = d_m^{-1/2}) or ``"linear"`` (τ0 = d_m^{-1}).
        hidden: include the hidden layer ``W_H``.
        dtype: floating type of the weights.

    Raises:
        GradflowError: non-positive or non-integer sizes, unknown init or scaling.
    """
    scheme = init_scheme(init, d, d_m)
    tau0 = tau0_of(scaling, d_m)
    kq, kk, kv, ko, kh = jax.random.split(key, 5)

    def gaussian(k: jax.Array, shape: tuple[int, ...], var: float) -> jax.Array:
        return math.sqrt(var) * jax.random.normal(k, shape, dtype)

    return ShallowEncoder(
        W_Q=gaussian(kq, (d_m, d), scheme.var_in),
        W_K=gaussian(kk, (d_m, d), scheme.var_in),
        W_V=gaussian(kv, (d_m, d), scheme.var_in),
        w_O=gaussian(ko, (d_m,), scheme.var_out),
        W_H=gaussian(kh, (d_m, d_m), scheme.var_out) if hidden else None,
        tau0=jnp.asarray(tau0, dtype),
        tau1=jnp.asarray(scheme.tau1, dtype),
        tau_H=jnp.asarray(scheme.tau_H, dtype),
    )


def pad_width(model: ShallowEncoder, width: int) -> ShallowEncoder:
    """``model`` with ``width - d_m`` units of zeros appended: the same network, exactly.

    A unit whose rows of ``W_Q``, ``W_K``, ``W_V`` and whose ``w_O`` entry are 0 adds 0 to every
    score (``(W_Q x)_r (W_K x')_r = 0``) and to the output (``ReLU(0) = 0``), and every
    gradient on it is 0: ``∂f/∂W_Q,r ∝ W_K,r = 0`` and back, ``∂f/∂w_O,r = τ1 F_r = 0``,
    ``∂f/∂W_V,r ∝ w_O,r = 0``.  So outputs, the tangent kernel and every gradient-descent step
    are those of ``model`` (the padded units stay 0), while networks of different widths share
    one shape and so one compiled program.  ``τ0``, ``τ1`` keep the values of ``d_m``.

    Raises:
        GradflowError: ``width`` below ``d_m``, or a model with the hidden layer.
    """
    d_m = model.w_O.shape[0]
    if check_size("width", width) < d_m or model.W_H is not None:
        raise GradflowError(
            f"width = {width} must be ≥ d_m = {d_m}, on a network without the hidden layer"
        )

    def zeros_after(a: jax.Array) -> jax.Array:
        return jnp.concatenate([a, jnp.zeros((width - d_m, *a.shape[1:]), a.dtype)])

    return eqx.tree_at(
        lambda m: (m.W_Q, m.W_K, m.W_V, m.w_O),
        model,
        tuple(zeros_after(a) for a in (model.W_Q, model.W_K, model.W_V, model.w_O)),
    )


def predict(model: ShallowEncoder, X: jax.Array) -> jax.Array:
    """``f`` on a batch: ``X`` of shape ``(N, d_s, d)`` → shape ``(N,)``."""
    return jax.vmap(model)(X)


def squared_loss(model: ShallowEncoder, X: jax.Array, y: jax.Array) -> jax.Array:
    """``ℓ = ½ Σ_n (f(X_n) - y_n)²`` (the paper's squared loss, a sum over the ``N`` samples)."""
    return 0.5 * jnp.sum((predict(model, X) - y) ** 2)


def synthetic_data(
    key: jax.Array, n_samples: int, d_s: int, d: int, dtype: jnp.dtype = jnp.float64
) -> tuple[jax.Array, jax.Array]:
    """Gaussian inputs and targets: tokens i.i.d. ``N(0, I_d / d)`` (unit norm on average) and
    targets ``y_n ~ N(0, 1)``.

    Returns:
        ``(X, y)`` of shapes ``(N, d_s, d)`` and ``(N,)``.

    Raises:
        GradflowError: a size is not a positive integer.
    """
    n_samples, d_s, d = check_size("N", n_samples), check_size("d_s", d_s), check_size("d", d)
    kx, ky = jax.random.split(key)
    X = jax.random.normal(kx, (n_samples, d_s, d), dtype) / math.sqrt(d)
    return X, jax.random.normal(ky, (n_samples,), dtype)
