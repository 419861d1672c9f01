"""When each layer of the transformer forms its attention pattern: the previous-token head of
layer 1 and the induction head of layer 2.

Scores of a model on sequences ``x (n, T)`` (:func:`layer_scores`), each an attention mass in
``[0, 1]`` averaged over sequences and positions:

- layer 1, *previous token*: the mass position ``i ≥ 1`` puts on position ``i − 1``;
- layer 2, *induction*: the mass position ``i`` puts on the positions ``s ≤ i`` whose previous
  token equals the current one, ``prev(s) = x_i``, with ``prev(s) = x_{s−1}`` and
  ``prev(0) = x_0`` (without absolute positions the first position reads as preceded by its own
  token: :func:`~gradflow.systems.induction_heads.transformer.doubled_first_token`), over the
  positions that have at least one such ``s``.

The hand-built induction head (:func:`~gradflow.systems.induction_heads.transformer.induction_head`)
scores 1 on both; uniform causal attention scores the chance levels, ``mean_{i ≥ 1} 1/(i + 1)``
and ``mean_i #{s ≤ i : prev(s) = x_i}/(i + 1)``.

A layer has *formed* (:func:`formation_step`) at the first evaluation where its score has covered
half of its rise, ``s_0 + ½ (max s − s_0)``; the rise itself is reported beside it, so a layer
that never leaves chance is seen as such. Edelman et al. (2024), Fig. 2, report that the second
layer's pattern forms before the first layer's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np

if TYPE_CHECKING:
    from .transformer import ICLTransformer

__all__ = ["LAYERS", "formation_step", "layer_scores"]

LAYERS = ("previous token (layer 1)", "induction (layer 2)")
"""The names of the two scores, in :func:`layer_scores` order."""


def layer_scores(model: ICLTransformer, x: jax.Array) -> jax.Array:
    """The previous-token score of layer 1 and the induction score of layer 2 (module
    docstring), shape ``(2,)``, for tokens ``x (n, T)``, ``T ≥ 2``."""
    T = x.shape[1]
    rows, cols = jnp.arange(T)[:, None], jnp.arange(T)[None, :]

    def one(seq: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        first, second = model.trace(seq).patterns
        previous = jnp.sum(jnp.where(cols == rows - 1, first, 0.0), axis=1)[1:]
        prev = jnp.concatenate([seq[:1], seq[:-1]])
        match = (prev[None, :] == seq[:, None]) & (cols <= rows)
        return previous, jnp.sum(jnp.where(match, second, 0.0), axis=1), match.any(axis=1)

    previous, induction, matched = jax.vmap(one)(x)
    return jnp.stack([previous.mean(), jnp.sum(induction * matched) / jnp.sum(matched)])


def formation_step(steps: np.ndarray, scores: np.ndarray) -> tuple[float, float, float]:
    """``(step, s_0, max s)`` of one layer: the first evaluation step at which the score
    reaches ``s_0 + ½ (max s − s_0)`` (module docstring), from ``steps (n,)`` and
    ``scores (n,)``; NaN for the step where the score never rises above its start."""
    scores = np.asarray(scores, float)
    start, top = float(scores[0]), float(scores.max())
    if top <= start:
        return float("nan"), start, top
    reached = np.nonzero(scores >= start + 0.5 * (top - start))[0]
    return float(np.asarray(steps)[reached[0]]), start, top
