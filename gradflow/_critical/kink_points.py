"""Critical points on the kinks of a non-smooth loss: Clarke stationarity, and their kinds.

Where ``∇L`` jumps across a kink, ``∇L = 0`` may hold nowhere near a minimum: ``|x| + y²`` has
its minimum at the origin, where the gradient is ``(±1, 0)``.  The right notion is Clarke's: a
point is **stationary** when ``0 ∈ ∂L(θ)``, the Clarke subdifferential, which for a loss that is
smooth on each side of its kinks is the convex hull of the limits of ``∇L`` from the smooth
pieces meeting at ``θ`` (F. H. Clarke, *Optimization and Nonsmooth Analysis*, 1983, Thm. 2.5.1);
every local minimum or maximum of a locally Lipschitz loss is one (ibid., Prop. 2.3.2).

**Search.**  For every set ``S`` of kinks that may meet at a point (at most ``dim`` and
:data:`MAX_ACTIVE` of them), Levenberg–Marquardt from seeded starts in the box on

    r_S(θ) = ( P_S(θ) ∇L(θ) / g ,  k_S(θ) / (‖∇k_S(θ)‖ ℓ) ),

``k_S`` the kink functions (zero on the kinks: ``u`` for ``|u|``, ``a − b`` for
``max(a, b)``), ``P_S`` the projection off their gradients, ``g`` and ``ℓ`` the loss's gradient
and length scales.  On the kinks the one-sided gradients differ only along ``∇k_i``, so
``P_S ∇L`` is the same from every side, and it vanishes where ``L`` restricted to the kinks is
stationary — necessary for ``0 ∈ ∂L``.  A root is kept where ``0 ∈ ∂L`` holds: the point of
least norm of the convex hull of the gradients sampled on a small sphere around it (from every
side of every kink through it; nonnegative least squares) is below :data:`CLARKE_TOL` ``· g``.

**Kinds**, as stratified Morse theory reads them (M. Goresky, R. MacPherson, *Stratified Morse
Theory*, 1988): along the kinks through the point ``L`` is smooth, and its Hessian there (second
differences on the kinks) gives the tangential index and nullity; across each kink the loss
rises on both sides (a V, as ``|x|``: index 0) or falls on both (a Λ, as ``−|x|``: index 1).
The Morse index is the sum; ``0`` is a minimum, ``dim`` a maximum, anything between a saddle.
Where a tangential eigenvalue vanishes or a side is flat, the loss is probed in every direction,
as :func:`gradflow._critical.classify.classify_points` does along a Hessian's null space.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.optimize import nnls

from .._landscape.base import Landscape
from .._landscape.scales import LossScales, loss_scales
from .._outcome import Kind
from .classify import (
    GLOBAL_LOSS,
    PROBE_LOSS,
    PROBE_RADIUS,
    ROUNDING,
    Classification,
    local_curvature,
)
from .clusters import numerical_sets
from .sets import CriticalSet

__all__ = [
    "CLARKE_TOL",
    "KINK_METHOD",
    "KINK_STARTS",
    "MAX_ACTIVE",
    "classify_kink_points",
    "kink_points",
    "kink_sets",
]

KINK_STARTS = 64
"""Seeded starts of the search on each set of kinks."""
MAX_ACTIVE = 3
"""At most this many kinks are searched for a common point."""
LM_STEPS = 100
"""Levenberg–Marquardt steps of each start."""
FD_STEP = 1e-7
"""Forward-difference step of the residual's Jacobian (relative to ``max(1, |θ_j|)``)."""
ON_KINK = 1e-9
"""A point is on a kink when ``|k| / ‖∇k‖ ≤ ON_KINK · ℓ``."""
TANGENTIAL_TOL = 1e-6
"""A root of the search has ``‖P_S ∇L‖ ≤ TANGENTIAL_TOL · g`` (the Clarke test then decides)."""
CLARKE_TOL = 1e-6
"""``0 ∈ ∂L`` when the sampled hull of the one-sided gradients comes within ``CLARKE_TOL · g``
of 0."""
SPHERE = 1e-8
"""Radius (times ``ℓ``) of the sphere on which the one-sided gradients are sampled: their
smooth variation over it, ``≈ SPHERE · g``, stays far below :data:`CLARKE_TOL` ``· g``."""
NORMAL_STEP = 1e-6
"""Step (times ``ℓ``) across a kink at which its V or Λ shape is read."""
TANGENT_STEP = 1e-3
"""Step (times ``ℓ``) of the second differences along the kinks."""
ZERO_EIGENVALUE = 1e-6
"""A tangential eigenvalue is zero when ``|λ| ≤ ZERO_EIGENVALUE · max(max|λ|, s/ℓ²)``."""
KINK_METHOD = "on a kink: Hessian along it, one-sided slopes across it"
"""The ``hessian_method`` of a point on a kink."""


