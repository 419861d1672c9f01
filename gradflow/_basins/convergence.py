"""How a basin map's shares move with the grid's spacing and the solver's tolerances.

The grids are nested: a map of ``G`` points per axis holds the maps of ``g`` points for every
``g`` with ``(G - 1)`` a multiple of ``(g - 1)`` (every ``(G - 1)/(g - 1)``-th point, the same
box), so one map per tolerance at the finest grid gives every coarser one.  A share that still
moves from one grid to the next is not converged to the last digit printed; one that moves with
the tolerances depends on the solver along the basins' edges.
"""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._critical.attractors import Attractor
from .._critical.search import critical_sets
from .._critical.sets import CriticalSets
from .._errors import GradflowError
from .._flow.options import PID, FlowOptions
from .._landscape.base import Landscape
from .._landscape.metric import Metric
from .._landscape.region import Region, nested_grids
from .._output.text import TABLE_WIDTH, format_table
from .basins import basins, default_basin_options, region_of

__all__ = [
    "CONVERGENCE_GRIDS",
    "CONVERGENCE_TOLERANCES",
    "BasinConvergence",
    "basin_convergence",
    "tolerance_stages",
]

CONVERGENCE_GRIDS = (101, 201, 401, 801)
"""Points per axis of the nested grids of :func:`basin_convergence` (each halves the spacing
of the one before)."""
CONVERGENCE_TOLERANCES = (1e-5, 1e-6, 1e-7)
"""``rtol`` of the float64 stages in :func:`basin_convergence` (the default stages have
``1e-6``); see :func:`tolerance_stages`."""


def tolerance_stages(rtol: float) -> tuple[FlowOptions, ...]:
    """The default basin stages (:func:`~gradflow.default_basin_options`) with ``rtol``,
    ``atol = rtol/1000`` and ``gtol = rtol/100`` (at ``rtol = 1e-6`` the defaults: ``atol``
    1e-9, ``gtol`` 1e-8).

    Raises:
        GradflowError: ``rtol`` not positive.
    """
    return tuple(
        dataclasses.replace(
            stage.with_stop(gtol=rtol * 1e-2), controller=PID(rtol=rtol, atol=rtol * 1e-3)
        )
        for stage in default_basin_options()
    )


@dataclass(frozen=True)
class BasinConvergence:
    """The shares of each attractor over nested grids and solver tolerances.

    Attributes:
        grids: points per axis, ascending; every one nested in the last.
        tolerances: the ``rtol`` of each row block (:func:`tolerance_stages`).
        attractors: every attractor some map reaches (ids as the maps number them).
        shares: ``shares[i, j, k]``, the share of attractor ``k`` at tolerance ``i`` on grid
            ``j``, shape ``(len(tolerances), len(grids), len(attractors))``.
        region: the finest grid's region.
    """

    grids: tuple[int, ...]
    tolerances: tuple[float, ...]
    attractors: tuple[Attractor, ...]
    shares: np.ndarray
    region: Region

    def grid_changes(self) -> np.ndarray:
        """``max_k |Δ share|`` from each grid to the next finer one, at each tolerance, shape
        ``(len(tolerances), len(grids) - 1)``."""
        return np.abs(np.diff(self.shares, axis=1)).max(axis=2, initial=0.0)

    def tolerance_changes(self) -> np.ndarray:
        """``max_k |Δ share|`` from each tolerance to the next, on each grid, shape
        ``(len(tolerances) - 1, len(grids))``."""
        return np.abs(np.diff(self.shares, axis=0)).max(axis=2, initial=0.0)

    def text(self) -> str:
        """One row per tolerance and grid: the shares, and the largest change from the row of
        the coarser grid (``Δ grid``) and from the previous tolerance (``Δ rtol``)."""
        header = ["rtol", "grid"] + [f"#{a.id} {a.kind}" for a in self.attractors]
        header += ["Δ grid", "Δ rtol"]
        by_grid, by_tol = self.grid_changes(), self.tolerance_changes()
        rows = []
        for i, tol in enumerate(self.tolerances):
            for j, g in enumerate(self.grids):
                rows.append(
                    [f"{tol:g}", f"{g}"]
                    + [f"{v:.4f}" for v in self.shares[i, j]]
                    + [
                        f"{by_grid[i, j - 1]:.4f}" if j else "",
                        f"{by_tol[i - 1, j]:.4f}" if i else "",
                    ]
                )
        finest = self.grids[-1]
        nested = ", ".join(f"{g} (every {(finest - 1) // (g - 1)})" for g in self.grids[:-1])
        title = (
            f"basin shares over nested grids of one {finest} × {finest} map per tolerance: "
            f"{nested}; atol = rtol/1000, gtol = rtol/100"
        )
        return f"{textwrap.fill(title, TABLE_WIDTH)}\n{format_table(header, rows)}"

    def __repr__(self) -> str:
        return self.text()

    def metadata(self) -> dict[str, Any]:
        """JSON-ready: ``{"grids", "tolerances", "attractors": [{"id", "kind", "set",
        "point"}], "shares": [[[…]]], "grid_changes", "tolerance_changes"}``."""
        return {
            "grids": list(self.grids),
            "tolerances": list(self.tolerances),
            "attractors": [
                {"id": a.id, "kind": a.kind, "set": a.set, "point": a.point.tolist()}
                for a in self.attractors
            ],
            "shares": self.shares.tolist(),
            "grid_changes": self.grid_changes().tolist(),
            "tolerance_changes": self.tolerance_changes().tolist(),
        }


