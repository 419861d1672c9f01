"""Proofs about where a gradient flow ends, made once and then checked by float comparisons.

- **A certified region of attraction** of a non-degenerate minimum ``z`` (:func:`attraction`):
  a box ``B`` around ``z`` on which the Krawczyk operator proves a unique zero of ``∇L`` (inside
  its enclosure ``Z``) and the interval Hessian proves ``λ_min(∇²L) ≥ μ > 0`` (Weyl's bound
  on the interval matrix).  ``L`` is then ``μ``-strongly convex on ``B``, so on the boundary
  ``L ≥ L(z) + μd²/2`` with ``d`` the least distance from ``Z`` to ``∂B``; the level
  ``c = inf L(Z) + μd²/2`` is a proven lower bound of ``L`` on ``∂B``.  A point ``θ ∈ B`` with
  ``L(θ) < c`` has its sublevel component ``{L ≤ L(θ)}`` inside ``B`` (it cannot cross ``∂B``);
  the flow, in any metric, never raises ``L``, so it stays in that compact component, whose only
  critical point is ``z``: it converges to ``z``.
- **Around a degenerate minimum** (:func:`_isolated`, where the Hessian is singular): the
  interval gradient clears every piece of ``B`` outside a core ``Z`` a millionth of its width,
  so ``B``'s critical points all lie in ``Z``, and the level ``c`` is the least interval lower
  bound of ``L`` on the faces of ``B``: a point of ``B`` below ``c`` flows into ``Z``.
- **Escaping** (:func:`escapes`): a branch and bound over a box ``B`` clears every piece where
  an entry of the interval gradient excludes 0 or the interval loss lies above ``L(θ₀)``: no
  critical point of ``{L ≤ L(θ₀)} ∩ B``.  A flow from ``θ₀`` that stayed in ``B`` would have a
  non-empty ω-limit set of critical points there (Łojasiewicz's setting not needed: the ω-limit
  of a bounded gradient trajectory consists of critical points), so it leaves ``B``.
- **Refinement** (:func:`refined`): Levenberg–Marquardt from a numerical endpoint, kept only
  where it reaches a point that a Newton step explains as a zero of ``∇L``
  (:func:`gradflow._critical.roots._near_a_zero`): an endpoint that refines to no critical point
  is no attractor, whatever its small gradient says.

The proofs need the loss in SymPy (a :class:`~gradflow.BoundModel`) and an interval form of
every function in it; a landscape without them gets no proof, and its verdicts stay numerical.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import GradflowError
from .._landscape.base import Landscape
from .._landscape.scales import loss_scales
from .._symbolic.budget import OutOfTime, budgeted_cache, within
from .._symbolic.interval import interval_function
from .._symbolic.model import BoundModel, ReducedModel
from .branch_bound import Search, _strictly_inside, halves
from .interval_system import System, bound_system, interval_system
from .pieces import gradient_tol
from .roots import _near_a_zero, root_search

__all__ = ["ESCAPE_BOXES", "Attraction", "attraction", "escapes", "refined"]

LADDER = 24
"""Half-widths tried for a region of attraction, from the loss's length scale down by halves."""
ESCAPE_BOXES = 4_000
"""Boxes the escape proof examines before it gives up."""
ESCAPE_MIN_WIDTH = 1e-9
"""The escape proof cuts no piece narrower than this fraction of its box on every side."""
LEVEL_MARGIN = 1e-9
"""A point is inside a region of attraction only below ``c - margin``, the margin this share of
the certified rise ``c - inf L(Z)`` plus rounding of ``L`` (:data:`ROUNDING`)."""
ROUNDING = 64 * np.finfo(np.float64).eps
"""Relative rounding allowed in a float64 value of ``L`` at an endpoint."""
ISOLATION = 1e-6
"""The core of a region of attraction around a degenerate minimum: half-widths this share of
the box's (:func:`_isolated`)."""
ISOLATION_BOXES = 2_000
"""Pieces the branch and bound of :func:`_isolated` examines before it gives up."""
ISOLATION_TRIES = 6
"""Box sizes (the first of the ladder) tried around a degenerate minimum."""
FACE_PIECES = 8
"""Pieces per side of a face on which the level of :func:`_isolated` is bounded."""
REFINE_DISTANCE = 0.05
"""A refined endpoint counts as the critical point its endpoint stopped beside only within this
fraction of the box diagonal of it."""


