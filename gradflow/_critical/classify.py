"""Classification of critical points: minimum, saddle (Morse index), maximum, degenerate.

The Hessian spectrum decides wherever it can.  Where it has zero eigenvalues — always the case
on a non-isolated critical set, and at degenerate saddles such as the canonical model's
``(0, -1/√2)`` where the whole Hessian vanishes — the loss is probed along the null space: a
Morse–Bott set is flat along it, a degenerate saddle is not.  A critical point whose loss equals
a proven lower bound of ``L`` is a global minimizer, whatever its Hessian; nothing else is.

A point whose Hessian is positive definite is probed in every direction too: at a kink of a
loss that is only C¹ (``x|x|``, whose Hessian ``2 sign(x)`` jumps at ``x = 0``) a point on the
side where the Hessian is positive would otherwise be called a minimum while the loss falls on
the other side; the loss around the point, not the Hessian of one side, decides.

A Hessian is never read where it is not finite (a ``0/0`` in the symbolic second derivative,
as in ``(x² + y²)^{3/2}`` at the origin): there it is taken by central finite differences of
``∇L``, and where that fails too, the loss alone is probed in every direction.  Each point
records which way its Hessian was obtained.  Everything is vectorized over the points, so a
basin map can classify tens of thousands of endpoints at once.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from .._landscape.base import Landscape
from .._landscape.scales import loss_scales
from .._outcome import KINDS, Kind

__all__ = ["Classification", "classify_points", "hessians", "local_curvature"]

ZERO_EIGENVALUE = 1e-7
"""An eigenvalue is zero when ``|λ| ≤ ZERO_EIGENVALUE · max(c, max|λ|)``, ``c`` the curvature the
loss shows around the point (:func:`local_curvature`)."""
PROBE_RADIUS = 1e-2
"""Step along the Hessian's null space at which the loss is probed (parameter units)."""
PROBE_LOSS = 1e-12
"""A probed loss differs from the critical value when ``|ΔL| > PROBE_LOSS · max(s, |L|)``, ``s``
the loss scale."""
GLOBAL_LOSS = 1e-9
"""A critical point is global when ``|L - L_global| ≤ GLOBAL_LOSS · max(s, |L|)``, ``s`` the loss
scale."""
FD_STEP = 1e-6
"""Step of the central differences of ``∇L`` that replace a non-finite Hessian (relative to
``max(1, |θ|)``)."""
HESSIAN_METHODS = (
    "automatic differentiation",
    f"finite differences of ∇L (step {FD_STEP:g})",
    "loss probes",
)
"""How a point's Hessian was obtained, in order of preference."""


@dataclass(frozen=True)
class Classification:
    """Classification of ``n`` critical points.

    Attributes:
        kinds: a :class:`~gradflow.Kind` per point, shape ``(n,)`` (an object array).
        eigenvalues: Hessian eigenvalues, ascending, shape ``(n, dim)``.
        morse_index: number of negative eigenvalues, shape ``(n,)``.
        nullity: number of zero eigenvalues (the dimension of a Morse–Bott set), shape ``(n,)``.
        hessian_method: one of :data:`HESSIAN_METHODS` per point, shape ``(n,)``.
    """

    kinds: np.ndarray
    eigenvalues: np.ndarray
    morse_index: np.ndarray
    nullity: np.ndarray
    hessian_method: np.ndarray


