"""Between reduced coordinates and full weights: ``embed(θ)``, the projection back, the paper's init.

The rank-one embedding of the canonical coordinates ``(e, w, a)`` and the full model's bias
``b_full`` along a unit direction ``α`` (``docs/systems/markov.md``; ``κ = 1/√d`` so that ``4d·κ² = 4``):

    e = eα,  p_n = -(e/2)α,  W_Q = W_K = d^{1/4} ααᵀ,  W_V = ααᵀ,  W_O = a ααᵀ,
    W_1 = |w|κ 1 αᵀ,  W_2 = wκ α 1ᵀ,  b = b_full.

:class:`ReducedEmbedding` turns a reduced model's coordinates into these weights: it chooses
``b_full`` so that the full model's logit after a 0 equals the reduced model's ``f0`` on both
branches of the FFN (``s > 0``: the ReLU is active after a 1; ``s < 0``: after a 0; ``s`` the
residual-stream scale of :func:`gradflow.systems.markov.ansatz.ansatz_logit`).  The embedding is
therefore exact for every sign of ``e``; it is smooth except where ``s`` changes sign at ``e ≠ 0``
(``a e² = -4``), where it is continuous.

:func:`canonical_coordinates` is the projection back: exact left inverse of the embedding, and a
definition of ``(e, w, a, b)`` for any trained weights (with :func:`rank_one_diagnostics` saying
how far those weights are from the rank-one manifold).
"""

# ruff: noqa: F722  (jaxtyping shape strings such as "N d" are not Python expressions)

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import jax
import jax.numpy as jnp
import sympy as sp

from gradflow import FullModel, GradflowError, lambdify_jax

from .ansatz import a as a_sym
from .ansatz import ansatz_logit
from .ansatz import b as b_sym
from .ansatz import e as e_sym
from .ansatz import w as w_sym
from .data import check_length
from .ranges import FULL_LENGTH, check_attention, check_width

if TYPE_CHECKING:
    from jaxtyping import Array, Float

    from .transformer import MarkovTransformer

__all__ = [
    "COORDINATES",
    "ReducedEmbedding",
    "canonical_coordinates",
    "default_direction",
    "paper_init",
    "population_loss",
    "rank_one_diagnostics",
    "rank_one_transformer",
]

COORDINATES = ("e", "w", "a", "b")
"""The canonical coordinates a full model projects to (``b`` in the reduced bias convention)."""
MATRICES = ("W_Q", "W_K", "W_V", "W_O", "W_1", "W_2")


def default_direction(d: int, dtype: jnp.dtype = jnp.float64) -> Float[Array, " d"]:
    """``α = 1/√d``: the unit vector with equal entries (the paper's "constant" embedding)."""
    return jnp.full((d,), 1 / math.sqrt(d), dtype)


def _branch_shift() -> sp.Expr:
    """``logit(0) - b`` of the ansatz: what the full bias must be corrected by."""
    derived = ansatz_logit()
    return derived.logit0 - b_sym


@functools.cache
def _shift() -> Callable[..., Array]:
    """:func:`_branch_shift` as a JAX function of ``(e, w, a)``, derived on first use (the
    derivation costs half a second, which importing a model should not pay)."""
    return lambdify_jax((e_sym, w_sym, a_sym), _branch_shift())


@functools.cache
def _scale() -> Callable[..., Array]:
    """The ansatz's residual-stream scale ``s`` as a JAX function of ``(e, a)``, derived on
    first use."""
    return lambdify_jax((e_sym, a_sym), ansatz_logit().scale)


def rank_one_transformer(
    e: Array,
    w: Array,
    a: Array,
    b_full: Array,
    *,
    direction: Float[Array, " d"],
    length: int,
    attention: Literal["softmax", "linear"] = "linear",
    tied: bool = True,
) -> MarkovTransformer:
    """Full weights on the rank-one manifold (see the module docstring), dtype of ``direction``.

    Args:
        e: canonical embedding coordinate (a scalar, traceable).
        w: canonical FFN coordinate (a scalar, traceable).
        a: attention coordinate (a scalar, traceable).
        b_full: the full model's logit bias.
        direction: the unit vector ``α``, shape ``(d,)``.
        length: number of positions ``N``.
        attention: the attention kind of the returned model.
        tied: weight tying; untied models get ``unembed = eα``.
    """
    from .transformer import MarkovTransformer

    alpha = direction
    d = alpha.shape[0]
    dt = alpha.dtype
    e, w, a, b_full = (jnp.asarray(v, dt) for v in (e, w, a, b_full))
    outer = jnp.outer(alpha, alpha)
    kappa = 1 / math.sqrt(d)
    ones = jnp.ones((4 * d,), dt)
    e_vec = e * alpha
    return MarkovTransformer(
        e=e_vec,
        positions=jnp.broadcast_to(-e_vec / 2, (length, d)),
        W_Q=d**0.25 * outer,
        W_K=d**0.25 * outer,
        W_V=outer,
        W_O=a * outer,
        W_1=jnp.abs(w) * kappa * jnp.outer(ones, alpha),
        W_2=w * kappa * jnp.outer(alpha, ones),
        b=b_full,
        unembed=None if tied else e_vec,
        attention=attention,
    )


