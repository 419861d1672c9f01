"""Phase portraits: streamlines of ``-∇L``, critical sets by kind, separatrices, basins, invariants.

:func:`portrait` computes everything a portrait shows (no plotting library needed);
:meth:`Portrait.draw` draws it layer by layer (:mod:`gradflow._output.draw`) and :meth:`Portrait.save`
writes the figure with its data beside it.  matplotlib is imported on first drawing, so
``import gradflow`` stays free of it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._basins.basin_map import BasinMap
from .._basins.basins import basins, prepared, region_of
from .._critical.search import critical_sets
from .._critical.sets import CriticalSets
from .._errors import GradflowError
from .._flow.options import FlowOptions
from .._landscape.base import Landscape
from .._landscape.metric import Metric, MetricLandscape, in_metric, velocity
from .._landscape.region import OnRegion, Region
from .._outcome import LABELS
from .._output.draw import (
    draw_basins,
    draw_critical,
    draw_invariant,
    draw_overlays,
    draw_separatrices,
    draw_streamlines,
    figure_png,
    legend_below,
)
from .._output.io import FORMATS, check_output, save_result
from .._output.streamlines import Streamline, streamlines
from .._output.text import format_point
from .overlay import Overlay, read_overlays
from .separatrix import separatrices

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["FORMATS", "LAYERS", "Portrait", "portrait"]

LAYERS = ("basins", "invariant", "streamlines", "separatrix", "critical")
"""What :meth:`Portrait.draw` can draw (overlays are always drawn)."""
STREAM_GRID = 80
"""Points per axis of the grid on which ``-∇L`` is sampled for streamlines."""
STREAM_DENSITY = 1.2
"""Density of the drawn streamlines, as ``streamplot``'s ``density``."""
CRITICAL_SAMPLES = 801
"""Samples per free dimension when drawing closed-form critical sets."""