@dataclass(frozen=True)
class Attraction:
    """A certified region of attraction of a non-degenerate minimum.

    Attributes:
        box: ``B``, shape ``(dim, 2)``.
        enclosure: ``Z``, the Krawczyk enclosure of the minimum, shape ``(dim, 2)``.
        mu: the proven lower bound ``μ > 0`` of the Hessian's eigenvalues on ``B``; 0 for a
            region around a degenerate minimum (:func:`_isolated`), whose ``Z`` holds every
            critical point of ``B``.
        level: ``c``: a flow from a point of ``B`` with ``L < c`` converges to the minimum.
        floor: ``inf L(Z)``, a proven lower bound of the minimum's loss.
    """

    box: np.ndarray
    enclosure: np.ndarray
    mu: float
    level: float
    floor: float

    def holds(self, points: np.ndarray, losses: np.ndarray) -> np.ndarray:
        """Whether each point (shape ``(n, dim)``, its float64 loss ``losses``, shape ``(n,)``)
        lies in ``B`` with ``L`` below the level by the rounding margin; shape ``(n,)``."""
        margin = LEVEL_MARGIN * (self.level - self.floor) + ROUNDING * (
            np.abs(losses) + abs(self.level)
        )
        inside = np.all((points > self.box[:, 0]) & (points < self.box[:, 1]), axis=1)
        with np.errstate(invalid="ignore"):
            return inside & (losses < self.level - margin)

    def text(self) -> str:
        """``box [a, b] × [c, d], μ ≥ …, L < inf L(Z) + rise`` in one line."""
        sides = " × ".join(f"[{lo:.6g}, {hi:.6g}]" for lo, hi in self.box)
        rise = self.level - self.floor
        if self.mu > 0:
            how = f"μ ≥ {self.mu:.3g}"
        else:
            width = float(np.max(self.enclosure[:, 1] - self.enclosure[:, 0]))
            how = f"its critical points within a box of width {width:.2g}"
        return f"box {sides}, {how}, L < {self.floor:.12g} + {rise:.3g}"


@dataclass(frozen=True)
class _Tools:
    system: System
    hyper: list[float]
    loss: Callable[..., list[Any]]


def _tools(landscape: Landscape, interval: str = "arb") -> _Tools | None:
    """The interval system of ``landscape``'s SymPy loss at its hyperparameters in the interval
    arithmetic ``interval``, or ``None`` (not a SymPy loss, or no interval form within the
    symbolic time budget).  Arb's balls suit the narrow boxes of Krawczyk's test; mpmath's
    endpoint intervals the wide pieces of a branch and bound, where a ball loses the sign of a
    product (``8x(x² + y²)³`` on ``[1, 2] × [-1, 1]``: arb ``[-1501, 2000]``, mpmath
    ``[8, 2000]``)."""
    if not isinstance(landscape, BoundModel):
        return None
    try:
        system, hyper = bound_system(landscape, interval)
        loss = within("the interval form of L", _interval_loss, landscape.model, interval)
    except (GradflowError, OutOfTime):
        return None
    return _Tools(system, hyper, loss)


@budgeted_cache
def _interval_loss(model: ReducedModel, interval: str) -> Callable[..., list[Any]]:
    system = interval_system(model, interval)
    symbols = [*model.params, *model.hyperparams]
    return interval_function([model.loss], symbols, system.arith, list(model.params))


def _search(tools: _Tools, box: np.ndarray) -> Search:
    return Search(tools.system, tools.hyper, box, 1, ESCAPE_MIN_WIDTH)


def _loss_bounds(tools: _Tools, search: Search, box: np.ndarray) -> tuple[float, float]:
    lo, hi = search.bounds(tools.loss(*search.intervals(box), *search.hyper))[0]
    return float(lo), float(hi)


def _least_eigenvalue(hessian: np.ndarray) -> float | None:
    """A lower bound of the least eigenvalue of every symmetric matrix in the interval matrix
    ``hessian`` (bounds, shape ``(n, n, 2)``): Weyl's ``λ_min(A) ≥ λ_min(M) − ‖A − M‖_F``."""
    if not np.all(np.isfinite(hessian)):
        return None
    mid = hessian.mean(axis=2)
    mid = (mid + mid.T) / 2
    spread = float(np.linalg.norm(hessian[..., 1] - hessian[..., 0])) / 2
    eig = np.linalg.eigvalsh(mid)
    return float(eig[0] - spread - 1e-13 * float(np.abs(eig).max(initial=0.0)))


