"""Checks of a plane of parameter space, a grid on it and a box, by names alone.

Importable without JAX, so that the command line can refuse bad input before loading a model;
the engine's own grid functions use the same checks.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence

from ._errors import GradflowError

__all__ = ["check_plane_grid"]


def check_plane_grid(
    names: Sequence[str],
    plane: Sequence[str],
    grid: int | Sequence[int] | None = None,
    box: Sequence[float] | None = None,
    fixed: Mapping[str, float] | None = None,
) -> None:
    """Check a plane of the parameters ``names``, a grid, a box and fixed values off the plane.

    Args:
        names: the parameter names in order.
        plane: the two parameters on the axes.
        grid: points per axis (``N`` or ``(nx, ny)``), at least 2; ``None`` skips the check.
        box: ``(xmin, xmax, ymin, ymax)``; ``None`` skips the check.
        fixed: values of parameters off the plane.

    Raises:
        GradflowError: an unknown name, the same parameter on both axes, a grid below 2, a box
            with min ≥ max, a non-finite bound or a width beyond the largest float, a fixed value for an axis or a non-finite one.
    """
    for name in [*plane, *(fixed or {})]:
        if name not in names:
            raise GradflowError(f"unknown parameter {name!r}; parameters are {', '.join(names)}")
    if plane[0] == plane[1]:
        raise GradflowError(
            f"plane ({plane[0]}, {plane[1]}): the two axes must be different parameters"
        )
    if grid is not None:
        for n in (grid, grid) if isinstance(grid, int) else grid:
            if int(n) != n or n < 2:
                raise GradflowError(f"grid = {n!r} must be an integer ≥ 2")
    if box is not None:
        xmin, xmax, ymin, ymax = (float(v) for v in box)
        for name, lo, hi in ((plane[0], xmin, xmax), (plane[1], ymin, ymax)):
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise GradflowError(
                    f"box: {name} min {lo:g} must be below {name} max {hi:g}, both finite"
                )
            if not math.isfinite(hi - lo):
                raise GradflowError(
                    f"box: {name} from {lo:g} to {hi:g} is wider than the largest float "
                    f"({sys.float_info.max:.3g}); give a narrower box"
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
