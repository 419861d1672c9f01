"""One contract for every reduced model that has a full model: :class:`FullModel`.

A reduced model ``L(θ; h)`` comes from a full model ``L_full(W; h)`` through an embedding
``W = embed(θ, h)`` with ``L_full(embed(θ, h); h) = L(θ; h)``.  What the reduced-vs-full
analyses need of the pair:

- ``embed(θ, h)``: the full parameters (a pytree) at reduced point ``θ``;
- ``loss(W, h)``: the full model's exact population loss (nats);
- ``project(W)``: reduced coordinates of any full parameters (a left inverse of ``embed``);
- ``groups``: names of the full parameter groups (for reports of where a gradient points);
- ``metric(θ, h)``: ``G = JᵀJ``, ``J = ∂ ravel(embed(θ, h))/∂θ``, the metric the embedding
  induces: the reduced flow in it, ``dθ/dt = -G⁻¹∇L``, is what the full gradient flow would be
  if the embedded manifold were invariant (the full gradient pulls back to ``Jᵀ∇L_full = ∇L``).

:data:`FULL_MODELS` names the reduced models with a full model (the entries of
:data:`gradflow.models.MODELS` marked ``full``, so the models are listed once); :func:`full_model`
builds the pair for a model name and the full model's settings.  The Markov family (the single-
layer transformer on binary Markov chains, exact loss by enumerating all ``2^N`` sequences) is
the family with an embedding today; the minimal induction-head and two-mixture models are
reduced by projection only and have no ``embed``.
"""

# ruff: noqa: F722  (jaxtyping shape strings are not Python expressions)

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from gradflow import GradflowError, ReducedModel

from . import MODELS
from .markov_data import check_length
from .markov_embedding import COORDINATES, canonical_coordinates, default_direction
from .markov_ranges import FULL_LENGTH
from .markov_transformer import MarkovTransformer, check_attention, check_width, exact_loss

__all__ = ["FULL_MODELS", "FullModel", "MarkovFullModel", "full_model", "pulled_gradient"]


class FullModel(Protocol):
    """What a reduced model's full model provides (module docstring).

    Attributes:
        reduced: the reduced model.
        groups: parameter group name → names of the full parameters (pytree fields) in it.
    """

    reduced: ReducedModel
    groups: Mapping[str, tuple[str, ...]]

    def embed(self, theta: Float[Array, " dim"], h: Float[Array, " k"]) -> Any:
        """Full parameters at reduced point ``θ`` and hyperparameters ``h``."""
        ...

    def loss(self, params: Any, h: Float[Array, " k"]) -> Float[Array, ""]:
        """The full model's exact population loss, nats."""
        ...

    def project(self, params: Any) -> Float[Array, " dim"]:
        """Reduced coordinates of full parameters."""
        ...

    def metric(self, theta: Float[Array, " dim"], h: Float[Array, " k"]) -> Float[Array, "dim dim"]:
        """``G = JᵀJ`` of the embedding at ``θ``."""
        ...


MARKOV_GROUPS = {
    "embedding": ("e", "positions", "unembed"),
    "attention": ("W_Q", "W_K", "W_V", "W_O"),
    "ffn": ("W_1", "W_2"),
    "bias": ("b",),
}
"""Parameter groups of the single-layer Markov transformer."""


@dataclass(frozen=True, eq=False)
class MarkovFullModel:
    """A canonical Markov model and the single-layer transformer it is reduced from.

    Args:
        reduced: one of the canonical models (coordinates a subset of ``e, w, a, b``).
        length: positions ``N`` (exact loss over all ``2^N`` input sequences, ``N ≤ 14``;
            default :data:`~gradflow.models.markov_ranges.FULL_LENGTH`, whose metric is the
            induced metric of ``metric="induced"``).
        d: embedding width.
        attention: ``"linear"`` (exact for every canonical model) or ``"softmax"`` (exact for
            the models without the attention scalar ``a``, which embed ``W_O = 0``).

    Raises:
        GradflowError: a model without an embedding, a bad length, width or attention kind.
    """

    reduced: ReducedModel
    length: int = FULL_LENGTH
    d: int = 8
    attention: str = "linear"

    groups = MARKOV_GROUPS

    def __post_init__(self) -> None:
        if self.reduced.embed is None:
            raise GradflowError(f"model {self.reduced.name!r} has no embedding into a full model")
        check_length(self.length, exact=True)
        check_width(self.d)
        check_attention(self.attention)
        if self.attention == "softmax" and "a" in self.reduced.param_names:
            raise GradflowError(
                f"model {self.reduced.name!r} is reduced from linear attention; "
                "attention = 'softmax' is exact only for the models without a"
            )

    @property
    def direction(self) -> Float[Array, " d"]:
        """The unit vector ``α`` of the embedding, ``1/√d``."""
        return default_direction(self.d)

    def embed(self, theta: Float[Array, " dim"], h: Float[Array, " 2"]) -> MarkovTransformer:
        """The rank-one weights at ``θ`` (:class:`~gradflow.models.markov_embedding.ReducedEmbedding`)."""
        return self.reduced.embed(
            theta, h, length=self.length, direction=self.direction, attention=self.attention
        )

    def loss(self, params: MarkovTransformer, h: Float[Array, " 2"]) -> Float[Array, ""]:
        """:func:`~gradflow.models.markov_transformer.exact_loss`, nats."""
        return exact_loss(params, h[0], h[1])

    def project(self, params: MarkovTransformer) -> Float[Array, " dim"]:
        """:func:`~gradflow.models.markov_embedding.canonical_coordinates` along ``α``, restricted
        to the reduced model's coordinates (``e`` keeps its sign along ``α``)."""
        coords = canonical_coordinates(params, self.direction)
        return coords[jnp.asarray([COORDINATES.index(n) for n in self.reduced.param_names])]

    def metric(self, theta: Float[Array, " dim"], h: Float[Array, " 2"]) -> Float[Array, "dim dim"]:
        """``G = D + u uᵀ`` in closed form (:meth:`ReducedEmbedding.metric`)."""
        return self.reduced.embed.metric(theta, h, length=self.length)


FULL_MODELS: tuple[str, ...] = tuple(name for name, entry in MODELS.items() if entry.full)
"""Every reduced model with a full model, by name, in the order of :data:`MODELS` (the entries
marked ``full``)."""


@functools.cache
def full_model(name: str, **settings: Any) -> MarkovFullModel:
    """The full model of reduced model ``name`` with ``settings`` (``length``, ``d``,
    ``attention``; see :class:`MarkovFullModel`).  One object per arguments, so the programs
    compiled for it (flows of its weights, flows in its metric) are reused.

    Raises:
        GradflowError: a model without a full model, or bad settings.
    """
    if name not in FULL_MODELS:
        raise GradflowError(
            f"model {name!r} has no full model; models with one: {', '.join(FULL_MODELS)}"
        )
    return MarkovFullModel(MODELS[name].model(), **settings)


def pulled_gradient(full: FullModel, theta: Array, h: Array) -> Array:
    """``Jᵀ ∇L_full`` at ``embed(θ)``: the full gradient pulled back to reduced coordinates,
    shape ``(dim,)``; equals ``∇L(θ)`` when the embedding preserves the loss."""
    params, vjp = jax.vjp(lambda t: full.embed(t, h), theta)
    return vjp(jax.grad(full.loss)(params, h))[0]
