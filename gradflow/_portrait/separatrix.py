"""Separatrices: the stable manifolds of saddles in a two-parameter flow.

Three constructions, each exact where it applies (the flow is ``dθ/dt = -G⁻¹∇L``, ``G = I`` unless
the landscape comes from :func:`gradflow.in_metric`):

- a non-degenerate saddle of Morse index 1: integrate the *ascent* flow ``dθ/dt = +G⁻¹∇L`` from
  the saddle displaced along its stable eigenvector (the direction of the positive eigenvalue of
  ``G⁻¹H``, from the generalized symmetric problem ``H v = λ G v``);
- a degenerate saddle (zero Hessian eigenvalues, where there is no eigenvector to follow) of a
  model with a conserved quantity ``E``: every trajectory stays on a level set of ``E``, so the
  stable manifold is the part of the level set ``E = E(saddle)`` that the flow runs into the
  saddle along.  That level set is traced with contourpy, split into rays at the saddle, and
  each ray kept if the flow on it points toward the saddle;
- a degenerate saddle without a conserved quantity (as in a non-Euclidean metric): on a small
  circle around the saddle (a circle in the metric ``G`` at the saddle), the directions along
  which the flow runs straight into the saddle are the zeros of the velocity's tangential
  component where its radial component points inward; the ascent flow is integrated from each.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

from .._compiled.store import stored_for
from .._critical.sets import CriticalSet
from .._flow.integrate import status_code
from .._flow.options import FlowOptions, StopRule
from .._flow.rk import TSIT5, BatchedRK, StepControl
from .._landscape.base import GradientField, Landscape
from .._landscape.metric import MetricLandscape, velocity
from .._outcome import Kind

__all__ = ["separatrices"]

DISPLACEMENT = 1e-4
"""Initial offset from a non-degenerate saddle along its stable eigenvector."""
LEVEL_SET_RESOLUTION = 801
"""Grid points per axis on which a conserved quantity is contoured."""


def separatrices(
    model: Landscape,
    critical: Sequence[CriticalSet],
    box: tuple[float, float, float, float],
    plane: tuple[str, str] | None = None,
    reach: tuple[float, float, float, float] | None = None,
) -> list[np.ndarray]:
    """Stable manifolds of the isolated saddles of a two-parameter landscape, where they cross
    ``box``.

    A separatrix bounds basins also where its saddle lies outside the box: the canonical
    model's, seen in the box ``e ≥ 0.1``, comes from the saddle ``(0, −1/√2)`` on ``e = 0``.
    So the saddles inside ``reach`` are followed: a saddle's branches are traced inside ``box``
    where the saddle lies in it (on the finest contour grid), else inside ``reach``, and each
    branch is kept where it runs inside ``box``.

    Args:
        model: a landscape with ``dim == 2``.
        critical: its classified critical sets.
        box: ``(xmin, xmax, ymin, ymax)`` in plane coordinates.
        plane: the parameters on the x and y axes (default the landscape's plane).
        reach: the box, holding ``box``, in which saddles are followed (default ``box``).

    Returns:
        Polylines in plane coordinates, each of shape ``(n, 2)``: each run of a branch inside
        ``box``, with its vertices just outside it where it crosses the edge (a branch of a
        saddle inside the box starts at the saddle).  Empty for models with more than two
        parameters (their separatrices are surfaces).
    """
    if model.dim != 2:
        return []
    plane = plane or model.plane
    reach = box if reach is None else reach
    order = [model.index(plane[0]), model.index(plane[1])]
    lines: list[np.ndarray] = []
    for s in critical:
        if s.kind != Kind.SADDLE or s.dimension != 0:
            continue
        saddle = s.points[0]
        if not _inside(saddle[order], reach):
            continue
        traced = box if _inside(saddle[order], box) else reach
        if s.nullity == 0:
            branches = _ascent_branches(model, saddle, traced, order)
        elif model.invariant_names:
            branches = _level_set_branches(model, saddle, traced, order)
        else:
            branches = _approach_branches(model, saddle, traced, order)
        lines += [run for branch in branches for run in _runs_inside(branch, box)]
    return lines


def _runs_inside(xy: np.ndarray, box: tuple[float, float, float, float]) -> list[np.ndarray]:
    """The runs of the polyline ``xy`` inside ``box``, each with the vertex before and after it
    (where the line crosses the edge), so that a drawing clipped to the box reaches its edge."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], _within(xy, box).astype(int), [0]])))
    runs = [xy[max(a - 1, 0) : b + 1] for a, b in zip(edges[::2], edges[1::2])]
    return [run for run in runs if len(run) >= 2]


def _inside(xy: np.ndarray, box: tuple[float, float, float, float]) -> bool:
    return bool(_within(xy[None], box)[0])


def _within(xy: np.ndarray, box: tuple[float, float, float, float]) -> np.ndarray:
    """Whether each point of ``xy`` (shape ``(n, 2)``) lies in ``box`` (edges included)."""
    x, y = xy[:, 0], xy[:, 1]
    return (x >= box[0]) & (x <= box[1]) & (y >= box[2]) & (y <= box[3])


def _ascent_branches(
    model: Landscape, saddle: np.ndarray, box: tuple[float, float, float, float], order: list[int]
) -> list[np.ndarray]:
    """Both branches of the stable manifold of a non-degenerate index-1 saddle."""
    lam, vec = scipy.linalg.eigh(model.hessian(saddle), _metric_at(model, saddle))
    stable = vec[:, int(np.argmax(lam))]
    stable = stable / np.linalg.norm(stable)
    branches = []
    for sign in (1.0, -1.0):
        path = _ascend(model, saddle + sign * DISPLACEMENT * stable, box, order)
        branches.append(_clip(np.vstack([saddle[order], path]), box))
    return branches


def _ascend(
    model: Landscape, start: np.ndarray, box: tuple[float, float, float, float], order: list[int]
) -> np.ndarray:
    """The ascent trajectory ``dθ/dt = +∇L`` from ``start``, in plane coordinates, shape ``(n, 2)``:
    every accepted step of Tsit5 (``rtol`` 1e-7, ``atol`` 1e-9), to a stop of
    :func:`~gradflow._flow.integrate.status_code` for ``-L`` (out past ten times the box, at a
    critical point, or after ``t = 10⁶``).

    Run backward in time, the flow follows a stable manifold away from its saddle.
    """
    scale = max(box[1] - box[0], box[3] - box[2]) + np.abs(box).max()
    options = FlowOptions(solver="Tsit5", stop=StopRule(t_max=1e6, divergence_radius=10 * scale))
    ys, _, _, n, _ = _ascent_path(model.field, options)(jnp.asarray(start, jnp.float64), model.args)
    return np.asarray(ys)[: int(n) + 1, order]


@functools.cache
def _ascent_path(field: GradientField, options: FlowOptions) -> Callable[..., tuple[Any, ...]]:
    """The recorded ascent flow of ``field`` (:meth:`BatchedRK.path`), compiled once per field
    and options, and kept between processes where the field's programs are."""
    ascent = GradientField(loss=lambda t, a: -field.loss(t, a), grad=lambda t, a: -field.grad(t, a))
    rk = BatchedRK(TSIT5, StepControl(options.rtol, options.atol), options.t_max)

    def stop(y: jax.Array, args: Any) -> jax.Array:
        return status_code(ascent, options, y, args, -jnp.inf)

    return stored_for(
        rk.path(field.grad, stop, options.max_steps), field, f"ascent path {options!r}"
    )


def _metric_at(model: Landscape, theta: np.ndarray) -> np.ndarray:
    """``G`` at ``θ``: the identity unless ``model`` flows in a metric."""
    if isinstance(model, MetricLandscape):
        return model.metric_at(theta)
    return np.eye(model.dim)


APPROACH_RADIUS = 1e-3
"""Radius (in the metric at the saddle) of the circle on which approach directions are sought."""
APPROACH_SAMPLES = 3600
"""Directions sampled on that circle."""


def _approach_branches(
    model: Landscape, saddle: np.ndarray, box: tuple[float, float, float, float], order: list[int]
) -> list[np.ndarray]:
    """Branches of the stable manifold of a degenerate saddle, from the directions along which
    the flow enters it (module docstring); in plane coordinates, each starting at the saddle."""
    g = _metric_at(model, saddle)[np.ix_(order, order)]
    root = scipy.linalg.sqrtm(g).real
    phi = np.linspace(0.0, 2 * np.pi, APPROACH_SAMPLES, endpoint=False)
    circle = np.stack([np.cos(phi), np.sin(phi)], axis=1)
    offsets = APPROACH_RADIUS * np.linalg.solve(root, circle.T).T
    points = np.repeat(saddle[None], len(phi), axis=0)
    points[:, order] += offsets
    moving = velocity(model, points)[:, order] @ root.T
    radial = np.sum(moving * circle, axis=1)
    tangential = moving[:, 1] * circle[:, 0] - moving[:, 0] * circle[:, 1]
    speed = np.linalg.norm(moving, axis=1)
    nxt = np.roll(np.arange(len(phi)), -1)
    crossing = np.flatnonzero(
        (np.sign(tangential) != np.sign(tangential[nxt]))
        & (radial < -0.9 * speed)
        & (radial[nxt] < -0.9 * speed[nxt])
    )
    branches = []
    for i in crossing:
        start = saddle.copy()
        start[order] = points[i, order]
        path = _ascend(model, start, box, order)
        branches.append(_clip(np.vstack([saddle[order], path]), box))
    return branches


def _clip(xy: np.ndarray, box: tuple[float, float, float, float]) -> np.ndarray:
    """The polyline up to its first vertex outside ``box``."""
    outside = ~_within(xy, box)
    stop = int(np.argmax(outside)) if outside.any() else len(xy)
    return xy[: stop + 1] if stop < len(xy) else xy


def _level_set_branches(
    model: Landscape, saddle: np.ndarray, box: tuple[float, float, float, float], order: list[int]
) -> list[np.ndarray]:
    """Rays of ``E = E(saddle)`` leaving the saddle along which the flow runs into it."""
    import contourpy

    name = model.invariant_names[0]
    xs = np.linspace(box[0], box[1], LEVEL_SET_RESOLUTION)
    ys = np.linspace(box[2], box[3], LEVEL_SET_RESOLUTION)
    grid = np.zeros((len(ys), len(xs), 2))
    grid[..., order[0]], grid[..., order[1]] = xs[None, :], ys[:, None]
    with np.errstate(all="ignore"):
        values = model.invariant(name, grid)
    level = float(model.invariant(name, saddle))
    lines = contourpy.contour_generator(xs, ys, np.ma.masked_invalid(values)).lines(level)
    center = saddle[order]
    near = 3 * max(xs[1] - xs[0], ys[1] - ys[0])
    rays = []
    for line in lines:
        far = np.linalg.norm(line - center, axis=1) > near
        for piece in _runs(line, far):
            if np.linalg.norm(piece[0] - center) <= 2 * near:
                rays.append(np.vstack([center, piece]))
            if np.linalg.norm(piece[-1] - center) <= 2 * near:
                rays.append(np.vstack([center, piece[::-1]]))
    kept = [ray for ray in rays if len(ray) > 2 and _flows_in(model, ray, saddle, order)]
    return [_continued(model, ray, saddle, box, order, name) for ray in kept]


LEVEL_SET_RTOL = 1e-4
"""Relative error in ``E`` up to which a traced contour vertex is trusted."""


def _continued(
    model: Landscape,
    ray: np.ndarray,
    saddle: np.ndarray,
    box: tuple[float, float, float, float],
    order: list[int],
    name: str,
) -> np.ndarray:
    """``ray`` up to its last trusted vertex, continued by the ascent flow to the edge of ``box``.

    Where the level set runs within a few grid cells of a singularity of ``E`` (for the canonical
    model, ``w → 0⁻`` as ``|e| → ∞``) the linear interpolation of the contour drifts off it; the
    flow conserves ``E`` and carries on along the level set itself.
    """
    thetas = np.repeat(saddle[None], len(ray), axis=0)
    thetas[:, order] = ray
    level = float(model.invariant(name, saddle))
    with np.errstate(all="ignore"):
        error = np.abs(model.invariant(name, thetas) - level)
    off = np.flatnonzero(~(error <= LEVEL_SET_RTOL * (1 + abs(level))))
    cell = max(box[1] - box[0], box[3] - box[2]) / (LEVEL_SET_RESOLUTION - 1)
    end = ray[-1]
    at_edge = min(end[0] - box[0], box[1] - end[0], end[1] - box[2], box[3] - end[1]) <= 2 * cell
    if off.size == 0 and at_edge:
        return ray
    trusted = ray[: max(int(off[0]) if off.size else len(ray), 2)]
    thetas[len(trusted) - 1, order] = trusted[-1]
    path = _ascend(model, thetas[len(trusted) - 1], box, order)
    return _clip(np.vstack([trusted, path[1:]]), box)


def _runs(line: np.ndarray, keep: np.ndarray) -> list[np.ndarray]:
    """Maximal runs of consecutive vertices of ``line`` where ``keep`` holds."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], keep.astype(int), [0]])))
    return [line[a:b] for a, b in zip(edges[::2], edges[1::2]) if b - a >= 2]


def _flows_in(model: Landscape, ray: np.ndarray, saddle: np.ndarray, order: list[int]) -> bool:
    """Whether ``-∇L`` at a vertex a little way out along ``ray`` points back toward its start."""
    k = min(len(ray) - 2, max(2, len(ray) // 10))
    theta = saddle.copy()
    theta[order] = ray[k]
    velocity = -model.grad(theta)[order]
    inward = ray[k - 1] - ray[k]
    return float(velocity @ inward) > 0
