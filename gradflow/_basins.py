"""Basins of attraction: integrate the flow from every point of a grid and label the endpoint.

Each grid point is labelled by the kind of critical set its trajectory reaches (``global_min``,
``local_min``, ``saddle``, ``local_max``, ``degenerate``), or ``diverged`` / ``not_converged``.
A trajectory whose loss falls below the lowest non-global critical value is labelled
``global_min`` as soon as it does (the loss decreases along the flow, so nothing else is left
for it to reach); this removes the stiff tail near the global-minimum set from the integration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import diffrax
import numpy as np

from ._classify import KINDS, classify_points
from ._critical import CriticalSet, critical_sets, decision_level, global_min_level
from ._errors import GradflowError
from ._flow import FlowOptions, Status, flow_endpoints

if TYPE_CHECKING:
    from ._bound import BoundModel

__all__ = [
    "LABELS",
    "BasinMap",
    "basins",
    "default_basin_options",
    "plane_grid",
    "widened_bounds",
]

LABELS = (*KINDS, "diverged", "not_converged")
"""Basin labels; a :class:`BasinMap` stores indices into this tuple."""


def default_basin_options() -> tuple[FlowOptions, FlowOptions]:
    """Tsit5 first (cheap steps; the stiff tail is cut off by the decision level), then Kvaerno5
    for the members whose 2,000-step budget ran out.  Measured in ``docs/performance.md``."""
    return (
        FlowOptions(solver=diffrax.Tsit5(), rtol=1e-6, atol=1e-9, max_steps=2_000),
        FlowOptions(solver=diffrax.Kvaerno5(), rtol=1e-6, atol=1e-9, max_steps=20_000),
    )


@dataclass(frozen=True)
class BasinMap:
    """A basin map on a grid of the plane ``(x, y)`` of two parameters.

    Attributes:
        plane: the parameter names on the x and y axes, e.g. ``("w", "e")``.
        xs, ys: grid coordinates, shapes ``(nx,)`` and ``(ny,)`` (endpoints included).
        fixed: values of the parameters not in the plane (a slice of a higher-dimensional flow).
        labels: indices into :data:`LABELS`, shape ``(ny, nx)`` (row = y).
        times: flow time at which each trajectory stopped, shape ``(ny, nx)``.
        steps: accepted solver steps, shape ``(ny, nx)``.
        endpoints: where each trajectory stopped, shape ``(ny, nx, dim)``.
        critical: the classified critical sets used for the labels.
        options: the integration stages used.
    """

    plane: tuple[str, str]
    xs: np.ndarray
    ys: np.ndarray
    fixed: dict[str, float]
    labels: np.ndarray
    times: np.ndarray
    steps: np.ndarray
    endpoints: np.ndarray
    critical: list[CriticalSet]
    options: tuple[FlowOptions, ...]

    def fractions(self) -> dict[str, float]:
        """Fraction of grid points per label (every label listed; they sum to 1)."""
        counts = np.bincount(self.labels.ravel(), minlength=len(LABELS))
        return {label: float(c) / self.labels.size for label, c in zip(LABELS, counts)}

    def mask(self, label: str) -> np.ndarray:
        """Boolean map of the grid points with ``label``, shape ``(ny, nx)``."""
        return self.labels == LABELS.index(label)


def plane_grid(
    model: BoundModel,
    grid: int | tuple[int, int],
    box: Sequence[float] | None = None,
    fixed: Mapping[str, float] | None = None,
    plane: tuple[str, str] | None = None,
) -> tuple[tuple[str, str], np.ndarray, np.ndarray, dict[str, float], np.ndarray]:
    """A grid of initial points on a plane of parameter space.

    Args:
        model: the model.
        grid: points per axis (``N`` for ``N × N``, or ``(nx, ny)``), at least 2, endpoints
            included like ``numpy.linspace``.
        box: ``(xmin, xmax, ymin, ymax)``; default: the model's bounds of the plane coordinates.
        fixed: values of the other parameters (default 0).
        plane: the two parameters on the axes (default: the model's ``plane``).

    Returns:
        ``(plane, xs, ys, fixed, thetas)`` with ``thetas`` of shape ``(ny, nx, dim)``.

    Raises:
        GradflowError: a grid below 2, a box with min ≥ max, unknown parameter names, the same
            parameter on both axes, a fixed value for an axis or a non-finite one.
    """
    m = model.model
    plane = tuple(plane or m.plane)
    ix, iy = m.index(plane[0]), m.index(plane[1])
    if ix == iy:
        raise GradflowError(
            f"plane ({plane[0]}, {plane[1]}): the two axes must be different parameters"
        )
    nx, ny = (grid, grid) if np.isscalar(grid) else grid
    for n in (nx, ny):
        if int(n) != n or n < 2:
            raise GradflowError(f"grid = {n!r} must be an integer ≥ 2")
    if box is None:
        box = (*m.bound(plane[0]), *m.bound(plane[1]))
    xmin, xmax, ymin, ymax = (float(v) for v in box)
    for name, lo, hi in ((plane[0], xmin, xmax), (plane[1], ymin, ymax)):
        if not lo < hi:
            raise GradflowError(f"box: {name} min {lo:g} must be below {name} max {hi:g}")
    off_plane = [n for n in m.param_names if n not in plane]
    for name, value in (fixed or {}).items():
        m.index(name)
        if name in plane:
            raise GradflowError(
                f"fixed {name} = {value!r}: {name} is an axis of the plane; only "
                f"{', '.join(off_plane) or 'no parameter'} can be fixed"
            )
        if not np.isfinite(value):
            raise GradflowError(f"fixed {name} = {value!r} must be a finite number")
    fixed = {n: float((fixed or {}).get(n, 0.0)) for n in off_plane}
    xs, ys = np.linspace(xmin, xmax, int(nx)), np.linspace(ymin, ymax, int(ny))
    thetas = np.zeros((len(ys), len(xs), m.dim))
    for name, value in fixed.items():
        thetas[..., m.index(name)] = value
    thetas[..., ix] = xs[None, :]
    thetas[..., iy] = ys[:, None]
    return plane, xs, ys, fixed, thetas


def basins(
    model: BoundModel,
    *,
    grid: int | tuple[int, int] = 101,
    box: Sequence[float] | None = None,
    fixed: Mapping[str, float] | None = None,
    plane: tuple[str, str] | None = None,
    options: FlowOptions | Sequence[FlowOptions] | None = None,
    critical: list[CriticalSet] | None = None,
    progress: bool | None = None,
) -> BasinMap:
    """Compute the basin map of the gradient flow on a grid of initial points.

    Args:
        model: the model at fixed hyperparameters.
        grid, box, fixed, plane: the grid of initial points, see :func:`plane_grid`.
        options: integration stages (default :func:`default_basin_options`).
        critical: critical sets to label with (default: :func:`critical_sets` over the box).
        progress: progress bar (default: shown once the integration has run 1.5 s).

    Returns:
        The labelled map with stopping times and endpoints.

    Raises:
        GradflowError: invalid grid or box (see :func:`plane_grid`).
    """
    plane, xs, ys, fixed, thetas = plane_grid(model, grid, box, fixed, plane)
    stages = tuple(default_basin_options() if options is None else _as_tuple(options))
    if critical is None:
        bounds = {plane[0]: (xs[0], xs[-1]), plane[1]: (ys[0], ys[-1])}
        critical = critical_sets(model, bounds=widened_bounds(model, bounds))
    decide = _decision(critical)
    flat = thetas.reshape(-1, model.model.dim)
    result = flow_endpoints(model, flat, stages, decide_below=decide, progress=progress)
    labels = _labels(model, result.endpoints, result.status, global_min_level(critical))
    shape = thetas.shape[:2]
    return BasinMap(
        plane=plane,
        xs=xs,
        ys=ys,
        fixed=fixed,
        labels=labels.reshape(shape),
        times=result.times.reshape(shape),
        steps=result.steps.reshape(shape),
        endpoints=result.endpoints.reshape(thetas.shape),
        critical=critical,
        options=stages,
    )


def _decision(critical: list[CriticalSet]) -> float | None:
    """The loss below which a trajectory is labelled ``global_min`` without integrating further.

    Just below the lowest non-global critical value.  When every critical set found is global
    (e.g. the canonical model at p + q = 1, where the chain is i.i.d.), just above the global
    minimum loss: convergence there can be algebraic, not exponential, and a steady-state test
    alone would run out of budget.
    """
    level, best = decision_level(critical), global_min_level(critical)
    if level is not None:
        return level - 1e-9 * max(1.0, abs(level))
    return None if best is None else best + 1e-6 * max(1.0, abs(best))


def _as_tuple(options: FlowOptions | Sequence[FlowOptions]) -> tuple[FlowOptions, ...]:
    return (options,) if isinstance(options, FlowOptions) else tuple(options)


def widened_bounds(
    model: BoundModel, bounds: dict[str, tuple[float, float]]
) -> dict[str, tuple[float, float]]:
    """The box enlarged by half its size: trajectories may end outside the grid's box."""
    out = {}
    for name in model.model.param_names:
        lo, hi = bounds.get(name, model.model.bound(name))
        pad = 0.5 * (hi - lo)
        out[name] = (lo - pad, hi + pad)
    return out


def _labels(
    model: BoundModel, endpoints: np.ndarray, status: np.ndarray, global_loss: float | None
) -> np.ndarray:
    """Label indices into :data:`LABELS` from endpoints and stop statuses."""
    labels = np.full(status.shape, LABELS.index("not_converged"))
    labels[status == Status.DIVERGED] = LABELS.index("diverged")
    labels[status == Status.DECIDED] = LABELS.index("global_min")
    converged = np.flatnonzero(status == Status.CONVERGED)
    if converged.size:
        kinds = classify_points(model, endpoints[converged], global_loss).kinds
        labels[converged] = [LABELS.index(k) for k in kinds]
    return labels


def fractions_table(fractions: Mapping[str, float]) -> list[tuple[str, float]]:
    """The non-zero fractions, largest first."""
    return sorted(((k, v) for k, v in fractions.items() if v > 0), key=lambda kv: -kv[1])
