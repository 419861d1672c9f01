"""Where the flow of a canonical Markov model goes from initializations ``θ0 = r u`` on rays from
the origin: the fraction of directions ``u`` that reach the global minimum, as a function of the
initialization scale ``r``.

For the canonical models every critical set other than the global minima has loss ``H(π)``
(``Φ(0)``, see ``docs/systems/markov.md``), so a trajectory whose loss falls below
``H(π)`` can only end at a global minimum: it is stopped there and labelled ``global``
(:func:`gradflow.flow_endpoints` with ``decide_below``).  The others are labelled ``unigram`` if
they reach a steady state at loss ``H(π)``, else ``other`` (budget exhausted, diverged).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gradflow import BoundModel, GradflowError, Outcome, default_basin_options, flow_endpoints

__all__ = ["OUTCOMES", "RayOutcomes", "ray_outcomes", "sphere_directions"]

OUTCOMES = ("global", "unigram", "other")


@dataclass(frozen=True)
class RayOutcomes:
    """Outcomes of the flow from ``r u`` for every direction ``u`` and radius ``r``.

    Attributes:
        radii: shape ``(m,)``.
        directions: unit vectors, shape ``(k, dim)``.
        labels: indices into :data:`OUTCOMES`, shape ``(k, m)``.
    """

    radii: np.ndarray
    directions: np.ndarray
    labels: np.ndarray

    def fraction(self, outcome: str) -> np.ndarray:
        """Fraction of the directions with ``outcome`` at each radius, shape ``(m,)``."""
        return np.mean(self.labels == OUTCOMES.index(outcome), axis=0)


def sphere_directions(count: int, dim: int, seed: int = 0) -> np.ndarray:
    """``count`` unit vectors uniform on the sphere in ``R^dim`` (seeded), shape ``(count, dim)``."""
    x = np.random.default_rng(seed).standard_normal((count, dim))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def ray_outcomes(bound: BoundModel, directions: np.ndarray, radii: np.ndarray) -> RayOutcomes:
    """Integrate the flow from ``r u`` for all directions ``u`` and radii ``r``.

    Args:
        bound: a canonical Markov model (critical values ``H(π)`` and the entropy rate only).
        directions: unit vectors, shape ``(k, dim)``.
        radii: initialization scales, shape ``(m,)``, positive.

    Raises:
        GradflowError: a model without ``unigram_loss`` reference, bad shapes or radii.
    """
    if "unigram_loss" not in bound.references:
        raise GradflowError(f"model {bound.model.name!r} has no unigram loss H(π) to decide with")
    directions = np.atleast_2d(np.asarray(directions, float))
    radii = np.asarray(radii, float)
    if directions.shape[1] != bound.model.dim or radii.ndim != 1 or not np.all(radii > 0):
        raise GradflowError(
            f"directions must have shape (k, {bound.model.dim}) and radii be positive, got "
            f"{directions.shape} and {radii.shape}"
        )
    h_pi = bound.references["unigram_loss"]
    starts = (radii[None, :, None] * directions[:, None, :]).reshape(-1, bound.model.dim)
    result = flow_endpoints(
        bound, starts, default_basin_options(), decide_below=h_pi - 1e-9 * max(1.0, h_pi)
    )
    losses = bound.loss(result.endpoints)
    labels = np.full(len(starts), OUTCOMES.index("other"))
    labels[result.status == Outcome.GLOBAL_MIN] = OUTCOMES.index("global")
    at_unigram = (result.status == Outcome.CONVERGED) & (np.abs(losses - h_pi) <= 1e-7)
    labels[at_unigram] = OUTCOMES.index("unigram")
    return RayOutcomes(
        radii=radii, directions=directions, labels=labels.reshape(len(directions), -1)
    )
