"""Classification of critical points: minimum, saddle (Morse index), maximum, degenerate.

The Hessian spectrum decides wherever it can.  Where it has zero eigenvalues — always the case
on a non-isolated critical set, and at degenerate saddles such as the canonical model's
``(0, -1/√2)`` where the whole Hessian vanishes — the loss is probed along the null space: a
Morse–Bott set is flat along it, a degenerate saddle is not.  A critical point whose loss equals
a proven lower bound of ``L`` is a global minimizer, whatever its Hessian (unless the Hessian
shows a direction in which ``L`` falls: then the loss only came within the test's margin of the
bound, as the saddle between two wells ``10⁻³`` apart, at ``L = 6.25·10⁻¹⁴``); nothing else is.

At a degenerate point the kind is decided on the reduced function of the splitting lemma
(Gromoll–Meyer; Arnold, Gusein-Zade & Varchenko, *Singularities of Differentiable Maps* I,
§11.4): with the Hessian's eigenvectors split into its null space ``N`` and the rest ``R``,
``L(θ* + N u + R v) = Q(v) + g(u)`` up to a change of coordinates, where ``g(u)`` is ``L`` at the
critical point of ``v ↦ L(θ* + N u + R v)`` (a minimum where the non-zero eigenvalues are
positive).  So each probe along ``N`` is followed by Newton steps in ``R``: a line probe alone
misses the degenerate saddle of Peano's surface ``(y − x²)(y − 2x²)``, which rises along every
line through the origin but falls as ``−x⁴/4`` along ``y = 1.5x²``.

A probed change of the loss counts where it exceeds a rounding margin relative to the loss's
values and a tiny multiple of the loss scale, never a share of ``|L|`` alone: ``x³ + y²``,
``10⁻⁶(x³ + y²) + 10`` and ``x³ + y² + 10⁷`` have the same degenerate saddle.

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

from .._evidence import Evidence
from .._landscape.base import Landscape
from .._landscape.scales import loss_scales
from .._outcome import KINDS, Kind

__all__ = [
    "Classification",
    "Spectra",
    "classify_points",
    "hessians",
    "local_curvature",
    "reaches_bound",
    "spectra",
]

ZERO_EIGENVALUE = 1e-7
"""An eigenvalue is zero when ``|λ| ≤ ZERO_EIGENVALUE · max(c, max|λ|)``, ``c`` the curvature the
loss shows around the point (:func:`local_curvature`)."""
PROBE_RADIUS = 1e-2
"""Step along the Hessian's null space at which the loss is probed (parameter units)."""
PROBE_LOSS = 1e-12
"""A probed loss differs from the critical value when ``|ΔL|`` exceeds ``PROBE_LOSS · s`` (``s``
the loss scale) plus :data:`ROUNDING` ``· max(|L(θ*)|, |L(θ)|)``."""
ROUNDING = 1e-14
"""Relative rounding margin of a loss value (about 45 units in the last place of a float64):
what an added constant ``c`` contributes to ``|ΔL|``'s error is ``ROUNDING · |c|``, not more."""
REDUCED_STEPS = 8
"""Newton steps across the null space that take a probe onto the reduced function."""
GLOBAL_LOSS = 1e-9
"""Share of the loss's variation within :data:`PROBE_RADIUS` of a point that its loss may miss a
proven lower bound by and still reach it (:func:`reaches_bound`): the rounding of a loss whose
terms cancel where it vanishes (``(1 − xyz)²`` on ``xyz = 1``), which a share of ``|L|`` does not
cover."""
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
        probed: the least and greatest change ``L(θ) − L(θ*)`` the probes met, shape
            ``(n, 2)`` (loss units), NaN where a point was not probed; at a degenerate point
            with non-zero eigenvalues, the probes lie on the splitting lemma's reduced function.
        margin: the change below which a probe counts as flat, shape ``(n,)`` (loss units).
    """

    kinds: np.ndarray
    eigenvalues: np.ndarray
    morse_index: np.ndarray
    nullity: np.ndarray
    hessian_method: np.ndarray
    probed: np.ndarray | None = None
    margin: np.ndarray | None = None

    def evidence(self, i: int, dimension: int = 0) -> Evidence:
        """What backs point ``i``'s kind, numerically (the proof of a non-degenerate kind is
        :func:`gradflow._critical.proven_kinds.with_proven_kinds`), on a set of ``dimension``
        dimensions (its tangent directions are zero eigenvalues that decide nothing)."""
        method = self.hessian_method[i]
        null = int(self.nullity[i])
        if null <= dimension:
            return Evidence.numerical(
                f"Hessian by {method}: Morse index {self.morse_index[i]}, "
                f"{null} zero eigenvalue(s) along the set"
            )
        lo, hi = (np.nan, np.nan) if self.probed is None else self.probed[i]
        seen = []
        if np.isfinite(lo) and self.margin is not None and lo < -self.margin[i]:
            seen.append(f"falls by {-lo:.3g}")
        if np.isfinite(hi) and self.margin is not None and hi > self.margin[i]:
            seen.append(f"rises by {hi:.3g}")
        where = (
            " and ".join(seen) if seen else "is flat to within the rounding margin"
        ) + f" within {PROBE_RADIUS:g} of the point"
        dim = self.eigenvalues.shape[1]
        reduced = " on the splitting lemma's reduced function" if null < dim else ""
        return Evidence.numerical(
            f"degenerate (Hessian by {method}: {null} zero eigenvalue(s), Morse index "
            f"{self.morse_index[i]}); along the null space the loss{reduced} {where}"
        )


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


@dataclass(frozen=True)
class Spectra:
    """The Hessian spectra of ``n`` points and which eigenvalues count as zero.

    Attributes:
        eigenvalues, eigenvectors: of each Hessian, shapes ``(n, dim)`` and ``(n, dim, dim)``
            (NaN and the identity where the Hessian was probed from losses alone).
        null: which eigenvalues are zero (within :data:`ZERO_EIGENVALUE` of the larger of the
            point's local curvature and its largest eigenvalue), shape ``(n, dim)``.
        neg, pos, nullity: negative, positive and zero eigenvalues per point, shape ``(n,)``.
        method: the index in :data:`HESSIAN_METHODS` of each Hessian, shape ``(n,)``.
        losses, curvature: ``L`` and its local curvature at each point, shape ``(n,)``.
    """

    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    null: np.ndarray
    neg: np.ndarray
    pos: np.ndarray
    nullity: np.ndarray
    method: np.ndarray
    losses: np.ndarray
    curvature: np.ndarray


def spectra(landscape: Landscape, thetas: np.ndarray) -> Spectra:
    """The Hessian spectra of points ``thetas`` (shape ``(n, dim)``): what
    :func:`classify_points` reads before it probes the degenerate points, and all a caller
    that needs only nullities (a path along a manifold of critical points) has to compute."""
    dim = landscape.dim
    thetas = np.asarray(thetas, dtype=np.float64).reshape(-1, dim)
    h, method = hessians(landscape, thetas)
    probed = method == 2
    lam, vec = np.linalg.eigh(np.where(probed[:, None, None], 0.0, h))
    lam[probed] = np.nan
    vec[probed] = np.eye(dim)
    losses = landscape.loss(thetas)
    with np.errstate(invalid="ignore"):
        largest = np.abs(lam).max(axis=1, initial=0.0)
        curvature = local_curvature(landscape, thetas, losses)
        zero = ZERO_EIGENVALUE * np.fmax(curvature, largest)[:, None]
        null = (np.abs(lam) <= zero) | probed[:, None]
        neg, pos = (lam < -zero).sum(axis=1), (lam > zero).sum(axis=1)
    return Spectra(lam, vec, null, neg, pos, null.sum(axis=1), method, losses, curvature)


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
    thetas = np.asarray(thetas, dtype=np.float64).reshape(-1, landscape.dim)
    spectrum = spectra(landscape, thetas)
    lam, vec, null, losses, curvature = (
        spectrum.eigenvalues,
        spectrum.eigenvectors,
        spectrum.null,
        spectrum.losses,
        spectrum.curvature,
    )
    neg, pos, nullity, method = spectrum.neg, spectrum.pos, spectrum.nullity, spectrum.method
    scales = loss_scales(landscape)
    margin = PROBE_LOSS * scales.loss + ROUNDING * np.abs(losses)
    probed_change = np.full((len(thetas), 2), np.nan)
    degenerate = (nullity > 0) & ~((neg > 0) & (pos > 0))
    probed_change[degenerate] = _probe(landscape, thetas, losses, vec, null, degenerate)
    looks_min = (pos > 0) & (neg == 0) & (nullity == 0)
    probed_change[looks_min] = _probe(landscape, thetas, losses, vec, np.ones_like(null), looks_min)
    with np.errstate(invalid="ignore"):
        decreases = probed_change[:, 0] < -margin
        increases = probed_change[:, 1] > margin
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
        at_bound = reaches_bound(landscape, thetas, losses, global_min_loss, curvature)
        kinds[at_bound & (neg == 0)] = Kind.GLOBAL_MIN  # a falling direction: not at inf L
    return Classification(
        kinds=kinds,
        eigenvalues=lam,
        morse_index=neg,
        nullity=nullity,
        hessian_method=np.asarray(HESSIAN_METHODS, dtype=object)[method],
        probed=probed_change,
        margin=margin,
    )


def reaches_bound(
    landscape: Landscape,
    thetas: np.ndarray,
    losses: np.ndarray,
    bound: float,
    curvature: np.ndarray | None = None,
) -> np.ndarray:
    """Whether each point's loss equals the proven lower bound ``bound``, shape ``(n,)``.

    ``|L(θ) − bound| ≤ ‖∇L(θ)‖₂ ℓ + GLOBAL_LOSS · v + ROUNDING · max(|L|, |bound|)``, ``ℓ`` the
    loss's length scale, ``v = c r²/2`` the loss's variation within ``r`` =
    :data:`PROBE_RADIUS` (``c`` its :func:`local_curvature`, computed here unless given, shape
    ``(n,)``).  The ``v`` term is rounding where the loss's terms cancel (``(1 − xyz)²`` is
    ``10⁻³²`` on ``xyz = 1`` while its expanded gradient rounds to 0).  The gradient term is what a point short of the critical point it approximates
    misses its value by: ``L(θ) − L(θ*) ≤ ∇L(θ)·(θ − θ*)`` near a minimum (convexity), and
    ``‖θ − θ*‖ ≤ ℓ``.  So the flow's end beside the degenerate minimum of ``x⁴ + y⁴``
    (``‖∇L‖ = 4√2 x³``, ``L = 2x⁴``) reaches ``L ≥ 0``, while a refined critical point, whose
    gradient is rounding, must equal the bound to rounding: the circle of minima of
    ``exp((x² + y² − 1)²)`` (``L = 1``) does not reach ``L ≥ 0``, however large the loss's
    scale there (``~10¹⁷`` on ``[−3, 3]²``, set by its walls), and its maximum (``L = e``)
    never does.  Both terms scale with ``c·L`` and ignore an added constant but for its
    rounding, so ``c·L + b`` gets the same answers.
    """
    if curvature is None:
        curvature = local_curvature(landscape, thetas, losses)
    with np.errstate(invalid="ignore"):
        slack = np.nan_to_num(np.linalg.norm(landscape.grad(thetas), axis=-1))
        slack = slack * loss_scales(landscape).length
        slack += GLOBAL_LOSS * np.nan_to_num(curvature) * PROBE_RADIUS**2 / 2
        return np.abs(losses - bound) <= slack + ROUNDING * np.maximum(np.abs(losses), abs(bound))


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
) -> np.ndarray:
    """The least and greatest change of ``L`` met along each needed point's null space, on the
    splitting lemma's reduced function, shape ``(m, 2)`` for the ``m`` needed points.

    Each probe ``θ* + r d`` (``d`` a unit vector in the null space) is moved by
    :data:`REDUCED_STEPS` Newton steps on ``∇L = 0`` restricted to the other eigenvectors
    (each step at most ``r`` long, the move at most ``r``), toward the critical point of the
    loss across the null space; every iterate is a point within ``2r`` of ``θ*``, so a change
    seen at any of them is a change of the loss near the point."""
    idx = np.flatnonzero(needed)
    out = np.zeros((idx.size, 2))
    patterns, which = np.unique(null[idx], axis=0, return_inverse=True)
    for k, pattern in enumerate(patterns):
        mine = idx[which.reshape(-1) == k]
        out[which.reshape(-1) == k] = _probe_pattern(
            landscape, thetas[mine], losses[mine], vec[mine], pattern
        )
    return out


def _probe_pattern(
    landscape: Landscape,
    thetas: np.ndarray,
    losses: np.ndarray,
    basis: np.ndarray,
    null: np.ndarray,
) -> np.ndarray:
    """:func:`_probe` for points that share one null-space pattern ``null`` (shape ``(dim,)``,
    the eigenvector columns of ``basis`` that span the null space), shape ``(m, 2)``.

    The directions are :func:`_probe_coefficients` restricted to the null space, each distinct
    one once: a plane's circle through a direction outside the null space collapses onto an
    axis already probed, so a two-dimensional null space in three parameters probes 36
    directions instead of 70, with the same least and greatest change."""
    dim = thetas.shape[1]
    coef = _probe_coefficients(dim) * null
    norms = np.linalg.norm(coef, axis=1, keepdims=True)
    coef = np.unique(np.divide(coef, norms, out=np.zeros_like(coef), where=norms > 0), axis=0)
    coef = np.broadcast_to(coef, (len(thetas), *coef.shape))
    probes = thetas[:, None, :] + PROBE_RADIUS * np.einsum("pkj,pij->pki", coef, basis)
    rng = np.broadcast_to(~null, (len(thetas), dim))
    with np.errstate(all="ignore"):
        delta = landscape.loss(probes) - losses[:, None]
        low, high = np.nanmin(_finite(delta, np.inf), 1), np.nanmax(_finite(delta, -np.inf), 1)
        if rng.any():
            shape = probes.shape
            across = np.zeros(shape)  # the move across the null space, eigenvector coordinates
            free = rng[:, None, :] & rng[:, None, :].swapaxes(1, 2)
            for _ in range(REDUCED_STEPS):
                point = probes + np.einsum("pkj,pij->pki", across, basis)
                flat = point.reshape(-1, dim)
                g = np.einsum(
                    "pij,pki->pkj", basis, np.asarray(landscape.grad(flat)).reshape(shape)
                )
                h = np.asarray(landscape.hessian(flat)).reshape(*shape, dim)
                h = np.einsum("pai,pkab,pbj->pkij", basis, h, basis)
                h = np.where(free[:, None], h, np.eye(dim))
                g = np.where(rng[:, None, :], g, 0.0)
                ok = np.all(np.isfinite(h), axis=(2, 3)) & np.all(np.isfinite(g), axis=2)
                h[~ok], g[~ok] = np.eye(dim), 0.0
                try:
                    step = -np.linalg.solve(h, g[..., None])[..., 0]
                except np.linalg.LinAlgError:
                    break
                size = np.linalg.norm(step, axis=2, keepdims=True)
                step *= np.minimum(1.0, PROBE_RADIUS / np.maximum(size, 1e-300))
                moved = across + step
                total = np.linalg.norm(moved, axis=2, keepdims=True)
                across = moved * np.minimum(1.0, PROBE_RADIUS / np.maximum(total, 1e-300))
                point = probes + np.einsum("pkj,pij->pki", across, basis)
                delta = landscape.loss(point) - losses[:, None]
                low = np.fmin(low, np.nanmin(_finite(delta, np.inf), 1))
                high = np.fmax(high, np.nanmax(_finite(delta, -np.inf), 1))
    out = np.stack([low, high], axis=1)
    return np.where(np.isfinite(out), out, np.nan)


def _finite(values: np.ndarray, fill: float) -> np.ndarray:
    """``values`` with what is not finite replaced by ``fill``."""
    return np.where(np.isfinite(values), values, fill)
