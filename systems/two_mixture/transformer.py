"""The full two-headed transformer of the two-mixture task, in JAX (equinox), and its loss.

Reconstruction (the paper's text was not available; ``docs/systems/two-mixture.md`` lists every
choice) of the model of "Transformers Provably Learn Two-Mixture of Linear Classification via
Gradient Flow" (ICLR 2025).  Each head ``h ∈ {+, -}`` has query and key maps
``W_Q^h, W_K^h ∈ R^{d_head × d}`` and ``m`` ReLU neurons ``w_{h,r} ∈ R^d``.  For a sample
``X ∈ R^{L × d}`` (rows are tokens, no positional encoding) the head scores key ``x_i`` against
query ``x_j`` by

    s(x_i, x_j) = x_iᵀ W_Kᵀ W_Q x_j,     att_{ij} = softmax_i s(x_i, x_j),

averages its attention output over the queries,

    u_h = (1/L) Σ_j Σ_i att_{ij} x_i,

and feeds it to its neurons, ``F_h = κ Σ_r a_r ReLU(⟨w_{h,r}, u_h⟩)``.  The logit is ``f(X)`` and
the loss the logistic loss ``ℓ(y f) = ln(1 + e^{-y f})`` averaged over the population.
With ``α_i = (1/L) Σ_j att_ij`` (the attention mass on token ``i``, averaged over the queries)
``u_h = Σ_i α_i x_i``.

Named options (the uncertain choices of the reconstruction):

- ``combine``: how the heads combine.  ``"difference"`` (default): ``f = F_+ - F_-`` with all
  ``a_r = 1``; ``"signed-sum"``: ``f = F_+ + F_-`` with fixed signs ``a_r = ±1`` (first half
  ``+1``, second half ``-1``, in each head); ``"tied"``: ``f = F_+ - F_-`` with the second
  head's attention tied to the first, ``W_Q^- = -W_Q^+`` and ``W_K^- = W_K^+``, so its scores are
  exactly the negated scores of the first head (``B^- = -B^+``).
- ``readout``: the scale ``κ`` of the neuron sum, ``"sqrt"`` (default, ``κ = 1/√m``) or
  ``"mean"`` (``κ = 1/m``).  With ``ŵ = √m w`` the ``"sqrt"`` model is ``(1/m) Σ_r a_r ReLU(⟨ŵ_r, u⟩)``
  with ``ŵ ~ N(0, ω²)`` trained at the mean-field rate, whose neuron dynamics has a limit as
  ``m → ∞`` on the same clock as the attention state; ``"mean"`` with ``N(0, ω²/m)`` neurons
  slows the neurons' clock by a factor of about ``m``.
- ``neurons``: what the neurons read.  ``"average"`` (default): ``u_h`` as above,
  ``ReLU(⟨w, Σ_i α_i x_i⟩)``; ``"tokens"``: every token alone, the outputs averaged with the
  attention's weights, ``F_h = κ Σ_r a_r Σ_i α_i ReLU(⟨w_{h,r}, x_i⟩)`` (the neurons as the
  value map).  With uniform attention the first is a network of the mean token, the second a
  sum of one function per token, which cannot fit the hard samples (``docs/systems/two-mixture.md``).
- ``d_head``: the inner dimension of ``W_Q, W_K`` (default ``m``, so that at initialization
  ``W_Qᵀ W_Q → ω² I`` as ``m → ∞``).

The output signs ``a_r`` are fixed, not trained.  Initialization: every trained weight i.i.d.
``N(0, ω²/m)``.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .model_config import COMBINES, NEURONS, READOUTS, MixtureConfig

__all__ = [
    "COMBINES",
    "NEURONS",
    "READOUTS",
    "Head",
    "MixtureConfig",
    "MixtureTransformer",
    "head_output",
    "init_transformer",
    "logistic_loss",
    "output_signs",
    "population_loss",
]


def output_signs(config: MixtureConfig) -> np.ndarray:
    """The fixed output signs ``a_{h,r}`` and head signs folded together, shape ``(2, m)``.

    ``f = Σ_h Σ_r out[h, r] κ ReLU(⟨w_{h,r}, u_h⟩)``: for ``"difference"`` and ``"tied"``
    ``out[0] = +1``, ``out[1] = -1``; for ``"signed-sum"`` both heads carry ``a_r = +1`` on the
    first ``⌈m/2⌉`` neurons and ``-1`` on the rest.
    """
    if config.combine == "signed-sum":
        a = np.where(np.arange(config.m) < (config.m + 1) // 2, 1.0, -1.0)
        return np.stack([a, a])
    return np.stack([np.ones(config.m), -np.ones(config.m)])


class Head(eqx.Module):
    """One head: query and key maps and its neurons.

    Attributes:
        W_Q: shape ``(d_head, d)``; ``None`` in the tied second head.
        W_K: shape ``(d_head, d)``; ``None`` in the tied second head.
        W: neurons ``w_r`` as rows, shape ``(m, d)``.
    """

    W_Q: jax.Array | None
    W_K: jax.Array | None
    W: jax.Array


def head_output(W_Q: jax.Array, W_K: jax.Array, X: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Attention of one head on one sample, averaged over the queries.

    Args:
        W_Q: query weights, shape ``(d_head, d)``.
        W_K: key weights, shape ``(d_head, d)``.
        X: tokens as rows, shape ``(L, d)``.

    Returns:
        ``(u, att)``: ``u = (1/L) Σ_j Σ_i att_ij x_i``, shape ``(d,)``, and the attention
        ``att[i, j] = softmax_i(x_iᵀ W_Kᵀ W_Q x_j)`` (key ``i``, query ``j``), shape ``(L, L)``.
    """
    S = (X @ W_K.T) @ (X @ W_Q.T).T
    att = jax.nn.softmax(S, axis=0)
    return (att.T @ X).mean(axis=0), att


