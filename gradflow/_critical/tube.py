"""A certified tube around a line of minima: where a Euclidean gradient flow from a point near
the line is proven to converge onto it.

A set of minima of dimension 1 gets no certified region of attraction (:mod:`.attraction`):
every level above its loss has a sublevel component running along the set to the ends of any
box.  For a line parallel to a coordinate axis, ``{θ_D = c}`` with ``θ_F`` free (the canonical
model's ``e = 0``), a tube argument proves it instead, for the Euclidean flow ``θ' = −∇L``:

1. on each segment ``S_k = {θ_D = c} × [f_k, f_{k+1}]`` the interval gradient is exactly 0, so
   the segment is critical;
2. on the tube ``T_k = {|θ_D − c| ≤ ρ} × [f_k, f_{k+1}]`` the interval Hessian bounds the
   normal block's least eigenvalue below by ``κ_k > 0`` (Weyl: the midpoint's least eigenvalue
   minus the Frobenius norm of the radius) and the mixed block ``∂²L/∂θ_F∂θ_D`` above by
   ``M_k`` (its Frobenius norm);
3. with ``d = θ_D − c``, ``∇_D L(θ) = Ĥ_DD d`` and ``∇_F L(θ) = Ĥ_FD d`` (mean values along the
   normal, since ``∇L = 0`` on the segment), so ``|d|`` decays at least like ``e^{−κt}`` and
   ``θ_F`` moves by at most ``M|d₀|/κ`` in all, over a run of segments with the least ``κ``
   and the greatest ``M``.

A point with ``|d₀| ≤ ρ`` whose ``θ_F ± M|d₀|/κ`` stays in the run never leaves the tube, and
converges to a point of the line.  Near a degenerate point of the line (the canonical saddle
``w = −1/√2``, where ``κ → 0``) the drift bound grows without limit: those points stay
numerical, the separatrix's neighbourhood.  Each tube is proven once per attractor; each
endpoint then costs float comparisons.  A metric other than the Euclidean one, a line not
parallel to an axis, a set of higher dimension or a loss without an interval form get no tube.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from .._errors import GradflowError
from .._landscape.base import Landscape
from .._landscape.scales import loss_scales
from .._symbolic.budget import OutOfTime
from .._symbolic.kept import kept_value, written
from .._symbolic.model import BoundModel
from .branch_bound import Search
from .interval_system import bound_system

__all__ = ["SEGMENTS", "Tube", "tube"]

SEGMENTS = 64
"""Segments of the line along its free coordinate, each with its own bounds."""
WINDOW = 2
"""Segments on each side of a point's own that its drift may cross."""
RADIUS = 1e-2
"""Tube radius ``ρ``, relative to the loss's length scale."""
GRAIN = 2.0**-10
"""The span of a tube is the endpoints' span widened to whole multiples of this share of the
loss's length scale (and one more on each side), so that the maps of one landscape share one
proof although their endpoints differ in the last digits."""
TINY = float(np.nextafter(0.0, 1.0))
"""An exact 0 of the interval gradient, as its bounds come rounded outward."""


@dataclass(frozen=True)
class Tube:
    """A certified tube around the line ``{θ_D = c}`` (module docstring).

    Attributes:
        normal: the indices ``D``; free: the index of ``F``.
        value: ``c``, shape ``(len(D),)``.
        edges: the segments' ends along ``θ_F``, shape ``(k + 1,)``.
        kappa: ``κ_k`` per segment, shape ``(k,)`` (``0`` where not proven).
        mixed: ``M_k`` per segment, shape ``(k,)``.
        radius: ``ρ``.
    """

    normal: tuple[int, ...]
    free: int
    value: np.ndarray
    edges: np.ndarray
    kappa: np.ndarray
    mixed: np.ndarray
    radius: float

    def holds(self, points: np.ndarray, losses: np.ndarray) -> np.ndarray:
        """Whether a flow from each point (shape ``(n, dim)``) is proven to converge to the
        line, shape ``(n,)`` (``losses`` is not needed and only keeps the interface of
        :class:`~gradflow._critical.attraction.Attraction`)."""
        lo, hi = self._windows()
        d = np.linalg.norm(points[:, list(self.normal)] - self.value, axis=1)
        f = points[:, self.free]
        k = np.clip(np.searchsorted(self.edges, f, side="right") - 1, 0, len(self.kappa) - 1)
        least = np.array([self.kappa[i : j + 1].min() for i, j in zip(lo, hi)])
        most = np.array([self.mixed[i : j + 1].max() for i, j in zip(lo, hi)])
        with np.errstate(divide="ignore", invalid="ignore"):
            drift = most[k] * d / least[k]
            return (
                (least[k] > 0)
                & (d <= self.radius)
                & (f - drift >= self.edges[lo[k]])
                & (f + drift <= self.edges[hi[k] + 1])
            )

    def _windows(self) -> tuple[np.ndarray, np.ndarray]:
        """For each segment, the first and last of the segments its points may drift across:
        up to :data:`WINDOW` on each side, while their ``κ`` is proven."""
        count = len(self.kappa)
        lo, hi = np.arange(count), np.arange(count)
        for j in range(count):
            while lo[j] > max(0, j - WINDOW) and self.kappa[lo[j] - 1] > 0:
                lo[j] -= 1
            while hi[j] < min(count - 1, j + WINDOW) and self.kappa[hi[j] + 1] > 0:
                hi[j] += 1
        return lo, hi

    def text(self) -> str:
        """``tube |θ_D − c| ≤ ρ over [a, b], κ ≥ …`` in one line."""
        proven = self.kappa > 0
        least = float(self.kappa[proven].min()) if proven.any() else 0.0
        return (
            f"tube of radius {self.radius:.3g} over [{self.edges[0]:.6g}, {self.edges[-1]:.6g}], "
            f"normal curvature ≥ {least:.3g} on {int(proven.sum())} of {len(self.kappa)} segments"
        )


