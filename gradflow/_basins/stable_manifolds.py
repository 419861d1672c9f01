"""Grid points on the stable manifold of a saddle or a maximum: found at a basin's edge by a loose
steady-state test, and labelled with the saddle (so a symmetric loss gets a symmetric map).
"""

from __future__ import annotations

import numpy as np

from .._critical.attractors import AttractorIndex
from .._critical.classify import spectra
from .._flow.flows import flow_endpoints
from .._flow.options import FlowOptions
from .._landscape.base import Landscape
from .._landscape.scales import loss_scales
from .._outcome import Kind, Outcome

__all__ = ["MINIMA", "PASSED", "SADDLE_PASS", "stable_manifolds", "uncertain"]


MINIMA = (Kind.GLOBAL_MIN, Kind.LOCAL_MIN)
"""The attractor kinds a float32 label may keep; a point the float32 pass takes to a saddle, a
maximum or a degenerate set (its ``‖∇L‖ ≤ 1e-4`` stop may be met far from one on a flat loss)
is integrated again."""


PASSED = 1e-6
"""A trajectory of the loose pass is done once its loss is this far (relative to the larger of
the loss scale and the level) below every saddle and maximum it could stop at."""


SADDLE_PASS = 1e-5
"""A trajectory from a basin's edge that ends at a minimum is integrated again with the
steady-state test ``‖∇L‖ ≤ SADDLE_PASS·g``: if that stops it at a saddle or maximum, its start
lies within float64 rounding of the stable manifold (within about ``SADDLE_PASS²`` of the box
size), and the saddle is its label."""


def stable_manifolds(
    landscape: Landscape,
    index: AttractorIndex,
    flat: np.ndarray,
    ids: np.ndarray,
    shape: tuple[int, int],
    stage: FlowOptions,
) -> np.ndarray:
    """``ids`` with the grid points that lie on a stable manifold of a saddle or maximum
    relabelled with it.

    A start on the stable manifold of a saddle (as on the invariant line of a symmetric loss)
    approaches the saddle while rounding errors of ``∇L`` grow along its unstable directions;
    a tight steady-state test may then meet a minimum instead, on either side, so that a
    symmetric loss gets an asymmetric map.  Such a start lies on a basin's edge, next to grid
    points with another attractor; those that ended at a minimum are integrated again with the
    loose test :data:`SADDLE_PASS`, which stops them where they pass the saddle.  Only
    saddles and maxima whose Hessian is nondegenerate across them count: near a degenerate one
    (a vanishing Hessian) ``∇L`` is small far from it, and trajectories passing by would stop.
    A trajectory whose loss falls :data:`PASSED` below every such set's loss can no longer stop
    at one (the loss never increases along the flow), so it is not followed further.  The loose
    pass keeps every stop at a small gradient (no escape check): stopping where a trajectory
    passes the saddle is its purpose.
    """
    minima = np.array([a.kind in MINIMA for a in index.attractors] + [False])
    edge = np.flatnonzero(uncertain(ids, shape) & minima[ids])
    if not edge.size:
        return ids
    points = np.array([a.point for a in index.attractors])
    nullity = spectra(landscape, points).nullity
    hyperbolic = np.array([n <= a.dimension for a, n in zip(index.attractors, nullity)] + [False])
    stops = [a.loss for a, h, m in zip(index.attractors, hyperbolic, minima) if h and not m]
    if not stops:
        return ids
    top = max(stops)
    loose = stage.with_stop(gtol=SADDLE_PASS)
    below = top - PASSED * max(loss_scales(landscape).loss, abs(top))
    passing = flow_endpoints(
        landscape, flat[edge], loose, decide_below=below, progress=False, escape_check=False
    )
    near = np.where(passing.status == Outcome.CONVERGED, index.match(passing.endpoints), -1)
    via = (near >= 0) & ~minima[near] & hyperbolic[near]
    ids = ids.copy()
    ids[edge[via]] = near[via]
    return ids


def uncertain(ids: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Grid points to integrate again: those with no attractor, and those next to a grid point
    (left, right, up, down) that reached another one."""
    grid = ids.reshape(shape)
    redo = grid < 0
    across = grid[:, 1:] != grid[:, :-1]
    along = grid[1:, :] != grid[:-1, :]
    redo[:, 1:] |= across
    redo[:, :-1] |= across
    redo[1:, :] |= along
    redo[:-1, :] |= along
    return redo.ravel()