def kink_sets(
    landscape: Landscape,
    box: np.ndarray,
    global_loss: float | None,
    starts: int = KINK_STARTS,
    seed: int = 0,
) -> list[CriticalSet]:
    """The Clarke-stationary sets on the kinks of ``landscape`` in ``box`` (shape ``(dim, 2)``;
    a pinned coordinate stays pinned), classified and grouped as numerical solutions are
    (:func:`gradflow._critical.clusters.numerical_sets`), one name per set of kinks through them
    (``"kink of Abs(x)"``).  Empty for a loss without kinks across which ``∇L`` jumps."""
    points = kink_points(landscape, box, starts, seed)
    if not len(points):
        return []
    terms = landscape.nonsmooth_terms
    active = _active(landscape, points)
    out: list[CriticalSet] = []
    for pattern in sorted({tuple(row) for row in active}):
        members = points[np.all(active == pattern, axis=1)]
        names = ", ".join(t for t, on in zip(terms, pattern) if on)
        out += numerical_sets(
            landscape,
            members,
            global_loss,
            box,
            classify=classify_kink_points,
            name=f"kink of {names}",
            equation=f"0 ∈ ∂L on the kink of {names}",
        )
    return out


def kink_points(landscape: Landscape, box: np.ndarray, starts: int, seed: int) -> np.ndarray:
    """Clarke-stationary points on the kinks in ``box``, one row per distinct root, shape
    ``(n, dim)`` (module docstring)."""
    terms = landscape.nonsmooth_terms
    dim = landscape.dim
    if not terms or starts <= 0:
        return np.zeros((0, dim))
    scales = loss_scales(landscape)
    free = box[:, 0] < box[:, 1]
    rng = np.random.default_rng(seed)
    found = []
    for size in range(1, min(len(terms), int(free.sum()), MAX_ACTIVE) + 1):
        for subset in itertools.combinations(range(len(terms)), size):
            y0 = rng.uniform(box[:, 0], box[:, 1], size=(starts, dim))
            ys = _solve(landscape, list(subset), y0, free, scales.gradient, scales.length)
            found.append(ys)
    ys = np.concatenate(found)
    with np.errstate(all="ignore"):
        pad = 1e-9 * (box[:, 1] - box[:, 0])
        inside = np.all(np.isfinite(ys), axis=1) & np.all(
            (ys >= box[:, 0] - pad) & (ys <= box[:, 1] + pad), axis=1
        )
    ys = np.clip(ys[inside], box[:, 0], box[:, 1])
    if not len(ys):
        return ys
    _, first = np.unique(np.round(ys / (1e-9 * scales.length)), axis=0, return_index=True)
    ys = ys[np.sort(first)]
    stationary = np.array([_clarke_stationary(landscape, y) for y in ys], dtype=bool)
    return ys[stationary]


def _residual(
    landscape: Landscape, ys: np.ndarray, subset: list[int], g: float, length: float
) -> np.ndarray:
    """``r_S`` at ``ys`` (shape ``(n, dim)``), shape ``(n, dim + |S|)``."""
    with np.errstate(all="ignore"):
        k, dk = landscape.kink_values(ys)
        k, dk = k[:, subset], dk[:, subset]
        norms = np.linalg.norm(dk, axis=2)
        grad = landscape.grad(ys)
        tangential = grad - np.einsum("nij,nj->ni", _normal_projector(dk), grad)
        distance = np.divide(k, norms * length, out=np.full_like(k, np.inf), where=norms > 0)
    return np.concatenate([tangential / g, distance], axis=1)


def _normal_projector(dk: np.ndarray) -> np.ndarray:
    """The orthogonal projector onto the span of the rows of each ``dk[n]`` (shape
    ``(n, c, dim)``), shape ``(n, dim, dim)``."""
    return np.linalg.pinv(dk) @ dk