@dataclass(frozen=True, eq=False)
class ReducedEmbedding:
    """``embed(θ, h)`` of a reduced Markov model: its coordinates as full transformer weights.

    Args:
        params: the reduced model's parameter symbols, a subset of ``e, w, a, b`` (``e, w``
            required; ``a`` absent means ``a = 0``: no attention output).
        hyperparams: its hyperparameter symbols (``p, q``).
        logit0: the reduced model's logit after a 0 (``f0``) in SymPy: ``b - e²/2`` for the
            canonical model with a trained bias, the bias-optimal ``f0*(c)`` when it is
            optimized out.
    """

    params: tuple[sp.Symbol, ...]
    hyperparams: tuple[sp.Symbol, ...]
    logit0: sp.Expr

    def __post_init__(self) -> None:
        names = [s.name for s in self.params]
        if not {"e", "w"} <= set(names) <= set(COORDINATES):
            raise GradflowError(
                f"an embedded model needs coordinates e, w (and optionally a, b), got {names}"
            )

    @functools.cached_property
    def _f0(self) -> Callable[..., Array]:
        return lambdify_jax((*self.params, *self.hyperparams), self.logit0)

    def coordinates(self, theta: Array) -> dict[str, Array]:
        """``θ`` as ``{"e": …, "w": …, "a": …}`` with ``a = 0`` where the model has no ``a``."""
        named = {s.name: theta[..., i] for i, s in enumerate(self.params)}
        named.setdefault("a", jnp.zeros_like(named["e"]))
        return named

    def full_bias(self, theta: Array, h: Array) -> Array:
        """``b_full = f0(θ, h) - (logit(0) - b)``: the bias that makes the logits agree."""
        c = self.coordinates(theta)
        f0 = self._f0(
            *(theta[..., i] for i in range(len(self.params))), *(h[j] for j in range(h.shape[0]))
        )
        return f0 - _shift()(c["e"], c["w"], c["a"])

    def metric(
        self, theta: Array, h: Array, *, length: int = FULL_LENGTH, tied: bool = True
    ) -> Array:
        """``G = JᵀJ`` of the embedding at ``θ`` (shape ``(dim,)``), shape ``(dim, dim)``.

        Every weight of the embedding is linear in one coordinate except the bias: ``e`` moves
        ``e = eα`` and the ``N`` positions ``-(e/2)α`` (``‖∂/∂e‖² = 1 + N/4``, plus 1 for an
        untied unembedding), ``w`` moves ``W_1 = |w|κ 1αᵀ`` and ``W_2 = wκ α1ᵀ`` (``4dκ² = 4``
        each: 8, the same on both sides of ``w = 0``), ``a`` moves ``W_O = a ααᵀ`` (1), and
        ``b_full(θ)`` moves with every coordinate.  So ``G = D + u uᵀ`` with ``D`` that diagonal
        (0 for ``b``) and ``u = ∇_θ b_full``; independent of ``d`` and of ``α``.
        """
        weight = {"e": 1 + length / 4 + (0 if tied else 1), "w": 8.0, "a": 1.0, "b": 0.0}
        diag = jnp.asarray([weight[s.name] for s in self.params], jnp.result_type(theta, float))
        u = jax.grad(lambda t: self.full_bias(t, h))(theta)
        return jnp.diag(diag) + jnp.outer(u, u)

    def project(self, params: MarkovTransformer) -> Array:
        """The reduced coordinates of full weights: :func:`canonical_coordinates` along the
        embedding's ``α = 1/√d`` (``d`` the weights' width), restricted to the model's
        coordinates; ``project(embed(θ)) = θ`` exactly."""
        coords = canonical_coordinates(params, default_direction(params.d, params.e.dtype))
        return coords[jnp.asarray([COORDINATES.index(s.name) for s in self.params])]

    def full_model(self) -> FullModel:
        """The reduced model's full model at the default settings (width 8,
        :data:`~gradflow.systems.markov.ranges.FULL_LENGTH` positions, linear attention): this
        embedding, :func:`population_loss`, the closed-form :meth:`metric` and :meth:`project`.
        Other settings: :func:`gradflow.systems.markov.full_model.full_model`."""
        return FullModel(embed=self, loss=population_loss, metric=self.metric, project=self.project)

    def __call__(
        self,
        theta: Array,
        h: Array,
        *,
        d: int = 8,
        length: int = FULL_LENGTH,
        direction: Float[Array, " d"] | None = None,
        attention: Literal["softmax", "linear"] = "linear",
        tied: bool = True,
    ) -> MarkovTransformer:
        """The full weights at reduced point ``θ`` (shape ``(dim,)``) and hyperparameters ``h``.

        Args:
            theta: the reduced coordinates in the model's order.
            h: the hyperparameters ``(p, q)``.
            d: embedding width (ignored when ``direction`` is given).
            length: positions ``N``.
            direction: the unit vector ``α`` (default :func:`default_direction`); its dtype is
                the model's.
            attention: attention kind of the full model (the reduced models with ``a`` are exact
                for ``"linear"``; those without ``a`` embed ``W_O = 0`` and are exact for both).
            tied: weight tying.

        Raises:
            GradflowError: invalid ``d``, ``length``, ``attention``, or ``θ`` of the wrong shape.
        """
        theta = jnp.asarray(theta)
        if theta.shape != (len(self.params),):
            raise GradflowError(
                f"θ must have shape ({len(self.params)},) for coordinates "
                f"({', '.join(s.name for s in self.params)}), got {tuple(theta.shape)}"
            )
        alpha = default_direction(check_width(d)) if direction is None else jnp.asarray(direction)
        check_length(length)
        check_attention(attention)
        c = self.coordinates(theta)
        return rank_one_transformer(
            c["e"],
            c["w"],
            c["a"],
            self.full_bias(theta, jnp.asarray(h)),
            direction=alpha,
            length=length,
            attention=attention,
            tied=tied,
        )


