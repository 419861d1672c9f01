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

import dataclasses
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.spatial import cKDTree

from ._attractors import Attractor, AttractorIndex
from ._batched import FlowEndpoints
from ._classify import classify_points
from ._critical import CriticalSets, critical_sets, decision_level, global_min_level
from ._errors import GradflowError
from ._flows import flow_endpoints
from ._integrate import FlowOptions, Status
from ._landscape import Landscape
from ._metric import Metric, in_metric
from ._region import Region
from ._scales import loss_scales
from ._text import format_point, format_table

__all__ = [
    "LABELS",
    "BasinMap",
    "Label",
    "basins",
    "default_basin_options",
    "fast_basin_options",
    "widened_bounds",
]


class Label(enum.IntEnum):
    """What a grid point of a basin map reached: the kind of its attractor (:data:`KINDS`), or
    why it reached none.  The value is the code :attr:`BasinMap.labels` stores; ``str(label)``
    is its name in every output (``"global_min"``, …, ``"non_smooth"``)."""

    GLOBAL_MIN = 0
    LOCAL_MIN = 1
    SADDLE = 2
    LOCAL_MAX = 3
    DEGENERATE = 4
    DIVERGED = 5
    """The trajectory left every bound (``‖θ‖₂`` beyond the divergence radius) or became
    non-finite."""
    NOT_CONVERGED = 6
    """The budget ran out first."""
    NON_SMOOTH = 7
    """Stuck on a kink of a non-smooth loss."""

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def of(cls, name: str) -> Label:
        """The label named ``name`` (a kind, ``"diverged"``, ``"not_converged"`` or
        ``"non_smooth"``).

        Raises:
            GradflowError: an unknown name.
        """
        try:
            return cls[name.upper()]
        except KeyError:
            raise GradflowError(
                f"unknown basin label {name!r}; labels are {', '.join(LABELS)}"
            ) from None


LABELS = tuple(str(label) for label in Label)
"""The names of the :class:`Label` values in code order: ``BasinMap.labels`` indexes it."""
OUTCOMES = (Label.DIVERGED, Label.NOT_CONVERGED, Label.NON_SMOOTH)
"""The labels of grid points that reached no attractor."""
SEGMENT_SAMPLES = 17
"""Points at which a decided endpoint's segment to a global-minimum sample is checked."""
CANDIDATES = 4
"""Nearest global-minimum samples tried for each decided endpoint."""


def default_basin_options() -> tuple[FlowOptions, FlowOptions]:
    """Tsit5 first (cheap steps), then Kvaerno5 for the members whose 2,000-step budget ran out
    (stiff regions).  Measured in ``docs/performance.md``."""
    return (
        FlowOptions(solver="Tsit5", rtol=1e-6, atol=1e-9, max_steps=2_000),
        FlowOptions(solver="Kvaerno5", rtol=1e-6, atol=1e-9, max_steps=20_000),
    )


