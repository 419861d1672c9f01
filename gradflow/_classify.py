"""Classification of critical points: minimum, saddle (Morse index), maximum, degenerate.

The Hessian spectrum decides wherever it can.  Where it has zero eigenvalues — always the case
on a non-isolated critical set, and at degenerate saddles such as the canonical model's
``(0, -1/√2)`` where the whole Hessian vanishes — the loss is probed along the null space: a
Morse–Bott set is flat along it, a degenerate saddle is not.  A critical point whose loss equals
the global minimum loss is a global minimizer, whatever its Hessian.  Everything is vectorized
over the points, so a basin map can classify tens of thousands of endpoints at once.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ._bound import BoundModel

__all__ = ["KINDS", "Classification", "classify_points"]

KINDS = ("global_min", "local_min", "saddle", "local_max", "degenerate")
"""The kinds of critical points and sets, in reporting order."""

ZERO_EIGENVALUE = 1e-7
"""An eigenvalue is zero when ``|λ| ≤ ZERO_EIGENVALUE · max(1, max|λ|)``."""
PROBE_RADIUS = 1e-2
"""Step along the Hessian's null space at which the loss is probed (parameter units)."""
PROBE_LOSS = 1e-12
"""A probed loss differs from the critical value when ``|ΔL| > PROBE_LOSS · max(1, |L|)``."""
GLOBAL_LOSS = 1e-9
"""A critical point is global when ``|L - L_global| ≤ GLOBAL_LOSS · max(1, |L|)`` (nats)."""


@dataclass(frozen=True)
class Classification:
    """Classification of ``n`` critical points.

    Attributes:
        kinds: one of :data:`KINDS` per point, shape ``(n,)``.
        eigenvalues: Hessian eigenvalues, ascending, shape ``(n, dim)``.
        morse_index: number of negative eigenvalues, shape ``(n,)``.
        nullity: number of zero eigenvalues (the dimension of a Morse–Bott set), shape ``(n,)``.
    """

    kinds: np.ndarray
    eigenvalues: np.ndarray
    morse_index: np.ndarray
    nullity: np.ndarray


def _probe_coefficients(dim: int) -> np.ndarray:
    """Directions in eigenvector coordinates: ±axes, 16 per coordinate plane (dim ≤ 4), 16 random."""
    rows = [np.eye(dim), -np.eye(dim)]
    if dim <= 4:
        angles = np.linspace(0, 2 * np.pi, 16, endpoint=False)
        for i, j in itertools.combinations(range(dim), 2):
            plane = np.zeros((16, dim))
            plane[:, i], plane[:, j] = np.cos(angles), np.sin(angles)
            rows.append(plane)
    rows.append(np.random.default_rng(0).standard_normal((16, dim)))
    return np.concatenate(rows)


def classify_points(
    model: BoundModel, thetas: np.ndarray, global_min_loss: float | None
) -> Classification:
    """Classify critical points ``thetas`` (shape ``(n, dim)``) of ``model``.

    Args:
        model: the model at fixed hyperparameters.
        thetas: points where ``∇L = 0``.
        global_min_loss: ``inf L`` in nats, or ``None`` if unknown (then no point is labelled
            ``global_min`` here).

    Returns:
        The kinds, Hessian spectra, Morse indices and nullities.
    """
    dim = model.model.dim
    thetas = np.asarray(thetas, dtype=np.float64).reshape(-1, dim)
    lam, vec = np.linalg.eigh(model.hessian(thetas))
    losses = model.loss(thetas)
    zero = ZERO_EIGENVALUE * np.maximum(1.0, np.abs(lam).max(axis=1, initial=0.0))[:, None]
    null = np.abs(lam) <= zero
    neg, pos = (lam < -zero).sum(axis=1), (lam > zero).sum(axis=1)
    nullity = null.sum(axis=1)
    decreases, increases = _probe(
        model, thetas, losses, vec, null, (nullity > 0) & ~((neg > 0) & (pos > 0))
    )
    kinds = np.select(
        [
            (neg > 0) & (pos > 0),
            (pos > 0) & decreases,
            pos > 0,
            (neg > 0) & increases,
            neg > 0,
            decreases & increases,
            decreases,
            increases,
        ],
        [
            "saddle",
            "saddle",
            "local_min",
            "saddle",
            "local_max",
            "saddle",
            "local_max",
            "local_min",
        ],
        "degenerate",
    ).astype(object)
    if global_min_loss is not None:
        is_global = np.abs(losses - global_min_loss) <= GLOBAL_LOSS * np.maximum(
            1.0, np.abs(losses)
        )
        kinds[is_global] = "global_min"
    return Classification(kinds=kinds, eigenvalues=lam, morse_index=neg, nullity=nullity)


def _probe(
    model: BoundModel,
    thetas: np.ndarray,
    losses: np.ndarray,
    vec: np.ndarray,
    null: np.ndarray,
    needed: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Whether the loss decreases / increases somewhere along each point's Hessian null space."""
    n, dim = thetas.shape
    decreases, increases = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    idx = np.flatnonzero(needed)
    if not idx.size:
        return decreases, increases
    coef = _probe_coefficients(dim)[None] * null[idx, None, :]
    norms = np.linalg.norm(coef, axis=2, keepdims=True)
    coef = np.divide(coef, norms, out=np.zeros_like(coef), where=norms > 0)
    directions = np.einsum("pkj,pij->pki", coef, vec[idx])
    probes = thetas[idx, None, :] + PROBE_RADIUS * directions
    delta = model.loss(probes) - losses[idx, None]
    tol = PROBE_LOSS * np.maximum(1.0, np.abs(losses[idx]))[:, None]
    decreases[idx] = (delta < -tol).any(axis=1)
    increases[idx] = (delta > tol).any(axis=1)
    return decreases, increases
