"""Phase portraits: streamlines of ``-∇L``, critical sets by kind, separatrices, basins, invariants.

Computing a portrait (:func:`portrait`) needs no plotting library; drawing it
(:meth:`Portrait.draw`, :meth:`Portrait.save`) imports matplotlib on first use, so
``import gradflow`` stays free of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ._basins import LABELS, BasinMap, basins, plane_grid, widened_bounds
from ._critical import CriticalSet, critical_sets
from ._errors import GradflowError
from ._flow import FlowOptions
from ._io import check_output, save_with_data
from ._separatrix import separatrices

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ._bound import BoundModel

__all__ = ["FORMATS", "LAYERS", "Overlay", "Portrait", "portrait"]

FORMATS = (".png", ".pdf", ".svg")
"""Figure formats accepted by :meth:`Portrait.save`, chosen by the file suffix."""

LAYERS = ("basins", "invariant", "streamlines", "separatrix", "critical")
"""What :meth:`Portrait.draw` can draw (overlays are always drawn)."""
STREAM_GRID = 80
"""Points per axis of the grid on which ``-∇L`` is sampled for streamlines."""
CRITICAL_SAMPLES = 801
"""Samples per free dimension when drawing closed-form critical sets on a slice."""
BASIN_COLORS = {
    "global_min": "#cde9c9",
    "local_min": "#c9dcf2",
    "saddle": "#f6d5a8",
    "local_max": "#f2c9c9",
    "degenerate": "#e3d3ef",
    "diverged": "#9a9a9a",
    "not_converged": "#d9d9d9",
}
KIND_STYLE = {
    "global_min": {"color": "#1b7a2e", "lw": 2.6},
    "local_min": {"color": "#1f5fbf", "lw": 3.2},
    "saddle": {"color": "#e07b00", "lw": 2.0},
    "local_max": {"color": "#c0202a", "lw": 2.6},
    "degenerate": {"color": "#7b3fa0", "lw": 2.0},
}
KIND_TEXT = {
    "global_min": "global minima",
    "local_min": "local minima",
    "saddle": "saddle",
    "local_max": "local maxima",
    "degenerate": "degenerate critical points",
}


@dataclass(frozen=True)
class Overlay:
    """A path drawn over a portrait, in the portrait's plane coordinates, shape ``(n, 2)``."""

    label: str
    path: np.ndarray
    color: str = "black"


