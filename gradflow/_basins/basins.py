"""Basins of attraction: integrate the flow from every point of a grid and name what it reached.

Each grid point carries the **attractor** its trajectory reached — a connected component of a
classified critical set, with its id (so the two wells of a double well are two basins) — and
the attractor's kind, or the label ``diverged``, ``not_converged`` or ``non_smooth``.

Where a landscape proves it (:attr:`~gradflow.Landscape.sublevel_shortcut`), a trajectory whose
loss falls below every non-global critical value is stopped there: it can only end on a global
minimum, namely on the component of the sublevel set it is in.  This removes the stiff tail near
the global-minimum set from the integration.  The component is identified by a straight segment
to a global-minimum sample that stays below that level; a trajectory for which no such segment
is found is integrated on to its end.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .._critical.attractors import AttractorIndex
from .._critical.search import critical_sets
from .._critical.sets import CriticalSets
from .._flow.batched import FlowEndpoints
from .._flow.flows import flow_endpoints
from .._flow.kink_settle import settled
from .._flow.options import PID, FlowOptions, StopRule
from .._flow.prepare import prepare_endpoints
from .._landscape.base import Landscape
from .._landscape.metric import Metric, in_metric
from .._landscape.region import Region
from .._landscape.scales import loss_scales
from .._outcome import Outcome
from .._output.memory import basin_memory, check_memory
from .basin_map import BasinMap
from .evidence import found_by_flow, judged
from .stable_manifolds import MINIMA, stable_manifolds, uncertain
from .sublevel import below_level, shortcut_level

__all__ = [
    "FAST_CHUNK",
    "FAST_MARGIN",
    "FAST_ROUND",
    "FAST_STEPS",
    "basins",
    "default_basin_options",
    "fast_basin_options",
    "prepare_basins",
    "prepared",
    "region_of",
]


def default_basin_options() -> tuple[FlowOptions, FlowOptions]:
    """Tsit5 first (cheap steps), then the Rosenbrock method Rodas4 for the members whose
    2,000-step budget ran out (stiff regions).  Measured in ``docs/performance.md``."""
    return (
        FlowOptions(
            solver="Tsit5", controller=PID(rtol=1e-6, atol=1e-9), stop=StopRule(max_steps=2_000)
        ),
        FlowOptions(
            solver="Rodas4", controller=PID(rtol=1e-6, atol=1e-9), stop=StopRule(max_steps=20_000)
        ),
    )


def basins(
    landscape: Landscape,
    *,
    region: Region | None = None,
    options: FlowOptions | Sequence[FlowOptions] | None = None,
    critical: CriticalSets | None = None,
    progress: bool | None = None,
    float32_first: bool = True,
    metric: str | Metric | None = None,
    evidence: bool = True,
) -> BasinMap:
    """Compute the basin map of the gradient flow on a grid of initial points.

    Unless ``float32_first=False``, every grid point is first integrated in float32
    (:func:`fast_basin_options`, whatever ``options`` are); the points whose outcome is uncertain
    — not converged, diverged, stuck, near no attractor, at a saddle or maximum, or next to a
    grid point with another attractor (the basin boundaries) — are integrated again in float64
    with the stages ``options``.  On a CPU a float32 step costs about an eighth of a float64 one, and the boundaries
    hold a vanishing share of a fine grid.  The float32 pass keeps its stops at a small
    gradient unchecked for an escape from a saddle (its stops at saddles are integrated
    again); the float64 pass checks them (``escape_check`` of :func:`gradflow.flow_endpoints`).

    Args:
        landscape: the loss (e.g. a model bound to its hyperparameters).
        region: the grid of initial points, its box and plane and the values off the plane
            (:class:`gradflow.Region`; default ``Region.of(landscape)``: 101 × 101 points of
            the landscape's box on its plane, every other parameter 0).
        options: integration stages (default :func:`default_basin_options`).
        critical: critical sets to label with (default: :func:`critical_sets` in the region's
            search box, :meth:`gradflow.Region.search_box`).
        progress: progress bar (default: shown once the integration has run 1.5 s).
        float32_first: the float32 first pass (default on, with any ``options``); ``False``
            integrates every point with ``options`` in float64 alone (the reference the pass
            is tested against: the same labels).
        metric: the metric ``G`` of the flow ``dθ/dt = -G⁻¹∇L`` (see :func:`gradflow.flow`);
            the critical sets, and so the attractors, are the same in every metric.
        evidence: judge every label, proven or numerical (default); ``False`` leaves the map
            unjudged (``evidence`` ``None``), for timing what the evidence costs.

    Returns:
        The map: attractor ids and labels by kind, stopping times and endpoints.

    Raises:
        GradflowError: a region over other parameters than the landscape's, or a grid whose
            map needs more than half of the memory available now (:func:`gradflow.basin_memory`).
    """
    region = region_of(landscape, region)
    nx, ny = region.grid
    check_memory(f"grid {nx} × {ny}", basin_memory((nx, ny), landscape.dim))
    thetas = region.points()
    stages = _stages(options)
    if critical is None:
        with prepared(landscape, region, options, float32_first, metric):
            critical = critical_sets(landscape, box=region.search_box(landscape))
    model = landscape
    landscape = in_metric(landscape, metric, at=thetas.reshape(-1, landscape.dim)[0])
    scale = loss_scales(landscape).loss
    level = shortcut_level(critical, scale) if landscape.sublevel_shortcut else None
    flat = thetas.reshape(-1, landscape.dim)
    index = AttractorIndex(landscape, critical, critical.box, center=_center(flat))
    ids, status = np.full(len(flat), -1), np.full(len(flat), int(Outcome.NOT_CONVERGED))
    endpoints, times, steps = flat.copy(), np.zeros(len(flat)), np.zeros(len(flat), dtype=int)
    redo = np.ones(len(flat), dtype=bool)
    if float32_first:
        first = flow_endpoints(
            landscape,
            flat,
            fast_basin_options(),
            decide_below=None if level is None else level - FAST_MARGIN * max(scale, abs(level)),
            progress=progress,
            dtype=np.float32,
            chunk_size=FAST_CHUNK,
            steps_per_round=FAST_ROUND,
            escape_check=False,
            desc="basin map, float32 pass",
        )
        ids, status, endpoints = _attractor_ids(
            landscape, index, critical, first, level, stages, add_found=False
        )
        times, steps = first.times, first.steps.copy()
        minima = np.array([a.kind in MINIMA for a in index.attractors] + [False])
        redo = uncertain(ids, thetas.shape[:2]) | ~minima[ids]
    if redo.any():
        again = flow_endpoints(
            landscape,
            flat[redo],
            stages,
            decide_below=level,
            progress=progress and not float32_first,
            desc="basin map, float64" + (" (uncertain points)" if float32_first else ""),
        )
        found = _attractor_ids(landscape, index, critical, again, level, stages, add_found=True)
        ids[redo], status[redo], endpoints[redo] = found
        times[redo] = again.times
        steps[redo] += again.steps
    ids = stable_manifolds(landscape, index, flat, ids, thetas.shape[:2], stages[0])
    codes = np.array([a.kind.code for a in index.attractors] + [0], dtype=int)
    labels = np.where(ids >= 0, codes[ids], status)
    judging = time.perf_counter()
    if evidence:
        euclidean = landscape.metric_name == "euclidean" and not stages[0].descent
        reason_codes, reasons, identifying = judged(
            model, index, critical, flat, endpoints, ids, labels, level, euclidean
        )
    else:
        reason_codes, reasons = np.zeros(len(ids), dtype=int), ["numerical: not judged"]
        identifying = np.zeros(1, dtype=bool)
    proven = np.array([r.startswith("proven") for r in reasons], dtype=bool)
    codes_proven = proven[reason_codes].astype(np.int8)
    counts = np.bincount(ids[ids >= 0], minlength=len(index.attractors))
    sure = np.bincount(ids[(ids >= 0) & identifying[reason_codes]], minlength=len(index.attractors))
    shape = thetas.shape[:2]
    full = _with_area(ids.reshape(shape))
    attractors = tuple(
        dataclasses.replace(
            a,
            fraction=float(c) / ids.size,
            proven=float(k) / ids.size,
            measure_zero=c > 0 and a.id not in full and a.kind not in MINIMA,
        )
        for a, c, k in zip(index.attractors, counts, sure)
    )
    return BasinMap(
        region=region,
        labels=labels.reshape(shape),
        attractor_ids=ids.reshape(shape),
        attractors=attractors,
        times=times.reshape(shape),
        steps=steps.reshape(shape),
        endpoints=endpoints.reshape(thetas.shape),
        critical=critical,
        options=stages,
        shortcut=level is not None,
        metric=landscape.metric_name,
        evidence=codes_proven.reshape(shape) if evidence else None,
        reason_codes=reason_codes.reshape(shape) if evidence else None,
        reasons=tuple(reasons) if evidence else (),
        evidence_seconds=time.perf_counter() - judging if evidence else 0.0,
    )


def _stages(options: FlowOptions | Sequence[FlowOptions] | None) -> tuple[FlowOptions, ...]:
    """The float64 stages of a basin map: ``options`` as a tuple, or the default ones."""
    if options is None:
        return default_basin_options()
    return (options,) if isinstance(options, FlowOptions) else tuple(options)


def prepare_basins(
    landscape: Landscape,
    region: Region,
    options: FlowOptions | Sequence[FlowOptions] | None = None,
    float32_first: bool = True,
    metric: str | Metric | None = None,
) -> None:
    """Load or compile, ahead, the program of the first rounds of :func:`basins` with the same
    arguments (:func:`gradflow._flow.prepare.prepare_endpoints`): those of the float32 pass, or
    without it of the float64 stages over every grid point.  Meant for a second thread while
    the critical sets are found, which overlaps the longest compile of a map on a new machine
    with them; no result depends on whether it ran.  (The float64 pass of a map's uncertain
    points compiles a batch size that only the float32 pass decides.)"""
    flat = region.points().reshape(-1, landscape.dim)
    flows = in_metric(landscape, metric, at=flat[0])
    if not float32_first:
        prepare_endpoints(flows, flat, _stages(options))
        return
    prepare_endpoints(
        flows,
        flat,
        fast_basin_options(),
        chunk_size=FAST_CHUNK,
        steps_per_round=FAST_ROUND,
        dtype=np.float32,
    )


@contextlib.contextmanager
def prepared(
    landscape: Landscape,
    region: Region,
    options: FlowOptions | Sequence[FlowOptions] | None = None,
    float32_first: bool = True,
    metric: str | Metric | None = None,
) -> Iterator[None]:
    """The block runs while a second thread prepares the basin map of these arguments
    (:func:`prepare_basins`); on leaving it, the preparation is waited for (its error, if any,
    raised)."""
    with ThreadPoolExecutor(max_workers=1) as ahead:
        ready = ahead.submit(prepare_basins, landscape, region, options, float32_first, metric)
        yield
    ready.result()


def region_of(landscape: Landscape, region: Region | None, default_grid: int = 101) -> Region:
    """``region``, or ``Region.of(landscape)`` on a ``default_grid × default_grid`` grid.

    Raises:
        GradflowError: a region over other parameters than the landscape's.
    """
    if region is None:
        return Region.of(landscape, default_grid)
    region.check_params(landscape)
    return region


FAST_MARGIN = 1e-4
"""In the float32 pass, trajectories are decided this far below the decision level (relative to
the larger of the loss scale and the level), clear of float32 rounding."""


FAST_ROUND = 8
"""Solver steps per round of the float32 pass: most trajectories stop within 8–16 steps, and a
vectorized round costs its longest member's steps for every member, so short rounds waste less."""


def fast_basin_options() -> tuple[FlowOptions]:
    """The float32 first pass of a basin map: Tsit5 with tolerances float32 can meet
    (``rtol`` 1e-4, ``atol`` 1e-6, ``‖∇L‖ ≤ 1e-4``) and a budget of :data:`FAST_STEPS` steps;
    whatever does not settle within it is integrated again in float64.

    The budget is short on purpose: most trajectories settle in 10–20 steps, and the few that
    converge slowly (near a separatrix, or algebraically at a degenerate minimum) would hold up
    every vectorized round of the pass; float64 has to integrate them anyway."""
    return (
        FlowOptions(
            solver="Tsit5",
            controller=PID(rtol=1e-4, atol=1e-6),
            stop=StopRule(gtol=1e-4, max_steps=FAST_STEPS),
        ),
    )


FAST_STEPS = 256
"""Solver steps the float32 pass allows a trajectory."""


FAST_CHUNK = 16_384
"""Members of the float32 pass integrated together: a round re-batches its members in Python,
so a million-point map in chunks of 4,096 pays for about 500 rounds' bookkeeping.  Measured in
docs/performance.md: a small gain on the 1000² map, none lost on a portrait's 201² map."""


def _with_area(grid: np.ndarray) -> set[int]:
    """The attractors whose grid points (``grid`` of ids, shape ``(ny, nx)``) hold a 2 × 2
    block: their basin has the grid's dimension.  The others are reached from a set of lower
    dimension (a line of starts on a stable manifold): measure zero, unless they are minima,
    whose basins are open (a minimum is stable under the flow, so a neighbourhood of it flows
    to it), however few grid points a coarse grid puts in them."""
    block = (
        (grid[:-1, :-1] == grid[1:, :-1])
        & (grid[:-1, :-1] == grid[:-1, 1:])
        & (grid[:-1, :-1] == grid[1:, 1:])
    )
    return {int(i) for i in np.unique(grid[:-1, :-1][block]) if i >= 0}


def _center(points: np.ndarray) -> np.ndarray:
    return 0.5 * (points.min(axis=0) + points.max(axis=0))


def _attractor_ids(
    landscape: Landscape,
    index: AttractorIndex,
    critical: CriticalSets,
    result: FlowEndpoints,
    level: float | None,
    stages: tuple[FlowOptions, ...],
    *,
    add_found: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Attractor ids (``-1`` for none), final statuses and endpoints of a batch of flows.

    Decided members are resolved to the global-minimum component of their sublevel set; those
    that cannot be resolved are integrated on without the decision level.  Converged endpoints
    near no known set become new attractors with ``add_found``, else keep id ``-1``.  On a loss
    with kinks, members stalled on one, or out of budget beside one (the float32 pass's
    chatter), go to the attractor their sublevel set decides
    (:func:`gradflow._flow.kink_settle.settled`), keeping their status.  A "found by the flow"
    set is formed only from endpoints that refine to critical points
    (:func:`gradflow._basins.evidence.found_by_flow`); the others are ``not_converged``.
    """
    status, endpoints = result.status.copy(), result.endpoints.copy()
    ids = np.full(len(status), -1)
    decided = np.flatnonzero(status == Outcome.GLOBAL_MIN)
    if decided.size:
        ids[decided] = below_level(landscape, index, endpoints[decided], level)
        unresolved = decided[ids[decided] < 0]
        if unresolved.size:
            rest = flow_endpoints(landscape, endpoints[unresolved], stages[-1:], progress=False)
            endpoints[unresolved], status[unresolved] = rest.endpoints, rest.status
    converged = np.flatnonzero((status == Outcome.CONVERGED) & (ids < 0))
    if converged.size:
        ids[converged] = index.match(endpoints[converged])
        loose = converged[ids[converged] < 0]
        if add_found and loose.size:
            ids[loose], status[loose] = found_by_flow(landscape, index, critical, endpoints[loose])
    unfinished = (status == Outcome.NON_SMOOTH) | (status == Outcome.NOT_CONVERGED)
    stalled = np.flatnonzero(unfinished & (ids < 0)) if landscape.nonsmooth_terms else []
    if len(stalled):
        ids[stalled] = settled(landscape, index, critical, endpoints[stalled])
    return ids, status, endpoints