@dataclass(frozen=True)
class BasinMap:
    """A basin map on a grid of the plane ``(x, y)`` of two parameters.

    Attributes:
        region: the grid of initial points: its plane, box, points per axis and the values of
            the parameters off the plane (a slice of a higher-dimensional flow).
        labels: :class:`Label` codes, shape ``(ny, nx)`` (row = y).
        attractor_ids: the id of the attractor each grid point reached, ``-1`` where none
            (diverged, not converged, stuck on a kink), shape ``(ny, nx)``.
        attractors: every attractor, with the share of the grid reaching it as ``fraction``.
        times: flow time at which each trajectory stopped, shape ``(ny, nx)``.
        steps: solver steps taken (accepted and rejected), shape ``(ny, nx)``.
        endpoints: where each trajectory stopped, shape ``(ny, nx, dim)``.
        critical: the classified critical sets used for the labels.
        options: the integration stages used.
        shortcut: whether trajectories were decided below the lowest non-global critical value.
        metric: the metric of the flow (``"euclidean"``, ``"induced"``, or a callable's name).
    """

    region: Region
    labels: np.ndarray
    attractor_ids: np.ndarray
    attractors: tuple[Attractor, ...]
    times: np.ndarray
    steps: np.ndarray
    endpoints: np.ndarray
    critical: CriticalSets
    options: tuple[FlowOptions, ...]
    shortcut: bool
    metric: str = "euclidean"

    @property
    def plane(self) -> tuple[str, str]:
        """The parameter names on the x and y axes, e.g. ``("w", "e")``."""
        return self.region.plane

    @property
    def box(self) -> tuple[float, float, float, float]:
        """``(xmin, xmax, ymin, ymax)``."""
        return self.region.box

    @property
    def fixed(self) -> dict[str, float]:
        """The values of the parameters off the plane."""
        return self.region.fixed

    @property
    def xs(self) -> np.ndarray:
        """The grid's x coordinates, shape ``(nx,)`` (endpoints included)."""
        return self.region.xs

    @property
    def ys(self) -> np.ndarray:
        """The grid's y coordinates, shape ``(ny,)``."""
        return self.region.ys

    def fractions(self) -> dict[str, float]:
        """Fraction of grid points per label (every label listed; they sum to 1)."""
        counts = np.bincount(self.labels.ravel(), minlength=len(LABELS))
        return {label: float(c) / self.labels.size for label, c in zip(LABELS, counts)}

    def mask(self, label: str) -> np.ndarray:
        """Boolean map of the grid points with ``label``, shape ``(ny, nx)``."""
        return self.labels == Label.of(label)

    def reached(self) -> list[Attractor]:
        """The attractors some grid point reaches, largest basin first."""
        return sorted((a for a in self.attractors if a.fraction > 0), key=lambda a: -a.fraction)

    def table(self) -> str:
        """The attractors reached and the other outcomes, largest share first, as a text table;
        a basin that is a measure-zero set (grid points on a stable manifold, no 2 × 2 block of
        the grid) is marked, whatever the attractor's kind."""
        names = ", ".join(self.critical.param_names)
        rows = [
            [
                f"#{a.id}",
                a.kind + (" *" if a.measure_zero else ""),
                a.set,
                format_point(a.point),
                f"{a.fraction:.4f}",
            ]
            for a in self.reached()
        ]
        fractions = self.fractions()
        rows += [
            ["", str(label), "", "", f"{fractions[str(label)]:.4f}"]
            for label in OUTCOMES
            if fractions[str(label)] > 0
        ]
        text = format_table(["attractor", "kind", "set", f"point ({names})", "fraction"], rows)
        starred = [a.kind for a in self.reached() if a.measure_zero]
        if starred and set(starred) <= {"saddle", "local_max"}:
            text += (
                "\n* measure zero: these grid points lie on a saddle's or maximum's stable manifold"
            )
        elif starred:
            text += "\n* measure zero: these grid points lie on a set of lower dimension"
        return text

    def __repr__(self) -> str:
        return self.text()

    def text(self) -> str:
        """The grid, its plane and box, then :meth:`table`."""
        ny, nx = self.labels.shape
        return (
            f"BasinMap {nx} × {ny} of the ({self.plane[0]}, {self.plane[1]}) plane"
            f"{self.region.fixed_text()}, "
            f"box {format_point(self.box)}\n{self.table()}"
        )

    def arrays(self) -> dict[str, np.ndarray]:
        """``x`` and ``y`` (the grid's axes), ``labels`` with their ``label_names``,
        ``attractor_ids``, ``times``, ``steps`` (each of shape ``(ny, nx)``) and ``endpoints``
        (shape ``(ny, nx, dim)``)."""
        return {
            "x": self.xs,
            "y": self.ys,
            "labels": self.labels,
            "label_names": np.array(LABELS),
            "attractor_ids": self.attractor_ids,
            "times": self.times,
            "steps": self.steps,
            "endpoints": self.endpoints,
        }

    def metadata(self) -> dict[str, Any]:
        """JSON-ready: the region (``plane``, ``box``, ``grid``, ``fixed``), the ``fractions`` by
        label, every attractor with its share, the ``solver`` stages, ``shortcut`` and
        ``metric``."""
        return {
            **self.region.to_dict(),
            "fractions": self.fractions(),
            "attractors": [a.to_dict() for a in self.attractors],
            "solver": [o.to_dict() for o in self.options],
            "shortcut": self.shortcut,
            "metric": self.metric,
        }

    def title(self) -> str:
        """``canonical, p = 0.7, q = 0.6: basins in the (w, e) plane`` (the landscape, the
        values fixed off the plane, the plane)."""
        plane = f"({self.plane[0]}, {self.plane[1]})"
        of = self.critical.title or "the loss"
        return f"{of}{self.region.fixed_text()}: basins in the {plane} plane"

    def figure(self, title: str | None = None) -> Any:
        """A new matplotlib figure of the map: each attractor's basin in a tint of its kind's
        colour, the legend listing each with its share; ``title`` (default :meth:`title`)."""
        from ._draw import basin_figure

        return basin_figure(self, LABELS, title or self.title())

    def _repr_png_(self) -> bytes:
        from ._draw import figure_png

        return figure_png(self.figure())