def attraction(landscape: Landscape, point: np.ndarray) -> Attraction | None:
    """A certified region of attraction of the minimum at (or beside) ``point``, or ``None``
    where none is proven (no SymPy loss, a degenerate or non-minimal point, no interval form).

    Boxes of half-width ``ℓ, ℓ/2, …`` (:data:`LADDER` of them, ``ℓ`` the loss's length scale)
    around ``point``, polished by Newton's method, are tried largest first; the first that
    passes is kept (module docstring).  Shapes: ``point`` ``(dim,)``.  Proven once per landscape
    and point: every later map or flow of the landscape reuses it.
    """
    point = np.asarray(point, dtype=float)
    known = _PROVEN.setdefault(landscape, {})
    key = point.tobytes()
    if key not in known:
        known[key] = _attraction(landscape, point)
    return known[key]


_PROVEN: weakref.WeakKeyDictionary[Landscape, dict[bytes, Attraction | None]] = (
    weakref.WeakKeyDictionary()
)


def _attraction(landscape: Landscape, point: np.ndarray) -> Attraction | None:
    """:func:`attraction`, proven afresh."""
    tools = _tools(landscape)
    if tools is None:
        return None
    point = np.asarray(point, dtype=float)
    z = _polished(landscape, point)
    length = loss_scales(landscape).length
    radii = [
        length * 0.5**k * (1 + 1e-3 * float(np.max(np.abs(point))) / length) for k in range(LADDER)
    ]
    if z is not None:
        for radius in radii:
            found = _certified(tools, np.stack([z - radius, z + radius], axis=1))
            if found is not None:
                return found
    wide = _tools(landscape, "mpmath")
    for radius in radii[:ISOLATION_TRIES] if wide is not None else []:
        found = _isolated(wide, point, np.stack([point - radius, point + radius], axis=1))
        if found is not None:
            return found
    return None


def _isolated(tools: _Tools, z: np.ndarray, box: np.ndarray) -> Attraction | None:
    """The region of attraction ``box`` proves around a possibly degenerate minimum ``z``
    (its centre), or ``None``: every piece of ``box`` outside the core ``Z`` (half-width
    :data:`ISOLATION` of the box's) is cleared by the interval gradient, so the critical points
    of ``box`` lie in ``Z``; the level is the least lower bound of ``L`` over the faces of
    ``box`` (each cut in :data:`FACE_PIECES` per other side, up to three parameters).  A point of
    ``box`` below it flows into ``Z`` (module docstring, with ``Z`` for the unique zero)."""
    search = _search(tools, box)
    half = (box[:, 1] - box[:, 0]) / 2
    core = np.stack([z - ISOLATION * half, z + ISOLATION * half], axis=1)
    queue, examined = [box], 0
    while queue:
        piece = queue.pop()
        examined += 1
        if examined > ISOLATION_BOXES:
            return None
        if np.all((piece[:, 0] >= core[:, 0]) & (piece[:, 1] <= core[:, 1])):
            continue
        g = search.gradient(piece)
        if np.any((g[:, 0] > 0) | (g[:, 1] < 0)):
            continue
        sides = (piece[:, 1] - piece[:, 0]) / half
        if np.all(sides <= ISOLATION / 4):
            return None
        queue += halves(piece, half)
    floor, _ = _loss_bounds(tools, search, core)
    level = min(_loss_bounds(tools, search, face)[0] for face in _faces(box))
    if not (np.isfinite(floor) and level > floor):
        return None
    return Attraction(box=box, enclosure=core, mu=0.0, level=level, floor=floor)


def _faces(box: np.ndarray) -> list[np.ndarray]:
    """The faces of ``box`` (shape ``(dim, 2)``), each cut into :data:`FACE_PIECES` along every
    other side where ``dim`` ≤ 3, as boxes."""
    dim = len(box)
    pieces = FACE_PIECES if dim <= 3 else 1
    out = []
    for axis in range(dim):
        for side in box[axis]:
            grids = [
                [(side, side)]
                if j == axis
                else list(zip(*(lambda e: (e[:-1], e[1:]))(np.linspace(*box[j], pieces + 1))))
                for j in range(dim)
            ]
            out += [np.array(corner) for corner in itertools.product(*grids)]
    return out


