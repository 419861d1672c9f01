"""The region of a basin map, a portrait or a sweep: a grid on a plane of parameter space, its
box, and the values of the parameters off the plane — checked once, where it is made.

Importable without JAX, so that the command line can refuse a bad plane, box or value before
loading a model.  A region is the one way to say where a map is drawn: :func:`gradflow.basins`,
:func:`gradflow.portrait`, :func:`gradflow.sweep` and :func:`gradflow.basin_convergence` take
``region=``, and the box in which their critical sets are searched is made by the region
(:meth:`Region.search_box`).
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._errors import GradflowError

if TYPE_CHECKING:
    from .._symbolic.model import ReducedModel
    from .base import Landscape

__all__ = [
    "MAX_BOUND",
    "REACH",
    "OnRegion",
    "Region",
    "check_range",
    "check_region",
    "grid_axis",
    "nested_grids",
]

REACH = 0.5
"""How far past a map's box its critical sets are searched, in widths of the box on each side:
trajectories from the grid may end outside it."""


@dataclass(frozen=True)
class Region:
    """A grid of ``nx × ny`` points on the plane of two parameters, in a box, with every other
    parameter held at a value.

    Build one with :meth:`of` (defaults from a landscape) or directly; either way it is checked
    (:func:`check_region`) and holds only valid values.

    Attributes:
        names: every parameter name, in the landscape's order (``dim`` of them).
        plane: the parameters on the x and y axes, e.g. ``("w", "e")``.
        box: ``(xmin, xmax, ymin, ymax)``, finite, ``xmin < xmax`` and ``ymin < ymax``.
        grid: ``(nx, ny)`` points per axis, each at least 2, endpoints included.
        fixed: the value of every parameter off the plane (finite).

    Raises:
        GradflowError: see :func:`check_region`.
    """

    names: tuple[str, ...]
    plane: tuple[str, str]
    box: tuple[float, float, float, float]
    grid: tuple[int, int]
    fixed: dict[str, float]

    def __post_init__(self) -> None:
        check_region(self.names, self.plane, self.grid, self.box, self.fixed)
        off_plane = [n for n in self.names if n not in self.plane]
        fixed = {n: float(self.fixed.get(n, 0.0)) for n in off_plane}
        set_field = object.__setattr__
        set_field(self, "names", tuple(self.names))
        set_field(self, "plane", (self.plane[0], self.plane[1]))
        set_field(self, "box", tuple(float(v) for v in self.box))
        set_field(self, "grid", (int(self.grid[0]), int(self.grid[1])))
        set_field(self, "fixed", fixed)

    @classmethod
    def of(
        cls,
        landscape: Landscape | ReducedModel,
        grid: int | Sequence[int] = 101,
        box: Sequence[float] | None = None,
        fixed: Mapping[str, float] | None = None,
        plane: Sequence[str] | None = None,
    ) -> Region:
        """The region of ``landscape`` given by the engine's keyword arguments.

        Args:
            landscape: the loss whose parameters the region spans (or a reduced model, whose
                parameters and ranges are those of every landscape it binds).
            grid: points per axis: ``N`` for ``N × N``, or ``(nx, ny)``.
            box: ``(xmin, xmax, ymin, ymax)``; default the landscape's bounds of the plane.
            fixed: values of the parameters off the plane (default 0).
            plane: the two parameters on the axes (default ``landscape.plane``).

        Raises:
            GradflowError: see :func:`check_region`.
        """
        names = tuple(landscape.param_names)
        plane = tuple(plane or landscape.plane or ())
        check_region(names, plane, fixed=fixed)
        if box is None:
            box = (*landscape.bound(plane[0]), *landscape.bound(plane[1]))
        nx, ny = (grid, grid) if np.isscalar(grid) else grid
        return cls(names, plane, tuple(box), (nx, ny), dict(fixed or {}))

    @property
    def xs(self) -> np.ndarray:
        """The x coordinates, shape ``(nx,)`` (:func:`grid_axis`)."""
        return grid_axis(self.box[0], self.box[1], self.grid[0])

    @property
    def ys(self) -> np.ndarray:
        """The y coordinates, shape ``(ny,)``."""
        return grid_axis(self.box[2], self.box[3], self.grid[1])

    @property
    def plane_order(self) -> tuple[int, int]:
        """Indices of the plane's two parameters in a point ``θ``."""
        return (self.names.index(self.plane[0]), self.names.index(self.plane[1]))

    def points(self) -> np.ndarray:
        """Every grid point as a full parameter vector, shape ``(ny, nx, dim)`` (row = y)."""
        xs, ys = self.xs, self.ys
        thetas = np.zeros((len(ys), len(xs), len(self.names)))
        for name, value in self.fixed.items():
            thetas[..., self.names.index(name)] = value
        ix, iy = self.plane_order
        thetas[..., ix] = xs[None, :]
        thetas[..., iy] = ys[:, None]
        return thetas

    def bounds(self) -> dict[str, tuple[float, float]]:
        """``{x: (xmin, xmax), y: (ymin, ymax)}``, the box by parameter name."""
        return {self.plane[0]: self.box[:2], self.plane[1]: self.box[2:]}

    def check_params(self, landscape: Landscape) -> None:
        """Check that ``landscape`` has the region's parameters, in its order.

        Raises:
            GradflowError: other parameters (one line naming both lists).
        """
        if tuple(landscape.param_names) != self.names:
            raise GradflowError(
                f"region over parameters {', '.join(self.names)}; the landscape's are "
                f"{', '.join(landscape.param_names)}"
            )

    def search_box(self, landscape: Landscape, on_slice: bool = False) -> np.ndarray:
        """Where the critical sets of a map on this region are searched: the region's box on
        the plane and the landscape's range of every other parameter, each widened by
        :data:`REACH` of its width on each side; with ``on_slice``, the parameters off the plane
        pinned at their values (only the critical points on the region's slice).

        Returns:
            shape ``(dim, 2)``, rows ``(lo, hi)`` in parameter order, ``lo == hi`` where pinned
            (what :func:`gradflow.critical_sets` takes as ``box``).

        Raises:
            GradflowError: a landscape over other parameters than the region's.
        """
        self.check_params(landscape)
        return landscape.search_box(self.bounds(), self.fixed if on_slice else None, widen=REACH)

    def with_grid(self, grid: int | Sequence[int]) -> Region:
        """The same plane, box and values on another grid."""
        nx, ny = (grid, grid) if np.isscalar(grid) else grid
        return dataclasses.replace(self, grid=(nx, ny))

    def box_text(self) -> str:
        """``"w ∈ [-3, 3], e ∈ [-3, 3]"``: the box with each range named by its parameter,
        horizontal axis first (a printed box never leaves the order of its numbers to be
        guessed)."""
        (x, y), (x0, x1, y0, y1) = self.plane, self.box
        return f"{x} ∈ [{x0:.4g}, {x1:.4g}], {y} ∈ [{y0:.4g}, {y1:.4g}]"

    def fixed_text(self) -> str:
        """``", a = 0.5, b = 0"``: the values off the plane, for titles (empty on a plane)."""
        return "".join(f", {k} = {v:g}" for k, v in self.fixed.items())

    def metadata(self) -> dict[str, Any]:
        """JSON-ready: ``{"plane", "box", "grid", "fixed"}``."""
        return {
            "plane": list(self.plane),
            "box": list(self.box),
            "grid": list(self.grid),
            "fixed": dict(self.fixed),
        }