@dataclass(frozen=True)
class Portrait:
    """A computed phase portrait of a two-parameter plane.

    Attributes:
        model: the model at fixed hyperparameters.
        basin_map: basins on the plane (``None`` if not computed).
        critical: the classified critical sets on the portrait's slice (all of them for a
            two-parameter model), drawn on the plane.
        separatrix: stable manifolds of saddles, polylines of shape ``(n, 2)``.
        box: ``(xmin, xmax, ymin, ymax)``.
        stream: ``(xs, ys, U, V)``: ``-∇L`` projected on the plane, ``U, V`` of shape ``(ny, nx)``.
        invariant: ``(name, values)`` of a conserved quantity on the stream grid, or ``None``.
        overlays: extra paths (e.g. full-model training projected to the plane).
    """

    model: BoundModel
    basin_map: BasinMap | None
    critical: list[CriticalSet]
    separatrix: list[np.ndarray]
    box: tuple[float, float, float, float]
    plane: tuple[str, str]
    fixed: dict[str, float]
    stream: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    invariant: tuple[str, np.ndarray] | None
    overlays: list[Overlay] = field(default_factory=list)

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
        """
        from matplotlib.colors import ListedColormap
        from matplotlib.patches import Patch

        unknown = set(layers) - set(LAYERS)
        if unknown:
            raise GradflowError(f"unknown portrait layers {sorted(unknown)}; choose from {LAYERS}")
        xs, ys, u, v = self.stream
        handles = []
        if self.basin_map is not None and "basins" in layers:
            bm = self.basin_map
            cmap = ListedColormap([BASIN_COLORS[label] for label in LABELS])
            ax.pcolormesh(
                bm.xs,
                bm.ys,
                bm.labels,
                cmap=cmap,
                vmin=-0.5,
                vmax=len(LABELS) - 0.5,
                shading="nearest",
                rasterized=True,
            )
            fractions = bm.fractions()
            handles += [
                Patch(
                    color=BASIN_COLORS[label],
                    label=f"reaches {label.replace('_', ' ')} ({fractions[label]:.1%})",
                )
                for label in LABELS
                if fractions[label] > 0
            ]
        if self.invariant is not None and "invariant" in layers:
            name, values = self.invariant
            finite = values[np.isfinite(values)]
            if finite.size:
                levels = np.unique(np.percentile(finite, np.linspace(3, 97, 16)))
                ax.contour(
                    xs,
                    ys,
                    values,
                    levels=levels,
                    colors="#8c8c8c",
                    linewidths=0.6,
                    linestyles="solid",
                    alpha=0.8,
                )
                handles.append(
                    _line(color="#8c8c8c", lw=0.8, label=f"level sets of the conserved {name}")
                )
        if "streamlines" in layers:
            ax.streamplot(xs, ys, u, v, color="#555555", linewidth=0.6, density=1.2, arrowsize=0.8)
            handles.append(_line(color="#555555", lw=0.8, label="streamlines of −∇L"))
        if self.separatrix and "separatrix" in layers:
            for line in self.separatrix:
                ax.plot(line[:, 0], line[:, 1], color="black", lw=2.0, ls="--")
            handles.append(
                _line(
                    color="black",
                    lw=2.0,
                    ls="--",
                    label="separatrix (stable manifold of the saddle)",
                )
            )
        if "critical" in layers:
            handles += self._draw_critical(ax)
        for overlay in self.overlays:
            ax.plot(overlay.path[:, 0], overlay.path[:, 1], color=overlay.color, lw=1.4)
            ax.plot(*overlay.path[0], "o", color=overlay.color, ms=4)
            handles.append(_line(color=overlay.color, lw=1.4, label=overlay.label))
        ax.set_xlim(self.box[0], self.box[1])
        ax.set_ylim(self.box[2], self.box[3])
        ax.set_xlabel(f"${self.plane[0]}$")
        ax.set_ylabel(f"${self.plane[1]}$", rotation=0)
        ax.set_title(title or self.title(), fontsize=10)
        if legend:
            ax.legend(
                handles=handles,
                loc="upper center",
                bbox_to_anchor=(0.5, -0.1),
                ncol=2,
                fontsize=7.5,
                frameon=False,
            )
        return handles

    def _draw_critical(self, ax: Axes) -> list[Any]:
        """Draw the critical sets of the slice on the plane; return legend handles."""
        m = self.model.model
        ix, iy = m.index(self.plane[0]), m.index(self.plane[1])
        handles, seen = [], set()
        for s in self.critical:
            style = KIND_STYLE[s.kind]
            xy = s.points[:, [ix, iy]]
            label = _critical_label(s)
            lines = s.polylines()
            if lines:
                for line in lines:
                    ax.plot(
                        line[:, ix], line[:, iy], color=style["color"], lw=style["lw"], zorder=4
                    )
                handle = _line(color=style["color"], lw=style["lw"], label=label)
            else:
                marker = "X" if s.kind == "saddle" else "o"
                size = 10 if s.dimension == 0 else 3
                ax.plot(
                    xy[:, 0],
                    xy[:, 1],
                    marker,
                    color=style["color"],
                    ms=size,
                    mec="white",
                    mew=1.2 if size > 5 else 0,
                    zorder=5,
                )
                handle = _line(color=style["color"], marker=marker, ls="none", ms=8, label=label)
            if label not in seen:
                seen.add(label)
                handles.append(handle)
        return handles

    def title(self) -> str:
        """``canonical model, p = 0.7, q = 0.6: gradient flow in the (w, e) plane``."""
        hyper = ", ".join(f"{k} = {v:g}" for k, v in self.model.values.items())
        fixed = "".join(f", {k} = {v:g}" for k, v in self.fixed.items())
        return f"{self.model.model.name} model, {hyper}{fixed}: gradient flow in the ({self.plane[0]}, {self.plane[1]}) plane"

    def figure(self) -> Figure:
        """A new matplotlib figure with the portrait drawn on it."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=(7.5, 8.2), layout="constrained")
        self.draw(fig.add_subplot())
        return fig

    def data(self) -> dict[str, np.ndarray]:
        """The arrays behind the figure (what :meth:`save` writes to the NPZ)."""
        xs, ys, u, v = self.stream
        out: dict[str, np.ndarray] = {"stream_x": xs, "stream_y": ys, "stream_u": u, "stream_v": v}
        if self.basin_map is not None:
            bm = self.basin_map
            out.update(
                basin_x=bm.xs,
                basin_y=bm.ys,
                basin_labels=bm.labels,
                basin_times=bm.times,
                basin_steps=bm.steps,
                basin_endpoints=bm.endpoints,
                basin_label_names=np.array(LABELS),
            )
        if self.invariant is not None:
            out[f"invariant_{self.invariant[0]}"] = self.invariant[1]
        out["separatrix"] = _join(self.separatrix)
        for i, s in enumerate(self.critical):
            out[f"critical_{i}_{s.kind}"] = s.points
        return out

    def metadata(self) -> dict[str, Any]:
        """How the portrait was computed (what :meth:`save` writes to the JSON)."""
        record: dict[str, Any] = {
            "model": self.model.model.name,
            "hyperparameters": dict(self.model.values),
            "references": self.model.references,
            "plane": list(self.plane),
            "box": list(self.box),
            "fixed": self.fixed,
            "critical_sets": [
                {k: v for k, v in s.to_dict().items() if k != "points"}
                | {"n_points": len(s.points)}
                for s in self.critical
            ],
            "source": self.model.model.source,
        }
        if self.basin_map is not None:
            record.update(
                grid=[len(self.basin_map.xs), len(self.basin_map.ys)],
                fractions=self.basin_map.fractions(),
                solver=[describe_options(o) for o in self.basin_map.options],
            )
        return record

    def save(self, out: Path | str, notes: Sequence[str] = ()) -> list[Path]:
        """Write the figure (format from the suffix), and its ``.npz`` and ``.json`` beside it.

        All three appear together or not at all.  ``notes`` (e.g. "every critical point is a
        global minimum") go into the JSON as ``"notes"``.

        Raises:
            GradflowError: the suffix is not one of :data:`FORMATS`, or the folder is missing.
        """
        out = Path(out)
        check_output(out, FORMATS, "the portrait")
        fig = self.figure()
        metadata = self.metadata() | ({"notes": list(notes)} if notes else {})
        return save_with_data(out, lambda p: fig.savefig(p, dpi=150), self.data(), metadata)