def basins(
    landscape: Landscape,
    *,
    grid: int | tuple[int, int] | None = None,
    box: Sequence[float] | None = None,
    fixed: Mapping[str, float] | None = None,
    plane: tuple[str, str] | None = None,
    region: Region | None = None,
    options: FlowOptions | Sequence[FlowOptions] | None = None,
    critical: CriticalSets | None = None,
    progress: bool | None = None,
    float32_first: bool | None = None,
    metric: str | Metric | None = None,
) -> BasinMap:
    """Compute the basin map of the gradient flow on a grid of initial points.

    With the default options every grid point is first integrated in float32
    (:func:`fast_basin_options`); the points whose outcome is uncertain — not converged,
    diverged, stuck, near no attractor, at a saddle or maximum, or next to a grid point with
    another attractor (the basin boundaries) — are integrated again in float64 with the default
    stages.  On a CPU a float32 step costs about an eighth of a float64 one, and the boundaries
    hold a vanishing share of a fine grid.

    Args:
        landscape: the loss (e.g. a model bound to its hyperparameters).
        grid: points per axis of the grid of initial points: ``N`` for ``N × N`` (default 101),
            or ``(nx, ny)``; endpoints included (:func:`gradflow.grid_axis`: exactly symmetric
            on an axis symmetric about 0).
        box: its ``(xmin, xmax, ymin, ymax)`` (default the landscape's bounds of the plane).
        fixed: values of the parameters off the plane (default 0).
        plane: the two parameters on its axes (default ``landscape.plane``).
        region: the grid, box, values and plane as one :class:`gradflow.Region`, instead of
            the four arguments above.
        options: integration stages (default :func:`default_basin_options`).
        critical: critical sets to label with (default: :func:`critical_sets` over the box
            widened by half its size, since trajectories may end outside it).
        progress: progress bar (default: shown once the integration has run 1.5 s).
        float32_first: the float32 first pass (default: with the default options only).
        metric: the metric ``G`` of the flow ``dθ/dt = -G⁻¹∇L`` (see :func:`gradflow.flow`);
            the critical sets, and so the attractors, are the same in every metric.

    Returns:
        The map: attractor ids and labels by kind, stopping times and endpoints.

    Raises:
        GradflowError: an invalid grid, box, plane or fixed value (one line naming it, see
            :func:`gradflow.Region`), or ``region`` given with any of them.
    """
    region = region_of(landscape, region, grid, box, fixed, plane)
    thetas = region.points()
    if float32_first is None:
        float32_first = options is None
    stages = (
        default_basin_options()
        if options is None
        else ((options,) if isinstance(options, FlowOptions) else tuple(options))
    )
    if critical is None:
        critical = critical_sets(landscape, bounds=widened_bounds(landscape, region.bounds()))
    landscape = in_metric(landscape, metric, at=thetas.reshape(-1, landscape.dim)[0])
    scale = loss_scales(landscape).loss
    level = _decision(critical, scale) if landscape.sublevel_shortcut else None
    flat = thetas.reshape(-1, landscape.dim)
    index = AttractorIndex(landscape, critical, critical.box, center=_center(flat))
    ids, status = np.full(len(flat), -1), np.full(len(flat), int(Status.NOT_CONVERGED))
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
            steps_per_round=FAST_ROUND,
        )
        ids, status, endpoints = _attractor_ids(
            landscape, index, critical, first, level, stages, add_found=False
        )
        times, steps = first.times, first.steps.copy()
        minima = np.array([a.kind in MINIMA for a in index.attractors] + [False])
        redo = _uncertain(ids, thetas.shape[:2]) | ~minima[ids]
    if redo.any():
        again = flow_endpoints(
            landscape,
            flat[redo],
            stages,
            decide_below=level,
            progress=progress and not float32_first,
        )
        found = _attractor_ids(landscape, index, critical, again, level, stages, add_found=True)
        ids[redo], status[redo], endpoints[redo] = found
        times[redo] = again.times
        steps[redo] += again.steps
    ids = _stable_manifolds(landscape, index, flat, ids, thetas.shape[:2], stages[0])
    kinds = np.array([Label.of(a.kind) for a in index.attractors] + [0], dtype=int)
    labels = np.where(ids >= 0, kinds[ids], 0)
    for label in OUTCOMES:
        labels[(ids < 0) & (status == Status[label.name])] = label
    counts = np.bincount(ids[ids >= 0], minlength=len(index.attractors))
    shape = thetas.shape[:2]
    full = _with_area(ids.reshape(shape))
    attractors = tuple(
        dataclasses.replace(
            a, fraction=float(c) / ids.size, measure_zero=c > 0 and a.id not in full
        )
        for a, c in zip(index.attractors, counts)
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
        metric=getattr(landscape, "metric_name", "euclidean"),
    )