class OnRegion:
    """A result computed on a :class:`Region` (a basin map, a portrait, a sweep): the region's
    plane, box and values off the plane read as the result's own."""

    region: Region

    @property
    def plane(self) -> tuple[str, str]:
        """The parameters on the x and y axes, e.g. ``("w", "e")``."""
        return self.region.plane

    @property
    def box(self) -> tuple[float, float, float, float]:
        """``(xmin, xmax, ymin, ymax)``."""
        return self.region.box

    @property
    def fixed(self) -> dict[str, float]:
        """The values of the parameters off the plane."""
        return self.region.fixed


def check_region(
    names: Sequence[str],
    plane: Sequence[str],
    grid: int | Sequence[int] | None = None,
    box: Sequence[float] | None = None,
    fixed: Mapping[str, float] | None = None,
) -> None:
    """The one check of a region's parts; ``None`` skips a part (the command line checks what
    it has before a model is loaded).

    Args:
        names: the parameter names in order.
        plane: the two parameters on the axes.
        grid: points per axis (``N`` or ``(nx, ny)``), at least 2.
        box: ``(xmin, xmax, ymin, ymax)``.
        fixed: values of parameters off the plane.

    Raises:
        GradflowError: an unknown name, the same parameter on both axes, a grid below 2, a box
            with min ≥ max, a non-finite bound, a width beyond the largest float or a bound
            beyond :data:`MAX_BOUND`, a fixed
            value for an axis or a non-finite one — one line naming the value and the range.
    """
    if len(plane) != 2:
        raise GradflowError(f"plane {tuple(plane)}: a plane has two parameters")
    for name in [*plane, *(fixed or {})]:
        if name not in names:
            raise GradflowError(f"unknown parameter {name!r}; parameters are {', '.join(names)}")
    if plane[0] == plane[1]:
        raise GradflowError(
            f"plane ({plane[0]}, {plane[1]}): the two axes must be different parameters"
        )
    if grid is not None:
        for n in (grid, grid) if np.isscalar(grid) else grid:
            if isinstance(n, bool) or int(n) != n or n < 2:
                raise GradflowError(f"grid = {n!r} must be an integer ≥ 2")
    if box is not None:
        if len(box) != 4:
            (x, y) = plane
            raise GradflowError(
                f"box {tuple(box)}: expected four numbers ({x}min, {x}max, {y}min, {y}max)"
            )
        xmin, xmax, ymin, ymax = (float(v) for v in box)
        check_range(plane[0], xmin, xmax)
        check_range(plane[1], ymin, ymax)
        for name, lo, hi in ((plane[0], xmin, xmax), (plane[1], ymin, ymax)):
            if max(abs(lo), abs(hi)) > MAX_BOUND:
                raise GradflowError(
                    f"box: {name} from {lo:g} to {hi:g} is too wide: each bound must lie in "
                    f"[{-MAX_BOUND:g}, {MAX_BOUND:g}]"
                )
    off_plane = [n for n in names if n not in plane]
    for name, value in (fixed or {}).items():
        if name in plane:
            raise GradflowError(
                f"fixed {name} = {value!r}: {name} is an axis of the plane; only "
                f"{', '.join(off_plane) or 'no parameter'} can be fixed"
            )
        if not math.isfinite(value):
            raise GradflowError(f"fixed {name} = {value!r} must be a finite number")