def _certified(tools: _Tools, box: np.ndarray) -> Attraction | None:
    """The region of attraction ``box`` proves, or ``None``."""
    search = _search(tools, box)
    mu = _least_eigenvalue(search.jacobian(box))
    if mu is None or mu <= 0:
        return None
    k = search.krawczyk(box)
    if k is None or not _strictly_inside(k, box):
        return None
    tight = k
    for _ in range(30):
        k = search.krawczyk(tight)
        if k is None or not _strictly_inside(k, box):
            break
        narrower = np.stack([np.maximum(k[:, 0], tight[:, 0]), np.minimum(k[:, 1], tight[:, 1])], 1)
        if np.array_equal(narrower, tight):
            break
        tight = narrower
    floor, _ = _loss_bounds(tools, search, tight)
    gap = float(np.min(np.minimum(tight[:, 0] - box[:, 0], box[:, 1] - tight[:, 1])))
    if not (np.isfinite(floor) and gap > 0):
        return None
    rise = 0.5 * mu * gap * gap * (1 - 1e-12)
    level = floor + rise
    if not level > floor:
        return None
    return Attraction(box=box, enclosure=tight, mu=mu, level=level, floor=floor)


def _polished(landscape: Landscape, z: np.ndarray) -> np.ndarray | None:
    """``z`` after Newton steps on ``∇L`` (up to 8, stopping at rounding), or ``None`` where the
    Hessian is singular or not finite."""
    with np.errstate(all="ignore"):
        for _ in range(8):
            g, h = landscape.point_grad(z), landscape.point_hessian(z)
            if not (np.all(np.isfinite(g)) and np.all(np.isfinite(h))):
                return None
            try:
                step = np.linalg.solve(h, g)
            except np.linalg.LinAlgError:
                return None
            z = z - step
            if np.max(np.abs(step)) <= 1e-15 * (1 + np.max(np.abs(z))):
                break
    return z if np.all(np.isfinite(z)) else None


def escapes(
    landscape: Landscape, start: np.ndarray, box: np.ndarray, max_boxes: int = ESCAPE_BOXES
) -> bool:
    """Whether it is proven that ``{L ≤ L(start)} ∩ box`` holds no critical point (module
    docstring), so that the flow from ``start`` leaves ``box`` (shape ``(dim, 2)``).  ``False``
    where the proof does not close within ``max_boxes`` pieces, or there is no SymPy loss."""
    tools = _tools(landscape, "mpmath")
    if tools is None:
        return False
    search = _search(tools, box)
    _, top = _loss_bounds(tools, search, np.stack([start, start], axis=1))
    if not np.isfinite(top):
        return False
    width = box[:, 1] - box[:, 0]
    queue, examined = [np.asarray(box, dtype=float)], 0
    while queue:
        piece = queue.pop()
        examined += 1
        if examined > max_boxes:
            return False
        g = search.gradient(piece)
        if np.any((g[:, 0] > 0) | (g[:, 1] < 0)):
            continue
        low, _ = _loss_bounds(tools, search, piece)
        if low > top:
            continue
        sides = (piece[:, 1] - piece[:, 0]) / width
        if np.all(sides < ESCAPE_MIN_WIDTH):
            return False
        queue += halves(piece, width)
    return True


def refined(landscape: Landscape, points: np.ndarray, box: np.ndarray) -> np.ndarray:
    """Levenberg–Marquardt from each endpoint (shape ``(n, dim)``) to a zero of ``∇L``: the
    critical point it refines to, or a row of NaN where the limit is no zero a Newton step
    explains (:func:`~gradflow._critical.roots._near_a_zero`, with ``‖∇L‖`` below
    :func:`~gradflow._critical.pieces.gradient_tol`), is not finite, or lies farther
    than :data:`REFINE_DISTANCE` of ``box``'s diagonal from the endpoint."""
    points = np.asarray(points, dtype=np.float64)
    if not len(points):
        return points.copy()
    scale = loss_scales(landscape)
    with np.errstate(all="ignore"):
        grads = np.linalg.norm(landscape.grad(points), axis=1)
    scales = np.where(np.isfinite(grads) & (grads > 0), grads, scale.gradient)
    free = np.ones(landscape.dim, dtype=bool)
    ys = root_search(landscape, points, scales, free, np.zeros(landscape.dim))
    reach = REFINE_DISTANCE * float(np.linalg.norm(box[:, 1] - box[:, 0]))
    with np.errstate(all="ignore"):
        ok = np.all(np.isfinite(ys), axis=1)
        ok &= np.linalg.norm(ys - points, axis=1) <= reach
        ok[ok] &= np.linalg.norm(landscape.grad(ys[ok]), axis=1) <= gradient_tol(landscape)
        ok[ok] &= _near_a_zero(landscape, ys[ok])
    ys[~ok] = np.nan
    return ys