def region_of(
    landscape: Landscape,
    region: Region | None,
    grid: int | Sequence[int] | None,
    box: Sequence[float] | None,
    fixed: Mapping[str, float] | None,
    plane: Sequence[str] | None,
    default_grid: int = 101,
) -> Region:
    """``region``, or the :class:`Region` the keyword arguments describe (``grid`` defaulting
    to ``default_grid``).

    Raises:
        GradflowError: ``region`` with any of the others, or an invalid region.
    """
    if region is None:
        return Region.of(landscape, default_grid if grid is None else grid, box, fixed, plane)
    given = [
        k
        for k, v in (("grid", grid), ("box", box), ("fixed", fixed), ("plane", plane))
        if v is not None
    ]
    if given:
        raise GradflowError(f"give region or {', '.join(given)}, not both")
    if region.names != tuple(landscape.param_names):
        raise GradflowError(
            f"region over parameters {', '.join(region.names)}; the landscape's are "
            f"{', '.join(landscape.param_names)}"
        )
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
    return (FlowOptions(solver="Tsit5", rtol=1e-4, atol=1e-6, gtol=1e-4, max_steps=FAST_STEPS),)


FAST_STEPS = 256
"""Solver steps the float32 pass allows a trajectory."""


MINIMA = ("global_min", "local_min")
"""The attractor kinds a float32 label may keep; a point the float32 pass takes to a saddle, a
maximum or a degenerate set (its ``‖∇L‖ ≤ 1e-4`` stop may be met far from one on a flat loss)
is integrated again."""


SADDLE_PASS = 1e-5
"""A trajectory from a basin's edge that ends at a minimum is integrated again with the
steady-state test ``‖∇L‖ ≤ SADDLE_PASS·g``: if that stops it at a saddle or maximum, its start
lies within float64 rounding of the stable manifold (within about ``SADDLE_PASS²`` of the box
size), and the saddle is its label."""