def basin_convergence(
    landscape: Landscape,
    *,
    grids: Sequence[int] = CONVERGENCE_GRIDS,
    tolerances: Sequence[float] = CONVERGENCE_TOLERANCES,
    region: Region | None = None,
    critical: CriticalSets | None = None,
    progress: bool | None = None,
    metric: str | Metric | None = None,
) -> BasinConvergence:
    """Basin maps at each tolerance on the finest grid, read on every nested grid.

    Args:
        landscape: the loss.
        grids: points per axis, each nested in the finest (default :data:`CONVERGENCE_GRIDS`).
        tolerances: ``rtol`` of the float64 stages (:func:`tolerance_stages`; default
            :data:`CONVERGENCE_TOLERANCES`); every map has the float32 first pass.
        region: the plane, box and values off the plane, as for :func:`gradflow.basins`; its
            grid is replaced by the finest of ``grids`` (default ``Region.of(landscape)``).
        critical: the critical sets (default: searched once in the region's search box).
        progress: progress bars of the maps.
        metric: the metric of the flow.

    Returns:
        The shares (:class:`BasinConvergence`).

    Raises:
        GradflowError: grids that are not nested, a tolerance that is not positive, or a
            region over other parameters than the landscape's.
    """
    grids = nested_grids(grids)
    if not tolerances or not all(t > 0 for t in tolerances):
        raise GradflowError(f"tolerances {list(tolerances)} must be positive numbers")
    finest = region_of(landscape, region).with_grid(grids[-1])
    if critical is None:
        critical = critical_sets(landscape, box=finest.search_box(landscape))
    maps = [
        basins(
            landscape,
            region=finest,
            options=tolerance_stages(float(t)),
            float32_first=True,
            critical=critical,
            progress=progress,
            metric=metric,
        )
        for t in tolerances
    ]
    seen: dict[int, Attractor] = {}
    for bm in maps:
        for a in bm.reached():
            seen.setdefault(a.id, a)
    attractors = tuple(seen[i] for i in sorted(seen))
    shares = np.zeros((len(maps), len(grids), len(attractors)))
    for i, bm in enumerate(maps):
        for j, g in enumerate(grids):
            step = (grids[-1] - 1) // (g - 1)
            ids = bm.attractor_ids[::step, ::step]
            shares[i, j] = [np.mean(ids == a.id) for a in attractors]
    return BasinConvergence(
        grids=grids,
        tolerances=tuple(float(t) for t in tolerances),
        attractors=attractors,
        shares=shares,
        region=finest,
    )