def tube(landscape: Landscape, point: np.ndarray, ends: np.ndarray) -> Tube | None:
    """The certified tube around the line of minima through ``point`` (shape ``(dim,)``) over
    the span of its free coordinate that the endpoints ``ends`` (shape ``(n, dim)``) cover, or
    ``None`` where the line is not parallel to an axis, the landscape is not a Euclidean SymPy
    loss, or no segment is proven."""
    if not isinstance(landscape, BoundModel) or landscape.metric_name != "euclidean":
        return None
    point = np.asarray(point, dtype=float)
    hessian = np.asarray(landscape.point_hessian(point), dtype=float)
    lam, vec = np.linalg.eigh(hessian)
    null = np.abs(lam) <= 1e-7 * max(float(np.abs(lam).max()), 1e-300)
    if null.sum() != 1 or np.any(lam[~null] <= 0):
        return None
    axis = np.abs(vec[:, null][:, 0])
    free = int(np.argmax(axis))
    step = GRAIN * loss_scales(landscape).length
    lo = float(np.floor(np.min(ends[:, free]) / step) - 1) * step
    hi = float(np.ceil(np.max(ends[:, free]) / step) + 1) * step
    span = (lo, hi)
    if axis[free] < 1 - 1e-9 or not np.all(np.isfinite(span)):
        return None
    key = (point.tobytes(), span)
    known = _PROVEN.setdefault(landscape, {})
    if key not in known:
        known[key] = _kept(landscape, point, free, span)
    return known[key]


def _kept(
    landscape: BoundModel, point: np.ndarray, free: int, span: tuple[float, float]
) -> Tube | None:
    """:func:`_proven`, read from the cache folder where an earlier process proved the same
    tube, else proven and written there (``<cache folder>/tubes/<sha256>.pickle``,
    :func:`gradflow._symbolic.kept.kept_value`).

    The file is named by the sha256 of everything the proof depends on: the loss's SymPy
    expression, its hyperparameters' values and parameter ranges, the line's point and span,
    :data:`SEGMENTS` and :data:`RADIUS`, and gradflow's source with the library versions
    (:func:`gradflow._compiled.store.environment`), and the symbolic steps' time budget; a change
    in any of them is another file, and nothing is kept once a symbolic step of the process has
    run out of its budget (:func:`gradflow._symbolic.kept.budgeted_file`).
    Building the interval form of ``∇²L`` from SymPy costs about a second per process, which
    every warm run of a map paid again.  ``GRADFLOW_CACHE_DIR=""`` (no cache folder) proves
    every time; a file that cannot be read is proven again and rewritten."""
    parts = [
        written(landscape.model.loss),
        repr(sorted(landscape.values.items())),
        repr([landscape.bound(n) for n in landscape.param_names]),
        point.tobytes().hex(),
        repr((free, span, SEGMENTS, RADIUS)),
    ]
    return kept_value("tubes", parts, lambda: _proven(landscape, point, free, span))


_PROVEN: weakref.WeakKeyDictionary[Landscape, dict[tuple, Tube | None]] = (
    weakref.WeakKeyDictionary()
)
"""The tubes proven, per landscape, line and span: a basin map's tubes are proven once, and the
same map again checks its endpoints only."""


def _proven(
    landscape: BoundModel, point: np.ndarray, free: int, span: tuple[float, float]
) -> Tube | None:
    """Steps 1–2 of the module docstring on ``SEGMENTS`` segments of ``span``."""
    normal = tuple(i for i in range(landscape.dim) if i != free)
    try:
        system, hyper = bound_system(landscape)
    except (OutOfTime, GradflowError):
        return None
    edges = np.linspace(span[0], span[1], SEGMENTS + 1)
    radius = RADIUS * loss_scales(landscape).length
    box = np.repeat(point[:, None], 2, axis=1)
    search = Search(system, hyper, np.array([[0.0, 1.0]] * landscape.dim), 1, 1e-7)
    kappa, mixed = np.zeros(SEGMENTS), np.zeros(SEGMENTS)
    for j in range(SEGMENTS):
        on = box.copy()
        on[free] = edges[j : j + 2]
        if np.any(np.abs(search.gradient(on)) > TINY):
            continue  # the segment is not proven critical (exact 0, rounded outward by an ulp)
        around = on.copy()
        around[list(normal), 0] -= radius
        around[list(normal), 1] += radius
        jac = search.jacobian(around)
        if not np.all(np.isfinite(jac)):
            continue
        block = jac[np.ix_(normal, normal)]
        mid, rad = block.mean(axis=2), (block[..., 1] - block[..., 0]) / 2
        mid = (mid + mid.T) / 2
        least = float(np.linalg.eigvalsh(mid).min()) - float(np.linalg.norm(rad))
        kappa[j] = least * (1 - 1e-9) if least > 0 else 0.0
        cross = jac[free, list(normal)]
        mixed[j] = float(np.linalg.norm(np.abs(cross).max(axis=-1))) * (1 + 1e-9)
    if not np.any(kappa > 0):
        return None
    return Tube(normal, free, point[list(normal)].copy(), edges, kappa, mixed, radius)