class MixtureTransformer(eqx.Module):
    """The two-headed model: ``f(X)`` for one sample ``X`` of shape ``(L, d)``.

    Attributes:
        heads: the heads ``(+, -)``.
        out: fixed output signs times head signs, shape ``(2, m)`` (:func:`output_signs`); not
            trained (filtered out by :meth:`split`).
        kappa: the readout scale ``κ``.
        neurons: what the neurons read, ``"average"`` or ``"tokens"`` (module docstring).
    """

    heads: tuple[Head, Head]
    out: jax.Array
    kappa: float = eqx.field(static=True)
    neurons: str = eqx.field(static=True, default="average")

    def attention_maps(self) -> tuple[tuple[jax.Array, jax.Array], tuple[jax.Array, jax.Array]]:
        """``(W_Q, W_K)`` of each head, resolving the tie ``W_Q^- = -W_Q^+, W_K^- = W_K^+``."""
        plus, minus = self.heads
        if minus.W_Q is None:
            return (plus.W_Q, plus.W_K), (-plus.W_Q, plus.W_K)
        return (plus.W_Q, plus.W_K), (minus.W_Q, minus.W_K)

    def head_inputs(self, X: jax.Array) -> jax.Array:
        """``u_h`` of both heads for one sample, shape ``(2, d)``."""
        return jnp.stack([head_output(wq, wk, X)[0] for wq, wk in self.attention_maps()])

    def __call__(self, X: jax.Array) -> jax.Array:
        """The logit ``f(X)`` (a scalar) for tokens ``X`` of shape ``(L, d)``."""
        if self.neurons == "tokens":
            alpha = [head_output(wq, wk, X)[1].mean(axis=1) for wq, wk in self.attention_maps()]
            act = jnp.stack([jax.nn.relu(h.W @ X.T) @ a for h, a in zip(self.heads, alpha)])
        else:
            u = self.head_inputs(X)
            act = jax.nn.relu(jnp.stack([h.W @ u_h for h, u_h in zip(self.heads, u)]))
        return self.kappa * jnp.sum(self.out * act)

    def split(self) -> tuple[MixtureTransformer, MixtureTransformer]:
        """``(trained, fixed)`` by ``eqx.partition``: the weights, and the output signs."""
        trained = jax.tree.map(lambda _: True, self)
        trained = eqx.tree_at(lambda m: m.out, trained, replace=False)
        return eqx.partition(self, trained)


def init_transformer(config: MixtureConfig, key: jax.Array | None = None) -> MixtureTransformer:
    """The model at initialization: every trained weight i.i.d. ``N(0, ω²/m)`` (float64).

    Args:
        config: sizes and options.
        key: a ``jax.random`` key; default ``PRNGKey(config.seed)``.
    """
    key = jax.random.PRNGKey(config.seed) if key is None else key
    std = config.omega / np.sqrt(config.m)
    attention_shape, neuron_shape = (config.head_dim, config.d), (config.m, config.d)
    keys = jax.random.split(key, 6)
    shapes = [attention_shape, attention_shape, neuron_shape] * 2
    weights = [std * jax.random.normal(k, s, dtype=jnp.float64) for k, s in zip(keys, shapes)]
    plus = Head(*weights[:3])
    if config.combine == "tied":
        minus = Head(W_Q=None, W_K=None, W=weights[5])
    else:
        minus = Head(*weights[3:])
    return MixtureTransformer(
        heads=(plus, minus),
        out=jnp.asarray(output_signs(config)),
        kappa=config.kappa,
        neurons=config.neurons,
    )


def logistic_loss(margins: jax.Array) -> jax.Array:
    """``ℓ(z) = ln(1 + e^{-z})`` elementwise, in nats (``softplus(-z)``, stable for any ``z``)."""
    return jax.nn.softplus(-margins)


def population_loss(model: MixtureTransformer, X: jax.Array, y: jax.Array) -> jax.Array:
    """The exact population loss ``(1/n) Σ_s ℓ(y_s f(X_s))`` over the ``n`` samples, nats.

    Args:
        model: the transformer.
        X: all samples, shape ``(n, L, d)`` (:meth:`Population.tokens`).
        y: labels ``±1``, shape ``(n,)``.
    """
    return jnp.mean(logistic_loss(y * jax.vmap(model)(X)))