def describe_options(options: FlowOptions) -> dict[str, Any]:
    """A JSON-ready description of one integration stage."""
    return {
        "solver": type(options.solver).__name__,
        "rtol": options.rtol,
        "atol": options.atol,
        "gtol": options.gtol,
        "t_max": options.t_max,
        "max_steps": options.max_steps,
        "divergence_radius": options.divergence_radius,
    }


def _line(**kwargs: Any) -> Any:
    from matplotlib.lines import Line2D

    return Line2D([], [], **kwargs)


def _critical_label(s: CriticalSet) -> str:
    name = "Γ*: " if s.kind == "global_min" and s.name == "Γ*" else ""
    detail = ""
    if s.kind == "saddle":
        degenerate = s.nullity == len(s.hessian_eigenvalues)
        detail = ", degenerate: Hessian = 0" if degenerate else f", Morse index {s.morse_index}"
    return f"{name}{KIND_TEXT[s.kind]} (L = {s.loss:.4f} nats{detail})"


def _join(lines: list[np.ndarray]) -> np.ndarray:
    """Polylines in one ``(n, 2)`` array separated by NaN rows (NPZ has no ragged arrays)."""
    if not lines:
        return np.zeros((0, 2))
    parts = []
    for line in lines:
        parts += [line, np.full((1, 2), np.nan)]
    return np.vstack(parts[:-1])


def portrait(
    model: BoundModel,
    *,
    grid: int = 201,
    box: Sequence[float] | None = None,
    fixed: Mapping[str, float] | None = None,
    plane: tuple[str, str] | None = None,
    show_basins: bool = True,
    options: FlowOptions | Sequence[FlowOptions] | None = None,
    overlays: Sequence[Overlay] = (),
    progress: bool | None = None,
) -> Portrait:
    """Compute the phase portrait of ``model`` on a plane.

    Args:
        model: the model at fixed hyperparameters.
        grid: basin grid points per axis (``grid × grid`` flows).
        box: ``(xmin, xmax, ymin, ymax)``; default the model's bounds on the plane.
        fixed: values of the parameters off the plane (slices of higher-dimensional models).
        plane: the two parameters on the axes (default ``model.model.plane``).
        show_basins: integrate the basin map (the costly part).
        options: integration stages for the basin map.
        overlays: paths to draw on top, in plane coordinates.
        progress: progress bar for the basin map.

    Returns:
        The computed :class:`Portrait`.

    Raises:
        GradflowError: invalid grid, box or parameter names.
    """
    plane, xs, ys, fixed, _ = plane_grid(model, grid, box, fixed, plane)
    the_box = (float(xs[0]), float(xs[-1]), float(ys[0]), float(ys[-1]))
    bounds = widened_bounds(model, {plane[0]: the_box[:2], plane[1]: the_box[2:]})
    if fixed:
        critical = critical_sets(model, bounds=bounds)
        on_slice = critical_sets(model, bounds=bounds, fixed=fixed, samples=CRITICAL_SAMPLES)
    else:
        critical = on_slice = critical_sets(model, bounds=bounds, samples=CRITICAL_SAMPLES)
    basin_map = None
    if show_basins:
        basin_map = basins(
            model,
            grid=grid,
            box=the_box,
            fixed=fixed,
            plane=plane,
            options=options,
            critical=critical,
            progress=progress,
        )
    _, sx, sy, _, stream_points = plane_grid(model, STREAM_GRID, the_box, fixed, plane)
    velocity = -model.grad(stream_points)
    ix, iy = model.model.index(plane[0]), model.model.index(plane[1])
    invariant = None
    if model.model.invariants and model.model.dim == 2:
        name = next(iter(model.model.invariants))
        with np.errstate(all="ignore"):
            invariant = (name, model.invariant(name, stream_points))
    return Portrait(
        model=model,
        basin_map=basin_map,
        critical=on_slice,
        separatrix=separatrices(model, on_slice, the_box),
        box=the_box,
        plane=plane,
        fixed=fixed,
        stream=(sx, sy, velocity[..., ix], velocity[..., iy]),
        invariant=invariant,
        overlays=list(overlays),
    )