def _stable_manifolds(
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
    """
    minima = np.array([a.kind in MINIMA for a in index.attractors] + [False])
    edge = np.flatnonzero(_uncertain(ids, shape) & minima[ids])
    if not edge.size:
        return ids
    points = np.array([a.point for a in index.attractors])
    nullity = classify_points(landscape, points, None).nullity
    hyperbolic = np.array([n <= a.dimension for a, n in zip(index.attractors, nullity)] + [False])
    loose = dataclasses.replace(stage, gtol=SADDLE_PASS)
    passing = flow_endpoints(landscape, flat[edge], loose, progress=False)
    near = np.where(passing.status == Status.CONVERGED, index.match(passing.endpoints), -1)
    via = (near >= 0) & ~minima[near] & hyperbolic[near]
    ids = ids.copy()
    ids[edge[via]] = near[via]
    return ids


def _with_area(grid: np.ndarray) -> set[int]:
    """The attractors whose grid points (``grid`` of ids, shape ``(ny, nx)``) hold a 2 × 2
    block: their basin has the grid's dimension.  The others are reached from a set of lower
    dimension (a line of starts on a stable manifold): measure zero."""
    block = (
        (grid[:-1, :-1] == grid[1:, :-1])
        & (grid[:-1, :-1] == grid[:-1, 1:])
        & (grid[:-1, :-1] == grid[1:, 1:])
    )
    return {int(i) for i in np.unique(grid[:-1, :-1][block]) if i >= 0}


def _uncertain(ids: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
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
    near no known set become new attractors with ``add_found``, else keep id ``-1``.
    """
    status, endpoints = result.status.copy(), result.endpoints.copy()
    ids = np.full(len(status), -1)
    decided = np.flatnonzero(status == Status.DECIDED)
    if decided.size:
        ids[decided] = _below_level(landscape, index, endpoints[decided], level)
        unresolved = decided[ids[decided] < 0]
        if unresolved.size:
            rest = flow_endpoints(landscape, endpoints[unresolved], stages[-1:], progress=False)
            endpoints[unresolved], status[unresolved] = rest.endpoints, rest.status
    converged = np.flatnonzero((status == Status.CONVERGED) & (ids < 0))
    if converged.size:
        ids[converged] = index.match(endpoints[converged])
        loose = converged[ids[converged] < 0]
        if add_found:
            ids[loose] = index.add_found(landscape, endpoints[loose], critical.global_min_loss)
    return ids, status, endpoints


def _below_level(
    landscape: Landscape, index: AttractorIndex, points: np.ndarray, level: float | None
) -> np.ndarray:
    """For points below ``level``, the global-minimum attractor reachable below it, or ``-1``.

    Below every non-global critical value each component of the sublevel set holds exactly one
    component of the global-minimum set (two would be separated by a mountain pass, a critical
    point with a loss in between).  With one global-minimum component that is the answer; with
    several, a straight segment below ``level`` from the point to one of its nearest samples of
    the global-minimum set (the nearest first) shows which.
    """
    ids = np.full(len(points), -1)
    owners = [a.id for a in index.attractors if a.kind == "global_min"]
    samples = index.samples(owners)
    if level is None or not len(samples[0]):
        return ids
    if len(owners) == 1:
        ids[:] = owners[0]
        return ids
    tree = cKDTree(samples[0])
    for k in range(1, min(CANDIDATES, len(samples[0])) + 1):
        todo = np.flatnonzero(ids < 0)
        if not todo.size:
            break
        _, nearest = tree.query(points[todo], k=[k], workers=-1)
        below = _segments_below(landscape, points[todo], samples[0][nearest[:, 0]], level)
        ids[todo[below]] = samples[1][nearest[below, 0]]
    return ids


SEGMENT_BLOCK = 1 << 14
"""Segments checked together (their samples take a few MB, memory the allocator reuses)."""


def _segments_below(
    landscape: Landscape, starts: np.ndarray, ends: np.ndarray, level: float
) -> np.ndarray:
    """Whether the loss stays below ``level`` at :data:`SEGMENT_SAMPLES` points of each segment
    from ``starts`` to ``ends`` (shapes ``(n, dim)``); shape ``(n,)``."""
    s = np.linspace(0.0, 1.0, SEGMENT_SAMPLES)[:, None, None]
    below = np.empty(len(starts), dtype=bool)
    for i in range(0, len(starts), SEGMENT_BLOCK):
        a, b = starts[i : i + SEGMENT_BLOCK], ends[i : i + SEGMENT_BLOCK]
        below[i : i + SEGMENT_BLOCK] = np.all(landscape.loss(a + s * (b - a)) < level, axis=0)
    return below


def _decision(critical: CriticalSets, scale: float) -> float | None:
    """The loss below which a trajectory is labelled ``global_min`` without integrating further.

    Just below the lowest non-global critical value (margins relative to the larger of the loss
    scale ``scale`` and the level).  When every critical set found is global
    (e.g. the canonical model at p + q = 1, where the chain is i.i.d.), just above the global
    minimum loss: convergence there can be algebraic, not exponential, and a steady-state test
    alone would run out of budget.
    """
    level, best = decision_level(critical), global_min_level(critical)
    if level is not None:
        return level - 1e-9 * max(scale, abs(level))
    return None if best is None else best + 1e-6 * max(scale, abs(best))


def widened_bounds(
    landscape: Landscape, bounds: Mapping[str, tuple[float, float]]
) -> dict[str, tuple[float, float]]:
    """The box enlarged by half its size: trajectories may end outside the grid's box."""
    out = {}
    for name in landscape.param_names:
        lo, hi = bounds.get(name, landscape.bound(name))
        pad = 0.5 * (hi - lo)
        out[name] = (float(lo - pad), float(hi + pad))
    return out