def _solve(
    landscape: Landscape,
    subset: list[int],
    y0: np.ndarray,
    free: np.ndarray,
    g: float,
    length: float,
) -> np.ndarray:
    """Levenberg–Marquardt on ``r_S`` from every row of ``y0``, then Newton steps onto the kinks
    of ``subset``; the roots with a small residual (others are NaN), shape ``(n, dim)``."""
    y = np.array(y0, dtype=float)
    n, dim = y.shape
    r = _residual(landscape, y, subset, g, length)
    cost = np.sum(r**2, axis=1)
    mu = np.full(n, 1e-3)
    columns = np.flatnonzero(free)
    for _ in range(LM_STEPS):
        jac = np.zeros((n, r.shape[1], dim))
        for j in columns:
            h = FD_STEP * np.maximum(1.0, np.abs(y[:, j]))
            shifted = y.copy()
            shifted[:, j] += h
            jac[:, :, j] = (_residual(landscape, shifted, subset, g, length) - r) / h[:, None]
        jtj = np.einsum("nki,nkj->nij", jac, jac)
        jtr = np.einsum("nki,nk->ni", jac, r)
        with np.errstate(all="ignore"):
            damped = jtj + mu[:, None, None] * np.eye(dim)
            ok = np.all(np.isfinite(damped), axis=(1, 2)) & np.all(np.isfinite(jtr), axis=1)
            step = np.zeros_like(y)
            step[ok] = -np.linalg.solve(damped[ok], jtr[ok][..., None])[..., 0]
        step[:, ~free] = 0.0
        trial = y + step
        r_new = _residual(landscape, trial, subset, g, length)
        cost_new = np.sum(r_new**2, axis=1)
        better = np.isfinite(cost_new) & (cost_new < cost)
        y[better], r[better], cost[better] = trial[better], r_new[better], cost_new[better]
        mu = np.where(better, mu / 3.0, mu * 4.0)
        moving = np.linalg.norm(step, axis=1) > 1e-15 * (1.0 + np.linalg.norm(y, axis=1))
        if not np.any(moving & (mu < 1e12)):
            break
    y = _onto_kinks(landscape, y, subset, free)
    r = _residual(landscape, y, subset, g, length)
    with np.errstate(invalid="ignore"):
        good = (np.linalg.norm(r[:, :dim], axis=1) <= TANGENTIAL_TOL) & np.all(
            np.abs(r[:, dim:]) <= ON_KINK, axis=1
        )
    y[~good] = np.nan
    return y


def _onto_kinks(
    landscape: Landscape, y: np.ndarray, subset: list[int], free: np.ndarray, steps: int = 4
) -> np.ndarray:
    """Newton steps ``y ← y − (∇k_S)⁺ k_S`` onto the kinks of ``subset`` (pinned coordinates
    held)."""
    y = np.array(y, dtype=float)
    for _ in range(steps):
        with np.errstate(all="ignore"):
            k, dk = landscape.kink_values(y)
            dk = dk[:, subset] * free
            ok = np.all(np.isfinite(dk), axis=(1, 2)) & np.all(np.isfinite(k[:, subset]), axis=1)
            move = np.zeros_like(y)
            move[ok] = np.einsum("nij,nj->ni", np.linalg.pinv(dk[ok]), k[ok][:, subset])
        y = y - move
    return y


def _active(landscape: Landscape, points: np.ndarray) -> np.ndarray:
    """Which kinks pass through each point, shape ``(n, K)`` (booleans)."""
    length = loss_scales(landscape).length
    k, dk = landscape.kink_values(points)
    norms = np.linalg.norm(dk, axis=2)
    with np.errstate(all="ignore"):
        return (norms > 0) & (np.abs(k) <= 1e3 * ON_KINK * length * norms)


def _sphere(landscape: Landscape, theta: np.ndarray, normals: np.ndarray) -> np.ndarray:
    """Unit directions around ``θ``: ± the coordinate axes, 32 seeded random ones, and every
    sign combination of the normals of the kinks through it (one direction into each region
    they cut), shape ``(m, dim)``."""
    dim = len(theta)
    rows = [np.eye(dim), -np.eye(dim), np.random.default_rng(0).standard_normal((32, dim))]
    for signs in itertools.product((-1.0, 1.0), repeat=len(normals)):
        rows.append((np.asarray(signs) @ normals)[None] if len(normals) else np.zeros((0, dim)))
    directions = np.concatenate(rows)
    norms = np.linalg.norm(directions, axis=1)
    return directions[norms > 0] / norms[norms > 0, None]