def population_loss(params: MarkovTransformer, h: Array) -> Array:
    """The full transformer's exact population loss at ``h = (p, q)``, nats
    (:func:`~gradflow.systems.markov.transformer.exact_loss`: all ``2^N`` sequences)."""
    from .transformer import exact_loss

    return exact_loss(params, h[0], h[1])


def canonical_coordinates(
    model: MarkovTransformer, direction: Float[Array, " d"] | None = None
) -> Float[Array, 4]:
    """Project full weights onto ``(e, w, a, b)``: the left inverse of the embedding.

    With ``α̂ = direction`` (default ``e/‖e‖``, so that ``e ≥ 0``):

    - ``e = ⟨e, α̂⟩``;
    - ``w`` from the odd part of the FFN on the token direction (``ReLU(u) - ReLU(-u) = u``):
      ``4 w|w| = α̂ᵀ W_2 W_1 α̂``, the same on both branches of the ReLU;
    - ``a = ⟨α̂, W_O W_V α̂⟩ ⟨W_Q α̂, W_K α̂⟩ / √d`` (the four attention scales along ``α̂``);
    - ``b = f0 + e s/2``, the bias in the reduced convention ``f0 = b - e s/2``, where ``f0`` is the
      full readout after a 0 of the rank-one stream ``y0 = -(s/2) α̂``, ``s = e(1 + a e²/4)``.

    Every coordinate is even under ``α̂ → -α̂`` except ``e``, and the reduced losses depend on ``e``
    only through ``e²``, so the default ``e ≥ 0`` loses nothing: ``project(embed(θ))`` equals ``θ``
    with ``e`` replaced by ``|e|``, and exactly ``θ`` when ``direction`` is the embedding's ``α``.

    Returns:
        ``[e, w, a, b]``; traceable, so it maps over stacked models with ``jax.vmap``.
    """
    alpha = model.e / jnp.linalg.norm(model.e) if direction is None else direction
    e = model.e @ alpha
    ffn_gain = alpha @ (model.W_2 @ (model.W_1 @ alpha))
    w = jnp.sign(ffn_gain) * jnp.sqrt(jnp.abs(ffn_gain) / 4)
    a = (
        (alpha @ (model.W_O @ (model.W_V @ alpha)))
        * ((model.W_Q @ alpha) @ (model.W_K @ alpha))
        / math.sqrt(model.d)
    )
    s = _scale()(e, a)
    y0 = -(s / 2) * alpha
    f0 = model.b + model.readout() @ (y0 + model.W_2 @ jax.nn.relu(model.W_1 @ y0))
    return jnp.stack([e, w, a, f0 + e * s / 2])