@dataclass(frozen=True)
class Portrait(OnRegion):
    """A computed phase portrait of a two-parameter plane.

    Attributes:
        landscape: the loss (e.g. a model bound to its hyperparameters).
        basin_map: basins on the plane (``None`` if not computed).
        critical: the classified critical sets on the portrait's slice (all of them for a
            two-parameter landscape), drawn on the plane.
        separatrix: stable manifolds of saddles, polylines of shape ``(n, 2)``.
        region: the plane, its box, the basin grid and the values of the parameters off the
            plane.
        stream: ``(xs, ys, U, V)``: ``-∇L`` projected on the plane, ``U, V`` of shape ``(ny, nx)``.
        streamlines: the streamlines of ``stream`` that are drawn, placed as matplotlib's
            ``streamplot`` places them at density :data:`STREAM_DENSITY`
            (:func:`gradflow._output.streamlines.streamlines`).
        invariant: ``(name, values)`` of a conserved quantity on the stream grid, or ``None``.
        overlays: paths drawn on top (e.g. full-model training projected to the plane),
            :class:`gradflow.Overlay`.
        euclidean_separatrix: for a portrait in another metric, the separatrices of the
            Euclidean flow (drawn dotted beside the metric flow's), else empty.
    """

    landscape: Landscape
    basin_map: BasinMap | None
    critical: CriticalSets
    separatrix: list[np.ndarray]
    region: Region
    stream: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    streamlines: tuple[Streamline, ...]
    invariant: tuple[str, np.ndarray] | None
    overlays: list[Overlay] = field(default_factory=list)
    euclidean_separatrix: list[np.ndarray] = field(default_factory=list)

    @property
    def plane_order(self) -> tuple[int, int]:
        """Indices of the plane's two parameters in a point ``θ``."""
        return self.region.plane_order

    def with_overlays(self, *overlays: Overlay | Path | str) -> Portrait:
        """This portrait with ``overlays`` drawn on top as well: :class:`gradflow.Overlay` objects in
        the plane's coordinates, or NPZ files of saved runs (:func:`gradflow.read_overlays`,
        read against this portrait's plane).  Nothing is recomputed.

        Raises:
            GradflowError: a file :func:`gradflow.read_overlays` refuses.
        """
        return replace(self, overlays=[*self.overlays, *_resolve(overlays, self.plane)])

    def draw(
        self,
        ax: Axes,
        *,
        layers: Sequence[str] = LAYERS,
        legend: bool = True,
        title: str | None = None,
    ) -> list[Any]:
        """Draw the portrait on matplotlib axes.

        Args:
            ax: the axes.
            layers: which of :data:`LAYERS` to draw.
            legend: add a legend below the axes.
            title: the title (default :meth:`title`).

        Returns:
            The legend handles of what was drawn (for a shared legend).

        Raises:
            GradflowError: an unknown layer name.
        """
        unknown = set(layers) - set(LAYERS)
        if unknown:
            raise GradflowError(f"unknown portrait layers {sorted(unknown)}; choose from {LAYERS}")
        xs, ys, u, v = self.stream
        handles = []
        if self.basin_map is not None and "basins" in layers:
            bm = self.basin_map
            handles += draw_basins(
                ax,
                bm.xs,
                bm.ys,
                bm.attractor_ids,
                bm.labels,
                LABELS,
                bm.attractors,
                self.landscape.param_names,
            )
        if self.invariant is not None and "invariant" in layers:
            handles += draw_invariant(ax, xs, ys, self.invariant[1], self.invariant[0])
        if "streamlines" in layers:
            handles += draw_streamlines(ax, self.streamlines, xs, ys, projected=bool(self.fixed))
        if "separatrix" in layers:
            handles += draw_separatrices(ax, self.separatrix, self._metric_name)
            handles += draw_separatrices(ax, self.euclidean_separatrix, "euclidean", dotted=True)
        if "critical" in layers:
            handles += draw_critical(
                ax, self.critical, self.plane_order, self.landscape.loss_unit, self.box
            )
        handles += draw_overlays(ax, self.overlays)
        ax.set_xlim(self.box[0], self.box[1])
        ax.set_ylim(self.box[2], self.box[3])
        ax.set_xlabel(f"${self.plane[0]}$")
        ax.set_ylabel(f"${self.plane[1]}$", rotation=0, ha="right")
        ax.set_title(title or self.title(), fontsize=10)
        if legend:
            legend_below(ax, handles)
        return handles

    def __repr__(self) -> str:
        basins = ""
        if self.basin_map is not None:
            ny, nx = self.basin_map.labels.shape
            basins = f", basins on {nx} × {ny}"
        return (
            f"Portrait of {self.landscape.title} in the ({self.plane[0]}, {self.plane[1]}) plane, "
            f"{self.region.box_text()}:\n  {len(self.critical)} critical sets, "
            f"{len(self.separatrix)} separatrix branches{basins}"
        )

    def _repr_png_(self) -> bytes:
        return figure_png(self.figure())

    @property
    def _metric_name(self) -> str | None:
        """The flow's metric for the legend, ``None`` for the Euclidean one."""
        name = self.landscape.metric_name
        return None if name == "euclidean" else name

    def shown(self) -> CriticalSets:
        """The critical sets with a point inside the drawn box (the portrait computes them in a
        wider box, to name what trajectories leaving it reach)."""
        box = np.tile([-np.inf, np.inf], (self.landscape.dim, 1))
        for name, value in self.fixed.items():
            box[self.landscape.index(name)] = value
        box[self.plane_order[0]] = self.box[:2]
        box[self.plane_order[1]] = self.box[2:]
        return self.critical.inside(box)

    def title(self) -> str:
        """``canonical, p = 0.7, q = 0.6: gradient flow in the (w, e) plane``."""
        return (
            f"{self.landscape.title}{self.region.fixed_text()}: gradient flow in the "
            f"({self.plane[0]}, {self.plane[1]}) plane"
        )

    def figure(self) -> Figure:
        """A new matplotlib figure with the portrait drawn on it."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=(7.5, 8.2), layout="constrained")
        handles = self.draw(fig.add_subplot())
        fig.set_figheight(7.0 + 0.17 * len(handles))
        return fig

    def text(self) -> str:
        """The critical sets in the drawn box, then the basins' attractors and shares."""
        lines = [f"{self.title()}: critical sets", self.shown().table()]
        if self.basin_map is not None:
            nx, ny = self.region.grid
            lines += [f"\nbasins on a {nx} × {ny} grid:", self.basin_map.table()]
        lines += self._overlay_lines()
        return "\n".join(lines)

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays behind the figure: the streamline field (``stream_x``, ``stream_y``,
        ``stream_u``, ``stream_v``), the basin map's arrays under the names
        :meth:`gradflow.BasinMap.arrays` gives them, the invariant (``invariant_<name>``), the
        separatrices (polylines joined by NaN rows), the overlays' paths in plane coordinates
        (``overlays``, joined by NaN rows, in the order of :meth:`metadata`'s ``"overlays"``)
        and the critical sets
        (:meth:`gradflow.CriticalSets.arrays`)."""
        xs, ys, u, v = self.stream
        out: dict[str, np.ndarray] = {"stream_x": xs, "stream_y": ys, "stream_u": u, "stream_v": v}
        if self.basin_map is not None:
            out.update(self.basin_map.arrays())
        if self.invariant is not None:
            out[f"invariant_{self.invariant[0]}"] = self.invariant[1]
        out["separatrix"] = _join(self.separatrix)
        if self.euclidean_separatrix:
            out["euclidean_separatrix"] = _join(self.euclidean_separatrix)
        if self.overlays:
            out["overlays"] = _join([o.path for o in self.overlays])
        return out | self.critical.arrays()

    def metadata(self) -> dict[str, Any]:
        """How the portrait was computed: the landscape, its references, the region, the
        critical sets (their points are in :meth:`arrays`) and the basin map's
        :meth:`gradflow.BasinMap.metadata`."""
        critical = self.critical.metadata()
        critical["critical_sets"] = [
            {k: v for k, v in s.items() if k != "points"} | {"n_points": len(s["points"])}
            for s in critical["critical_sets"]
        ]
        record: dict[str, Any] = {
            **self.landscape.describe(),
            "references": dict(self.landscape.references),
            **self.region.metadata(),
            **critical,
        }
        if self.basin_map is not None:
            record.update(self.basin_map.metadata())
        if self.overlays:
            record["overlays"] = [o.label for o in self.overlays]
        return record

    def _overlay_lines(self) -> list[str]:
        """One line per legend entry of the overlays: its runs, points, start and end."""
        lines, plane = [], f"({self.plane[0]}, {self.plane[1]})"
        for label in dict.fromkeys(o.label for o in self.overlays):
            paths = [o.path for o in self.overlays if o.label == label]
            if len(paths) == 1:
                where = (
                    f"{len(paths[0])} points from {plane} = {format_point(paths[0][0])} "
                    f"to {format_point(paths[0][-1])}"
                )
            else:
                where = f"{len(paths)} runs of {min(map(len, paths))}…{max(map(len, paths))} points"
            lines.append(f"overlay {label}: {where}")
        return ["", *lines] if lines else []

    def save(self, out: Path | str, notes: Sequence[str] = ()) -> list[Path]:
        """Write the figure (format from the suffix), and its ``.npz`` and ``.json`` beside it.

        All three appear together or not at all.  ``notes`` go into the JSON as ``"notes"``.

        Raises:
            GradflowError: the suffix is not one of :data:`FORMATS`, or the folder is missing.
        """
        out = Path(out)
        check_output(out, FORMATS, "the portrait")
        metadata = self.metadata() | ({"notes": list(notes)} if notes else {})
        return save_result(self, out, metadata, dpi=150)


def _join(lines: list[np.ndarray]) -> np.ndarray:
    """Polylines in one ``(n, 2)`` array separated by NaN rows (NPZ has no ragged arrays)."""
    if not lines:
        return np.zeros((0, 2))
    parts = []
    for line in lines:
        parts += [line, np.full((1, 2), np.nan)]
    return np.vstack(parts[:-1])


def _resolve(overlays: Sequence[Overlay | Path | str], plane: tuple[str, str]) -> list[Overlay]:
    """Overlays as given, files read against ``plane`` (:func:`read_overlays`), each file's
    styles continuing where the file before it ended."""
    out: list[Overlay] = []
    styles = 0
    for item in overlays:
        if isinstance(item, Overlay):
            out.append(item)
            continue
        read = read_overlays(item, plane, style=styles)
        styles += len({o.label for o in read})
        out += read
    return out


def portrait(
    landscape: Landscape,
    *,
    region: Region | None = None,
    show_basins: bool = True,
    options: FlowOptions | Sequence[FlowOptions] | None = None,
    overlays: Sequence[Overlay | Path | str] = (),
    progress: bool | None = None,
    metric: str | Metric | None = None,
) -> Portrait:
    """Compute the phase portrait of ``landscape`` on a plane.

    Args:
        landscape: the loss (e.g. a model bound to its hyperparameters).
        region: the plane, its box, the values off the plane (slices of higher-dimensional
            models) and the basin grid (:class:`gradflow.Region`; default
            ``Region.of(landscape, 201)``: 201 × 201 flows on the landscape's box).
        show_basins: integrate the basin map (the costly part).
        options: integration stages for the basin map.
        overlays: paths to draw on top: :class:`gradflow.Overlay` objects in plane coordinates,
            or NPZ files of saved runs (a path; :func:`gradflow.read_overlays`, read against
            the region's plane before anything is computed).
        progress: progress bar for the basin map.
        metric: the metric ``G`` of the flow ``dθ/dt = -G⁻¹∇L`` (see :func:`gradflow.flow`):
            streamlines, basins and separatrices follow it; in a metric other than the
            Euclidean one the Euclidean separatrices are drawn too.

    The basin map labels with the critical sets :func:`gradflow.basins` finds by default (the
    same search box and sampling), so that a portrait and ``basins`` on the same grid give the
    same labels; the drawn sets are sampled more finely (:data:`CRITICAL_SAMPLES`).  Two
    things run in a second thread, so that a cold run compiles on both cores: the basin map's
    first programs are compiled (:func:`gradflow._basins.basins.prepared`) while the
    critical sets are found, and the separatrices, which need the critical sets but not the
    basin map, and then the streamlines are traced while the basin map is integrated.  No
    result depends on either.

    Returns:
        The computed :class:`Portrait`.

    Raises:
        GradflowError: a region over other parameters than the landscape's; an overlay file
            :func:`gradflow.read_overlays` refuses.
    """
    region = region_of(landscape, region, default_grid=201)
    drawn = _resolve(overlays, region.plane)
    box = region.search_box(landscape)
    ahead = prepared(landscape, region, options, metric=metric) if show_basins else None
    with ahead or contextlib.nullcontext():
        critical = critical_sets(landscape, box=box)
        on_slice = critical_sets(
            landscape, box=region.search_box(landscape, on_slice=True), samples=CRITICAL_SAMPLES
        )
    stream = region.with_grid(STREAM_GRID)
    stream_points = stream.points()
    flows = in_metric(landscape, metric, at=stream_points.reshape(-1, landscape.dim)[0])
    base = flows.base if isinstance(flows, MetricLandscape) else None
    ix, iy = region.plane_order
    reach = (*box[ix], *box[iy])
    with ThreadPoolExecutor(max_workers=1) as beside:
        lines = [
            beside.submit(separatrices, land, on_slice, region.box, region.plane, reach)
            for land in (flows, base)
            if land is not None
        ]
        moving = velocity(flows, stream_points)
        u, v = moving[..., ix], moving[..., iy]
        placed = beside.submit(streamlines, stream.xs, stream.ys, u, v, STREAM_DENSITY)
        basin_map = None
        if show_basins:
            basin_map = basins(
                landscape,
                region=region,
                options=options,
                critical=critical,
                progress=progress,
                metric=metric,
            )
        separatrix, *euclidean = [line.result() for line in lines]
    invariant = None
    if flows.invariant_names and landscape.dim == 2:
        name = flows.invariant_names[0]
        with np.errstate(all="ignore"):
            invariant = (name, flows.invariant(name, stream_points))
    return Portrait(
        landscape=flows,
        basin_map=basin_map,
        critical=on_slice,
        separatrix=separatrix,
        euclidean_separatrix=euclidean[0] if euclidean else [],
        region=region,
        stream=(stream.xs, stream.ys, u, v),
        streamlines=tuple(placed.result()),
        invariant=invariant,
        overlays=drawn,
    )