def _clarke_stationary(landscape: Landscape, theta: np.ndarray) -> bool:
    """Whether ``0 ∈ ∂L(θ)``: the gradients at ``θ + SPHERE·ℓ·u`` over the directions ``u`` of
    :func:`_sphere` have a convex combination of norm at most :data:`CLARKE_TOL` ``· g``."""
    scales = loss_scales(landscape)
    normals = _unit_normals(landscape, theta)
    directions = _sphere(landscape, theta, normals)
    with np.errstate(all="ignore"):
        grads = landscape.grad(theta + SPHERE * scales.length * directions)
    grads = grads[np.all(np.isfinite(grads), axis=1)]
    if not len(grads):
        return False
    return bool(_hull_distance(grads) <= CLARKE_TOL * scales.gradient)


def _hull_distance(vectors: np.ndarray) -> float:
    """The least norm of a convex combination of the rows of ``vectors``: nonnegative least
    squares on ``[Vᵀ; w 1ᵀ] λ ≈ [0; w]`` with a heavy weight ``w`` on ``Σλ = 1``."""
    weight = 1e3 * max(1.0, float(np.abs(vectors).max()))
    a = np.vstack([vectors.T, weight * np.ones(len(vectors))])
    b = np.concatenate([np.zeros(vectors.shape[1]), [weight]])
    lam, _ = nnls(a, b, maxiter=50 * len(vectors))
    return float(np.linalg.norm(vectors.T @ (lam / lam.sum())))


def _unit_normals(landscape: Landscape, theta: np.ndarray) -> np.ndarray:
    """The unit gradients of the kink functions of the kinks through ``θ``, shape ``(c, dim)``."""
    active = _active(landscape, theta[None])[0]
    _, dk = landscape.kink_values(theta[None])
    normals = dk[0][active]
    return normals / np.linalg.norm(normals, axis=1, keepdims=True)


def _at_bound(landscape: Landscape, theta: np.ndarray, loss: float, bound: float) -> bool:
    """Whether a kink point's loss equals the proven lower bound: to rounding, plus
    :data:`~gradflow._critical.classify.GLOBAL_LOSS` of the loss's variation within
    :data:`PROBE_RADIUS` (``∇L`` is not defined on the kink, so there is no gradient slack)."""
    curvature = local_curvature(landscape, theta[None], np.array([loss]))
    varies = float(np.nan_to_num(curvature[0])) * PROBE_RADIUS**2 / 2
    return abs(loss - bound) <= GLOBAL_LOSS * varies + ROUNDING * max(abs(loss), abs(bound))


def classify_kink_points(
    landscape: Landscape, thetas: np.ndarray, global_min_loss: float | None
) -> Classification:
    """Classify Clarke-stationary points on kinks (module docstring), as
    :func:`gradflow._critical.classify.classify_points` classifies smooth ones: the eigenvalues are the
    tangential Hessian's, ascending, then NaN for each direction across a kink."""
    dim = landscape.dim
    thetas = np.asarray(thetas, dtype=float).reshape(-1, dim)
    scales = loss_scales(landscape)
    losses = landscape.loss(thetas)
    kinds, eigenvalues, index, nullity = [], [], [], []
    for theta, loss in zip(thetas, losses):
        kind, lam, morse, null = _kind(landscape, theta, float(loss), scales)
        if global_min_loss is not None and _at_bound(
            landscape, theta, float(loss), global_min_loss
        ):
            kind = Kind.GLOBAL_MIN
        kinds.append(kind)
        eigenvalues.append(lam)
        index.append(morse)
        nullity.append(null)
    n = len(thetas)
    return Classification(
        kinds=np.array(kinds, dtype=object),
        eigenvalues=np.array(eigenvalues, dtype=float).reshape(n, dim),
        morse_index=np.array(index, dtype=int),
        nullity=np.array(nullity, dtype=int),
        hessian_method=np.full(n, KINK_METHOD, dtype=object),
    )