def rank_one_diagnostics(
    model: MarkovTransformer, direction: Float[Array, " d"] | None = None
) -> dict[str, Array]:
    """How far full weights are from the rank-one manifold.

    Returns:
        ``energy_<M>``: ``σ1²/Σσ²`` of each matrix ``M`` (1 on the manifold);
        ``position_residual``: ``‖p_n + e/2‖`` summed over ``n`` relative to ``√N ‖e‖/2`` (0 on the
        manifold);
        ``residual``: ``‖θ - embed(project(θ))‖ / ‖θ‖`` over all weights, the distance to the
        manifold point with the same canonical coordinates (0 on the manifold).
    """
    out = {}
    for name in MATRICES:
        s = jnp.linalg.svd(getattr(model, name), compute_uv=False)
        out[f"energy_{name}"] = s[0] ** 2 / jnp.maximum(jnp.sum(s**2), jnp.finfo(s.dtype).tiny)
    e_norm = jnp.linalg.norm(model.e)
    out["position_residual"] = jnp.linalg.norm(model.positions + model.e / 2) / (
        jnp.sqrt(model.length) * e_norm / 2
    )
    alpha = model.e / e_norm if direction is None else direction
    e, w, a, b = canonical_coordinates(model, alpha)
    back = rank_one_transformer(
        e,
        w,
        a,
        model.b,
        direction=alpha,
        length=model.length,
        attention=model.attention,
        tied=model.unembed is None,
    )
    diff = jax.tree.leaves(jax.tree.map(lambda x, y: x - y, model, back))
    out["residual"] = jnp.sqrt(sum(jnp.sum(v**2) for v in diff)) / jnp.sqrt(
        sum(jnp.sum(v**2) for v in jax.tree.leaves(model))
    )
    return out


def paper_init(
    key: jax.Array,
    d: int,
    length: int,
    *,
    e0: float | None = None,
    w0: float = -1.0,
    attention: Literal["softmax", "linear"] = "softmax",
    tied: bool = True,
    dtype: jnp.dtype = jnp.float32,
) -> MarkovTransformer:
    """The paper's recommended init for ``p + q > 1``: rank-one FFN with opposite signs, constant
    embedding, ``p_n = -e/2``; attention and bias as in the standard init.

    ``e = e0 α``, ``p_n = -e/2``, ``W_1 = |w0|κ 1 αᵀ``, ``W_2 = w0 κ α 1ᵀ`` with ``α = 1/√d``
    (constant entries) and ``w0 < 0`` (``W_1`` positive, ``W_2`` negative).  The magnitudes are a
    reconstruction (the paper states the structure): ``e0 = 0.02 √d`` gives embedding entries of
    the standard init's scale 0.02, and ``w0 = -1`` lies below the canonical saddle ``-1/√2``, in the
    basin of the bigram solution for ``p + q > 1`` (``docs/systems/markov.md``).
    Source: Makkuva et al., "Local to Global" (NeurIPS 2024), §4 (initialization guideline).

    Raises:
        GradflowError: invalid ``d``, ``length``, ``attention``, or ``w0 ≥ 0``.
    """
    from .transformer import STANDARD_STD, MarkovTransformer, normal_blocks

    d, length = check_width(d), check_length(length)
    check_attention(attention)
    if not w0 < 0:
        raise GradflowError(f"w0 = {w0:g} must be < 0 (W_1 and W_2 of opposite signs)")
    e0 = STANDARD_STD * math.sqrt(d) if e0 is None else float(e0)
    alpha = default_direction(d, dtype)
    base = rank_one_transformer(
        e0, w0, 0.0, 0.0, direction=alpha, length=length, attention=attention, tied=tied
    )
    std = STANDARD_STD
    attn = normal_blocks(
        key,
        {
            "W_Q": ((d, d), std),
            "W_K": ((d, d), std),
            "W_V": ((d, d), std),
            "W_O": ((d, d), std / math.sqrt(2)),
        },
        dtype,
    )
    return MarkovTransformer(
        e=base.e,
        positions=base.positions,
        **attn,
        W_1=base.W_1,
        W_2=base.W_2,
        b=base.b,
        unembed=base.unembed,
        attention=attention,
    )
