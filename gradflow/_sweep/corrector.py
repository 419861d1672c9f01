"""The numerics continuation runs on one landscape: Newton's method on ``∇L = 0`` (the
corrector), the implicit-function tangent (the first predictor), the Morse index and whether the
Hessian is singular, a point moved onto a closed-form set, and bisection in the hyperparameter.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from .._critical.pieces import GRADIENT_TOL
from .._landscape.base import Landscape

__all__ = [
    "H_TOL",
    "Family",
    "bisect",
    "morse_index",
    "newton",
    "on_set",
    "singular",
    "tangent",
]

H_TOL = 1e-7
"""Width of the bracket in the hyperparameter at which bisection stops (the issue's 1e-6 with a
margin: the reported value is the bracket's middle)."""
NEWTON_STEPS = 80
"""Newton iterations of one corrector step (linear convergence at a degenerate point needs
more than the quadratic case)."""
STEP_TOL = 1e-11
"""A Newton run has converged when its last step is below this (relative to ``1 + |θ|``) and
``‖∇L‖ ≤ GRADIENT_TOL``."""
MORSE_ZERO = 1e-12
"""In :func:`morse_index`, an eigenvalue counts as negative below ``-MORSE_ZERO · max(1, max|λ|)``
(rounding only: near a bifurcation the eigenvalue that crosses zero is tiny)."""
FOLD_EIGENVALUE = 1e-2
"""At a fold the Hessian is singular: where the smallest ``|λ|`` at the located point exceeds
this fraction of the largest, a branch was lost by the corrector and no fold is reported."""

Family = Callable[[Mapping[str, float]], Landscape]
"""The landscape at given hyperparameter values (e.g. ``lambda v: model.bind(**v)``)."""


def morse_index(landscape: Landscape, point: np.ndarray) -> int:
    """The number of negative eigenvalues of ``∇²L`` at ``point`` (shape ``(dim,)``), ``-1``
    where the Hessian is not finite."""
    with np.errstate(all="ignore"):
        h = landscape.hessian(point[None])[0]
    if not np.all(np.isfinite(h)):
        return -1
    lam = np.linalg.eigvalsh(h)
    return int(np.sum(lam < -MORSE_ZERO * max(1.0, float(np.abs(lam).max()))))


def on_set(landscape: Landscape, name: str, sample: np.ndarray) -> np.ndarray | None:
    """The point of the closed-form set ``name`` with the free coordinates of ``sample``."""
    families = landscape.set_families
    for piece in landscape.closed_forms:
        if families.get(piece.name, piece.name) != name:
            continue
        full, ok = piece.complete(sample[list(piece.free)][None])
        if ok[0] and np.all(np.isfinite(full[0])):
            return full[0]
    return None


def bisect(test: Callable[[float], bool], h_true: float, h_false: float) -> float:
    """The middle of the bracket, narrowed to :data:`H_TOL`, where ``test`` turns false."""
    while abs(h_false - h_true) > H_TOL:
        mid = 0.5 * (h_true + h_false)
        if test(mid):
            h_true = mid
        else:
            h_false = mid
    return 0.5 * (h_true + h_false)


def newton(
    landscape: Landscape, starts: np.ndarray, steps: int = NEWTON_STEPS
) -> tuple[np.ndarray, np.ndarray]:
    """Newton's method on ``∇L = 0`` from each start (least squares where ``H`` is singular),
    at most ``steps`` iterations.

    Returns the points, shape ``(m, dim)``, and where each converged: finite, the last step below
    :data:`STEP_TOL` and ``‖∇L‖ ≤ GRADIENT_TOL``.
    """
    x = np.array(starts, dtype=float)
    step = np.full(len(x), np.inf)
    with np.errstate(all="ignore"):
        for _ in range(steps):
            g = landscape.grad(x)
            h = landscape.hessian(x)
            bad = ~np.all(np.isfinite(h), axis=(1, 2)) | ~np.all(np.isfinite(g), axis=1)
            h[bad], g[bad] = np.eye(x.shape[1]), 0.0
            delta = np.einsum("mij,mj->mi", np.linalg.pinv(h, rcond=1e-13, hermitian=True), g)
            delta[bad] = np.nan
            x = x - delta
            step = np.linalg.norm(delta, axis=1)
            if not np.any(step > STEP_TOL * (1 + np.linalg.norm(x, axis=1))):
                break
        g = np.linalg.norm(landscape.grad(x), axis=1)
    ok = np.all(np.isfinite(x), axis=1) & (g <= GRADIENT_TOL)
    ok &= step <= np.sqrt(STEP_TOL) * (1 + np.linalg.norm(x, axis=1))
    return x, ok


def tangent(
    family: Family, values: Mapping[str, float], axis: str, points: np.ndarray
) -> np.ndarray:
    """``dθ/dh = -H⁻¹ ∂ₕ∇L`` at each point (central differences in ``h``; zero where ``H`` is
    singular)."""
    h = float(values[axis])
    delta = 1e-6 * max(1.0, abs(h))
    plus = family({**values, axis: h + delta}).grad(points)
    minus = family({**values, axis: h - delta}).grad(points)
    dg = (plus - minus) / (2 * delta)
    hess = family(values).hessian(points)
    with np.errstate(all="ignore"):
        out = -np.einsum("mij,mj->mi", np.linalg.pinv(hess, rcond=1e-8, hermitian=True), dg)
    return np.where(np.isfinite(out), out, 0.0)


def singular(landscape: Landscape, point: np.ndarray) -> bool:
    """Whether the Hessian at ``point`` is (nearly) singular."""
    with np.errstate(all="ignore"):
        lam = np.abs(np.linalg.eigvalsh(landscape.hessian(point[None])[0]))
    return bool(np.all(np.isfinite(lam)) and lam.min() <= FOLD_EIGENVALUE * max(lam.max(), 1e-300))
