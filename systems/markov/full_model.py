"""The Markov models' full model at any settings: :class:`MarkovFullModel`.

A reduced model declares its full model once, as one value,
``ReducedModel(..., full=gradflow.FullModel(embed, loss, metric, project))``
(:class:`gradflow.FullModel`); the reduced-vs-full analyses of the Markov family need it at
other settings than the declared ones (a sequence length ``N``, a width ``d``, softmax
attention).  :class:`MarkovFullModel` is the declared full model of a canonical model at given
settings, with what those analyses read besides:

- ``embed(θ, h)``, ``loss(W, h)``, ``project(W)``, ``metric(θ, h)``: the declared full model's
  at these settings (the embedding's :class:`~gradflow.systems.markov.embedding.ReducedEmbedding`
  called with them);
- ``groups``: names of the full parameter groups (for reports of where a gradient points).

At the default settings it is the declared full model itself: one ``N``
(:data:`~gradflow.systems.markov.ranges.FULL_LENGTH`), so the induced metric of
``metric="induced"`` is this model's.  :data:`FULL_MODELS` names the reduced models with a full
model (the entries of :data:`gradflow.systems.MODELS` marked ``full``, so the models are listed
once); :func:`full_model` builds the model at given settings.  The minimal induction-head and
two-mixture models are reduced by projection only and declare no full model.
"""

# ruff: noqa: F722  (jaxtyping shape strings are not Python expressions)

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from jaxtyping import Array, Float

from gradflow import FullModel, GradflowError, ReducedModel
from gradflow.systems import MODELS

from .data import check_length
from .embedding import ReducedEmbedding, default_direction, population_loss
from .ranges import FULL_LENGTH
from .transformer import MarkovTransformer, check_attention, check_width

__all__ = ["FULL_MODELS", "MarkovFullModel", "full_model"]


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
            default :data:`~gradflow.systems.markov.ranges.FULL_LENGTH`, whose metric is the
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
        if self.reduced.full is None or not isinstance(self.reduced.full.embed, ReducedEmbedding):
            raise GradflowError(
                f"model {self.reduced.name!r} has no embedding into the Markov transformer"
            )
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

    @property
    def embedding(self) -> ReducedEmbedding:
        """The declared full model's embedding (called here with these settings)."""
        return self.reduced.full.embed

    def embed(self, theta: Float[Array, " dim"], h: Float[Array, " 2"]) -> MarkovTransformer:
        """The rank-one weights at ``θ`` (:class:`~gradflow.systems.markov.embedding.ReducedEmbedding`)."""
        return self.embedding(
            theta, h, length=self.length, direction=self.direction, attention=self.attention
        )

    def loss(self, params: MarkovTransformer, h: Float[Array, " 2"]) -> Float[Array, ""]:
        """:func:`~gradflow.systems.markov.embedding.population_loss`, nats."""
        return population_loss(params, h)

    def project(self, params: MarkovTransformer) -> Float[Array, " dim"]:
        """:meth:`ReducedEmbedding.project`: the canonical coordinates along ``α``, restricted to
        the reduced model's (``e`` keeps its sign along ``α``)."""
        return self.embedding.project(params)

    def metric(self, theta: Float[Array, " dim"], h: Float[Array, " 2"]) -> Float[Array, "dim dim"]:
        """``G = D + u uᵀ`` in closed form (:meth:`ReducedEmbedding.metric`)."""
        return self.embedding.metric(theta, h, length=self.length)

    @functools.cached_property
    def value(self) -> FullModel:
        """This full model at its settings as one :class:`gradflow.FullModel` (what follows from
        it: the pulled-back gradient, the projection, the distance from the family)."""
        return FullModel(self.embed, self.loss, metric=self.metric, project=self.project)


FULL_MODELS: tuple[str, ...] = tuple(
    name
    for name, entry in MODELS.items()
    if entry.full and entry.factory.startswith(f"{__package__}.")
)
"""Every reduced model of the Markov transformer, by name, in the order of :data:`MODELS` (the
entries of this system with a full model)."""


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