def hessians(landscape: Landscape, thetas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hessians at ``thetas`` (shape ``(n, dim)``) and how each was obtained.

    Returns:
        ``(H, method)``: ``H`` of shape ``(n, dim, dim)``, NaN where neither automatic nor
        finite differences give a finite matrix; ``method`` indices into
        :data:`HESSIAN_METHODS`, shape ``(n,)``.
    """
    n, dim = thetas.shape
    with np.errstate(all="ignore"):
        h = np.array(landscape.hessian(thetas)) if n else np.zeros((0, dim, dim))
    method = np.zeros(n, dtype=int)
    bad = np.flatnonzero(~np.all(np.isfinite(h), axis=(1, 2)))
    if bad.size:
        step = FD_STEP * np.maximum(1.0, np.abs(thetas[bad]).max(axis=1))
        offsets = step[:, None, None] * np.eye(dim)[None]
        plus = thetas[bad, None, :] + offsets
        minus = thetas[bad, None, :] - offsets
        with np.errstate(all="ignore"):
            diff = (landscape.grad(plus) - landscape.grad(minus)) / (2 * step[:, None, None])
        fd = 0.5 * (diff + np.swapaxes(diff, 1, 2))
        finite = np.all(np.isfinite(fd), axis=(1, 2))
        h[bad] = np.where(finite[:, None, None], fd, np.nan)
        method[bad] = np.where(finite, 1, 2)
    return h, method


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
    landscape: Landscape, thetas: np.ndarray, global_min_loss: float | None
) -> Classification:
    """Classify critical points ``thetas`` (shape ``(n, dim)``) of ``landscape``.

    Args:
        landscape: the loss.
        thetas: points where ``∇L = 0``.
        global_min_loss: a proven lower bound of ``L``, or ``None`` (then no point is labelled
            ``global_min``).

    Returns:
        The kinds, Hessian spectra, Morse indices, nullities and Hessian methods.
    """
    dim = landscape.dim
    thetas = np.asarray(thetas, dtype=np.float64).reshape(-1, dim)
    h, method = hessians(landscape, thetas)
    probed = method == 2
    lam, vec = np.linalg.eigh(np.where(probed[:, None, None], 0.0, h))
    lam[probed] = np.nan
    vec[probed] = np.eye(dim)
    losses = landscape.loss(thetas)
    scales = loss_scales(landscape)
    with np.errstate(invalid="ignore"):
        largest = np.abs(lam).max(axis=1, initial=0.0)
        curvature = local_curvature(landscape, thetas, losses)
        zero = ZERO_EIGENVALUE * np.fmax(curvature, largest)[:, None]
        null = (np.abs(lam) <= zero) | probed[:, None]
        neg, pos = (lam < -zero).sum(axis=1), (lam > zero).sum(axis=1)
    nullity = null.sum(axis=1)
    decreases, increases = _probe(
        landscape, thetas, losses, vec, null, (nullity > 0) & ~((neg > 0) & (pos > 0))
    )
    looks_min = (pos > 0) & (neg == 0) & (nullity == 0)
    decreases |= _probe(landscape, thetas, losses, vec, np.ones_like(null), looks_min)[0]
    choices = [
        Kind.SADDLE,
        Kind.SADDLE,
        Kind.LOCAL_MIN,
        Kind.SADDLE,
        Kind.LOCAL_MAX,
        Kind.SADDLE,
        Kind.LOCAL_MAX,
        Kind.LOCAL_MIN,
    ]
    codes = np.select(
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
        [k.code for k in choices],
        Kind.DEGENERATE.code,
    )
    kinds = np.array(KINDS, dtype=object)[codes]
    if global_min_loss is not None:
        is_global = np.abs(losses - global_min_loss) <= GLOBAL_LOSS * np.maximum(
            scales.loss, np.abs(losses)
        )
        kinds[is_global] = Kind.GLOBAL_MIN
    return Classification(
        kinds=kinds,
        eigenvalues=lam,
        morse_index=neg,
        nullity=nullity,
        hessian_method=np.asarray(HESSIAN_METHODS, dtype=object)[method],
    )


def local_curvature(landscape: Landscape, thetas: np.ndarray, losses: np.ndarray) -> np.ndarray:
    """The curvature the loss shows around each point: ``max_u 2|L(θ + r u) − L(θ)| / r²`` over
    the unit directions ``u`` of :func:`_probe_coefficients` (coordinate axes, circles in the
    coordinate planes, seeded random directions), ``r`` = :data:`PROBE_RADIUS`, shape ``(n,)``
    (loss units per squared parameter unit; NaN terms are ignored).

    It is the scale against which a Hessian eigenvalue is zero.  A scale of the whole loss will
    not do: where ``‖∇L‖`` spans many orders of magnitude over the default ranges
    (``exp((x² + y² − 1)²)`` on ``[−3, 3]²``), any statistic of it is set by the far corners and
    every eigenvalue on the circle of minima would read as zero.  Where the Hessian vanishes
    (a monkey saddle, the origin of ``(1 − abc)²``) the loss still varies at third or fourth
    order within ``r`` in some direction, so rounding in the Hessian's entries still reads as
    zero; ``c·L`` has ``c`` times the curvature, so the test does not depend on the loss's scale.
    """
    coef = _probe_coefficients(thetas.shape[1])
    steps = PROBE_RADIUS * coef / np.linalg.norm(coef, axis=1, keepdims=True)
    with np.errstate(all="ignore"):
        delta = landscape.loss(thetas[:, None, :] + steps[None]) - losses[:, None]
        delta = np.where(np.isfinite(delta), np.abs(delta), 0.0)
    return delta.max(axis=1, initial=0.0) * 2 / PROBE_RADIUS**2


def _probe(
    landscape: Landscape,
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
    delta = landscape.loss(probes) - losses[idx, None]
    tol = PROBE_LOSS * np.maximum(loss_scales(landscape).loss, np.abs(losses[idx]))[:, None]
    decreases[idx] = (delta < -tol).any(axis=1)
    increases[idx] = (delta > tol).any(axis=1)
    return decreases, increases