MAX_BOUND = 1e15
"""The largest magnitude of a bound of a region's box: beyond it float64 no longer resolves a
unit step (its spacing there is 0.125, and 1 at 2⁵³ ≈ 9·10¹⁵), and a loss's squares and
products of the bounds run towards overflow (``e²w²`` of the canonical model at ``10⁸⁰``)."""


def check_range(name: str, lo: float, hi: float) -> None:
    """The one check of a parameter's range in a box (a region's, or a search box's).

    Raises:
        GradflowError: ``lo ≥ hi``, a bound that is not finite, or a width beyond the largest
            float — one line naming the parameter and its values.
    """
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise GradflowError(f"box: {name} min {lo:g} must be below {name} max {hi:g}, both finite")
    if not math.isfinite(hi - lo):
        raise GradflowError(
            f"box: {name} from {lo:g} to {hi:g} is wider than the largest float "
            f"({sys.float_info.max:.3g}); give a narrower box"
        )


def nested_grids(grids: Sequence[int]) -> tuple[int, ...]:
    """``grids`` (points per axis) ascending, each nested in the finest: its points are every
    ``(G - 1)/(g - 1)``-th point of the finest grid ``G`` on the same box.

    Raises:
        GradflowError: a grid below 2, or one whose ``g - 1`` does not divide ``G - 1``.
    """
    out = tuple(sorted({int(g) for g in grids}))
    if not out or out[0] < 2:
        raise GradflowError(f"grids {list(grids)}: each must be at least 2 points per axis")
    finest = out[-1]
    odd = [g for g in out if (finest - 1) % (g - 1)]
    if odd:
        raise GradflowError(
            f"grids {odd} are not nested in the {finest}-point grid: N - 1 must divide "
            f"{finest - 1} (e.g. 101, 201, 401, 801)"
        )
    return out


def grid_axis(lo: float, hi: float, n: int) -> np.ndarray:
    """``n ≥ 2`` evenly spaced values from ``lo`` to ``hi`` (both included), shape ``(n,)``.

    The ``i``-th value is ``m + h·u_i`` with ``m = (lo + hi)/2``, ``h = (hi - lo)/2`` and
    ``u_i = (2i - (n - 1))/(n - 1)``, each ``u_i`` the correctly rounded quotient of two integers.
    So an axis symmetric about 0 is exactly symmetric in floating point (``x_{n-1-i} = -x_i``,
    which ``numpy.linspace`` does not promise), and the axis of ``2n - 1`` values holds exactly
    the values of the axis of ``n`` at its even positions: a point's coordinates, and so its
    trajectory, do not depend on the grid that contains it.
    """
    mid, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
    u = (2.0 * np.arange(n) - (n - 1)) / (n - 1)
    axis = mid + half * u
    axis[0], axis[-1] = lo, hi
    return axis