def _kind(
    landscape: Landscape, theta: np.ndarray, loss: float, scales: LossScales
) -> tuple[Kind, np.ndarray, int, int]:
    """``(kind, eigenvalues, Morse index, nullity)`` of one point on kinks."""
    length, tol = scales.length, PROBE_LOSS * max(scales.loss, abs(loss))
    active = np.flatnonzero(_active(landscape, theta[None])[0])
    _, dk = landscape.kink_values(theta[None])
    normals = dk[0][active]
    _, sv, vt = np.linalg.svd(normals) if len(normals) else (None, np.zeros(0), np.eye(len(theta)))
    rank = int(np.sum(sv > 1e-12 * max(sv.max(initial=0.0), 1e-300)))
    tangent = vt[rank:]
    falls, flat = 0, False
    for i in range(len(active)):
        others = np.delete(normals, i, axis=0)
        m = normals[i] - (np.linalg.pinv(others) @ others @ normals[i] if len(others) else 0.0)
        if np.linalg.norm(m) == 0:
            continue
        m = m / np.linalg.norm(m)
        sides = landscape.loss(theta + NORMAL_STEP * length * np.stack([m, -m])) - loss
        if np.all(sides > tol):
            continue
        if np.all(sides < -tol):
            falls += 1
        else:
            flat = True
    lam = _tangential_hessian(landscape, theta, loss, tangent, active, length)
    biggest = max(float(np.abs(lam).max(initial=0.0)), scales.loss / length**2)
    zero = np.abs(lam) <= ZERO_EIGENVALUE * biggest
    morse = int(np.sum(lam < 0) - np.sum(zero & (lam < 0))) + falls
    null = int(zero.sum())
    eigen = np.concatenate([np.sort(lam), np.full(len(theta) - len(lam), np.nan)])
    if flat or null:
        kind = _probed(landscape, theta, loss, tol)
    else:
        kind = (
            Kind.LOCAL_MIN if morse == 0 else Kind.LOCAL_MAX if morse == len(theta) else Kind.SADDLE
        )
    return kind, eigen, morse, null


def _tangential_hessian(
    landscape: Landscape,
    theta: np.ndarray,
    loss: float,
    tangent: np.ndarray,
    active: np.ndarray,
    length: float,
) -> np.ndarray:
    """Eigenvalues of the Hessian of ``L`` restricted to the kinks through ``θ``, from second
    differences at :data:`TANGENT_STEP` along the tangent basis ``tangent`` (rows), each probe
    moved back onto the kinks; shape ``(len(tangent),)``."""
    t = len(tangent)
    if not t:
        return np.zeros(0)
    s = TANGENT_STEP * length
    pairs = [(i, j) for i in range(t) for j in range(i, t)]
    offsets = []
    for i, j in pairs:
        a, b = tangent[i], tangent[j]
        if i == j:
            offsets += [s * a, -s * a]
        else:
            offsets += [s * (a + b), s * (a - b), -s * (a - b), -s * (a + b)]
    points = theta + np.array(offsets)
    free = np.ones(len(theta), dtype=bool)
    points = _onto_kinks(landscape, points, list(active), free) if len(active) else points
    values = landscape.loss(points) - loss
    h = np.zeros((t, t))
    k = 0
    for i, j in pairs:
        if i == j:
            h[i, i] = (values[k] + values[k + 1]) / s**2
            k += 2
        else:
            h[i, j] = h[j, i] = (values[k] - values[k + 1] - values[k + 2] + values[k + 3]) / (
                4 * s**2
            )
            k += 4
    return np.linalg.eigvalsh(h)


def _probed(landscape: Landscape, theta: np.ndarray, loss: float, tol: float) -> Kind:
    """The kind the loss shows around ``θ`` at :data:`PROBE_RADIUS`, in every direction of
    :func:`_sphere`: rising only a minimum, falling only a maximum, both a saddle."""
    directions = _sphere(landscape, theta, _unit_normals(landscape, theta))
    delta = landscape.loss(theta + PROBE_RADIUS * directions) - loss
    rises, falls = bool(np.any(delta > tol)), bool(np.any(delta < -tol))
    if rises and falls:
        return Kind.SADDLE
    return Kind.LOCAL_MIN if rises else Kind.LOCAL_MAX if falls else Kind.DEGENERATE
