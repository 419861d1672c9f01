"""Drawing primitives: one function per layer of a portrait, each onto given matplotlib axes.

Each function takes plain data (arrays, critical sets, attractors), draws one layer and returns
the legend handles of what it drew; results of every layer of the engine (a ``Trajectory``,
``CriticalSets``, a ``BasinMap``, a ``Portrait``) draw themselves through them.  So this module
names no engine type, not even in annotations: the results below it import it.  matplotlib is imported inside the
functions, so importing gradflow does not import it.
"""

from __future__ import annotations

import colorsys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._outcome import Kind, Outcome
from .text import format_point, shorten

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from .._basins.basin_map import BasinMap
    from .._critical.attractors import Attractor
    from .._critical.sets import CriticalSet, CriticalSets
    from .._flow.integrate import Trajectory
    from .._portrait.overlay import Overlay
    from .streamlines import Streamline

__all__ = [
    "KIND_COLORS",
    "OUTCOME_COLORS",
    "legend_below",
    "basin_figure",
    "critical_figure",
    "figure_png",
    "trajectory_figure",
    "attractor_colors",
    "draw_basins",
    "draw_critical",
    "draw_invariant",
    "draw_unproven",
    "draw_overlays",
    "draw_separatrices",
    "draw_streamlines",
    "line_handle",
]

KIND_COLORS = {
    Kind.GLOBAL_MIN: "#1b7a2e",
    Kind.LOCAL_MIN: "#1f5fbf",
    Kind.SADDLE: "#e07b00",
    Kind.LOCAL_MAX: "#c0202a",
    Kind.DEGENERATE: "#7b3fa0",
}
"""The colour of each kind of critical set (lines and markers); basins use light tints of it."""
OUTCOME_COLORS = {
    str(Outcome.DIVERGED): "#9a9a9a",
    str(Outcome.NOT_CONVERGED): "#d9d9d9",
    str(Outcome.NON_SMOOTH): "#f0e68c",
}
"""Basin colours of the grid points that reached no attractor, by the outcome's name."""
KIND_WIDTH = {
    Kind.GLOBAL_MIN: 2.6,
    Kind.LOCAL_MIN: 3.2,
    Kind.SADDLE: 2.0,
    Kind.LOCAL_MAX: 2.6,
    Kind.DEGENERATE: 2.0,
}
KIND_TEXT = {
    Kind.GLOBAL_MIN: "global minima",
    Kind.LOCAL_MIN: "local minima",
    Kind.SADDLE: "saddle",
    Kind.LOCAL_MAX: "local maxima",
    Kind.DEGENERATE: "degenerate critical points",
}
LABEL_EQUATION = 64
"""A set's equation in a legend is cut only beyond this many characters: the three-scalar
model's ``e²(1 + a e²/4)(1 + 2w|w|) = c*`` is 32 and must be read whole."""
INVARIANT_LEVELS = 16
"""Level sets drawn of a conserved quantity (spaced by quantiles of its values)."""
STREAM_COLOR = "#333333"
"""Colour of the streamlines and their arrows: dark grey, apart from the coloured level sets."""
INVARIANT_CMAP = "cool"
"""Colour map of the level sets of a conserved quantity (cyan to magenta): apart from the dark
grey streamlines, the critical sets' green, blue, red and orange, and the basins' light tints."""


def line_handle(**kwargs: Any) -> Any:
    """A legend handle for a line or marker style."""
    from matplotlib.lines import Line2D

    return Line2D([], [], **kwargs)


def _tint(color: str, lightness: float, hue_shift: float = 0.0) -> tuple[float, float, float]:
    """``color`` with its HLS lightness set to ``lightness`` (0 black … 1 white), its hue
    turned by ``hue_shift`` (in turns) and its saturation reduced to 0.6 of its own."""
    from matplotlib.colors import to_rgb

    h, _, s = colorsys.rgb_to_hls(*to_rgb(color))
    return colorsys.hls_to_rgb((h + hue_shift) % 1.0, lightness, 0.6 * s)


def attractor_colors(attractors: Sequence[Attractor]) -> list[tuple[float, float, float]]:
    """A light tint of its kind's colour per attractor, no two alike.

    The ``n`` attractors of one kind get lightnesses evenly spaced from 0.9 down to 0.62 (one
    kind alone: 0.88) and hues cycling 0.04 below, at and above the kind's hue, so neighbours in
    the list differ in hue too; the kinds' hues are far enough apart that tints of two kinds
    never meet.
    """
    counts: dict[str, int] = {}
    for a in attractors:
        counts[a.kind] = counts.get(a.kind, 0) + 1
    seen: dict[str, int] = {}
    colors = []
    for a in attractors:
        k, n = seen.get(a.kind, 0), counts[a.kind]
        seen[a.kind] = k + 1
        lightness = 0.88 if n == 1 else 0.9 - 0.28 * k / (n - 1)
        colors.append(_tint(KIND_COLORS[a.kind], lightness, 0.04 * ((k + 1) % 3 - 1)))
    return colors


def _point_text(point: np.ndarray, names: Sequence[str]) -> str:
    """``(x, y, z) = (1, -1, 0.5)``: the whole point, every coordinate named."""
    return f"({', '.join(names)}) = ({', '.join(f'{v:.3g}' for v in point)})"


def draw_basins(
    ax: Axes,
    xs: np.ndarray,
    ys: np.ndarray,
    ids: np.ndarray,
    labels: np.ndarray,
    label_names: Sequence[str],
    attractors: Sequence[Attractor],
    param_names: Sequence[str],
) -> list[Any]:
    """Shade each attractor's basin in a tint of its kind's colour that no other attractor
    shares (:func:`attractor_colors`); grey for the rest.  The legend gives each attractor's
    whole point, its coordinates off the plane included.

    Args:
        ax: the axes.
        xs, ys: grid coordinates, shapes ``(nx,)``, ``(ny,)``.
        ids: attractor id per grid point, ``-1`` for none, shape ``(ny, nx)``.
        labels: label index per grid point into ``label_names``, shape ``(ny, nx)``.
        label_names: the labels (kinds, then ``diverged``, ``not_converged``, ``non_smooth``).
        attractors: all attractors (``fraction`` set).
        param_names: the names of a point's coordinates, all of them.

    Returns:
        One legend handle per attractor reached and per other outcome that occurs.
    """
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    outcomes = [n for n in OUTCOME_COLORS if n in label_names]
    colors = attractor_colors(attractors) + [OUTCOME_COLORS[n] for n in outcomes]
    codes = ids.copy()
    for k, name in enumerate(outcomes):
        codes[(ids < 0) & (labels == label_names.index(name))] = len(attractors) + k
    ax.pcolormesh(
        xs,
        ys,
        codes,
        cmap=ListedColormap(colors),
        vmin=-0.5,
        vmax=len(colors) - 0.5,
        shading="nearest",
        rasterized=True,
    )
    handles = []
    for a, color in zip(attractors, colors):
        if a.fraction > 0:
            where = _point_text(a.point, param_names)
            kind = a.kind.replace("_", " ")
            name = shorten(a.equation or a.set, LABEL_EQUATION)
            text = f"#{a.id} {kind} {name} at {where} ({share_text(a.fraction)})"
            if a.measure_zero:
                text += ", on its stable manifold (measure zero)"
            handles.append(Patch(color=color, label=text))
    total = labels.size
    for k, name in enumerate(outcomes):
        share = float(np.sum(codes == len(attractors) + k)) / total
        if share > 0:
            handles.append(
                Patch(
                    color=colors[len(attractors) + k],
                    label=f"{name.replace('_', ' ')} ({share_text(share)})",
                )
            )
    return handles


UNPROVEN_HATCH = "////"
"""The hatch over grid points whose label is numerical, not proven."""


def draw_unproven(ax: Axes, xs: np.ndarray, ys: np.ndarray, evidence: np.ndarray) -> Any:
    """Hatch the grid points whose evidence (shape ``(ny, nx)``, 1 proven, 0 numerical) is
    numerical; return the legend handle, with their share."""
    from matplotlib.patches import Patch

    unproven = (evidence == 0).astype(float)
    cells = np.repeat(np.repeat(unproven, 2, axis=0), 2, axis=1)
    ax.contourf(
        _cell_edges(xs),
        _cell_edges(ys),
        cells,
        levels=[0.5, 1.5],
        colors="none",
        hatches=[UNPROVEN_HATCH],
    )
    share = share_text(float(np.mean(unproven)))
    return Patch(
        facecolor="none",
        hatch=UNPROVEN_HATCH,
        label=f"hatched: label numerical, not proven ({share})",
    )


def _cell_edges(axis: np.ndarray) -> np.ndarray:
    """The two edges of each grid point's cell as ``pcolormesh(shading="nearest")`` draws it
    (midway to the neighbours, half a spacing beyond the ends), interleaved, shape
    ``(2 * len(axis),)``; each right edge is moved in by a billionth of the span, so that a
    contour between two cells runs along their common edge."""
    mid = (axis[:-1] + axis[1:]) / 2
    left = np.concatenate([[axis[0] - (axis[1] - axis[0]) / 2], mid])
    right = np.concatenate([mid, [axis[-1] + (axis[-1] - axis[-2]) / 2]])
    gap = 1e-9 * float(right[-1] - left[0])
    return np.stack([left, right - gap], axis=1).ravel()


def share_text(share: float) -> str:
    """A share of the grid as a percentage with one decimal; a share that would round to 0.0 %
    but is not zero reads "< 0.1 %"."""
    return "< 0.1%" if 0 < share < 0.0005 else f"{share:.1%}"


def draw_invariant(
    ax: Axes, xs: np.ndarray, ys: np.ndarray, values: np.ndarray, name: str
) -> list[Any]:
    """Level sets of a conserved quantity, :data:`INVARIANT_LEVELS` of them at evenly spaced
    quantiles of its finite values on the grid, coloured by their level
    (:data:`INVARIANT_CMAP`), with a colour bar beside ``ax`` that names the quantity.

    Where the quantity jumps between neighbouring grid points by more than a quarter of its
    range (a singular line, such as ``w = 0`` for the canonical energy with its ``ln|w|``), both
    points are masked: otherwise every level would be drawn across that one cell.
    """
    finite = values[np.isfinite(values)]
    if not finite.size:
        return []
    levels = np.unique(np.quantile(finite, np.linspace(0.03, 0.97, INVARIANT_LEVELS)))
    jump = 0.25 * (levels[-1] - levels[0])
    masked = ~np.isfinite(values)
    with np.errstate(invalid="ignore"):
        across = np.abs(np.diff(values, axis=1)) > jump
        along = np.abs(np.diff(values, axis=0)) > jump
    masked[:, :-1] |= across
    masked[:, 1:] |= across
    masked[:-1] |= along
    masked[1:] |= along
    lines = ax.contour(
        xs,
        ys,
        np.ma.masked_array(values, masked),
        levels=levels,
        cmap=INVARIANT_CMAP,
        linewidths=0.8,
        linestyles="solid",
    )
    bar = ax.get_figure().colorbar(lines, ax=ax, shrink=0.85, pad=0.02)
    bar.set_label(f"conserved {name} (dimensionless)", fontsize=8)
    bar.ax.tick_params(labelsize=7)
    middle = lines.cmap(0.5)
    return [line_handle(color=middle, lw=1.0, label=f"level sets of the conserved {name}")]


def draw_streamlines(
    ax: Axes,
    lines: Sequence[Streamline],
    xs: np.ndarray,
    ys: np.ndarray,
    projected: bool = False,
) -> list[Any]:
    """Streamlines of ``-∇L`` (:func:`gradflow._output.streamlines.streamlines`, placed as
    matplotlib's ``streamplot`` places them) on the grid ``xs``, ``ys`` that they were
    computed on, with an arrow half-way along each.  The arrows are added as artists, not
    patches: each lies on its streamline, inside the data limits the lines already set, and
    ``add_patch`` would compute every arrow's path to update them (a tenth of a second for a
    portrait's 125 arrows).  ``projected``: the plane is a slice of more parameters, so they
    are the projection of ``-∇L`` on it (not trajectories of the flow), and the legend says
    so."""
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import FancyArrowPatch

    style = {"color": STREAM_COLOR, "linewidth": 0.6, "zorder": Line2D.zorder}
    collection = LineCollection([line.points for line in lines], **style)
    collection.sticky_edges.x[:] = [xs[0], xs[-1]]
    collection.sticky_edges.y[:] = [ys[0], ys[-1]]
    ax.add_collection(collection)
    for line in lines:
        ax.add_artist(
            FancyArrowPatch(
                line.tail,
                line.head,
                arrowstyle="-|>",
                mutation_scale=8.0,
                transform=ax.transData,
                **style,
            )
        )
    ax.autoscale_view()
    label = "streamlines of −∇L projected on the slice" if projected else "streamlines of −∇L"
    return [line_handle(color=STREAM_COLOR, lw=0.8, label=label)]


def draw_separatrices(
    ax: Axes, lines: Sequence[np.ndarray], metric: str | None = None, *, dotted: bool = False
) -> list[Any]:
    """Separatrices (polylines of shape ``(n, 2)``) as dashed black lines (dotted grey for a
    second flow's); ``metric`` names the flow's metric in the legend (``None``: not named)."""
    if not lines:
        return []
    style = (
        {"color": "0.35", "lw": 1.6, "ls": ":"}
        if dotted
        else {"color": "black", "lw": 2.0, "ls": "--"}
    )
    for line in lines:
        ax.plot(line[:, 0], line[:, 1], **style)
    where = f", {metric} metric" if metric else ""
    return [line_handle(**style, label=f"separatrix (stable manifold of a saddle){where}")]


def critical_label(s: CriticalSet, unit: str) -> str:
    """``global minima: Γ* (L = 0.5813 nats)`` — the legend text of a critical set."""
    name = "" if s.name == "numerical" else f": {shorten(s.equation or s.name, LABEL_EQUATION)}"
    detail = ""
    if s.kind == Kind.SADDLE:
        degenerate = s.nullity == len(s.hessian_eigenvalues)
        detail = ", degenerate: Hessian = 0" if degenerate else f", Morse index {s.morse_index}"
    unit = f" {unit}" if unit else ""
    return f"{KIND_TEXT[s.kind]}{name} (L = {s.loss:.4f}{unit}{detail})"


def draw_critical(
    ax: Axes,
    sets: Sequence[CriticalSet],
    plane_order: Sequence[int],
    unit: str,
    view: Sequence[float] | None = None,
) -> list[Any]:
    """Critical sets on the plane: curves as lines, points as markers (saddles as crosses).

    With ``view`` (``(xmin, xmax, ymin, ymax)``, the axes' limits), a set with no point inside
    it gets no legend handle: the legend lists only what can be seen."""
    ix, iy = plane_order
    handles, seen = [], set()
    for s in sets:
        color, width = KIND_COLORS[s.kind], KIND_WIDTH[s.kind]
        label = critical_label(s, unit)
        lines = s.polylines()
        shown = [line[:, [ix, iy]] for line in lines] or [s.points[:, [ix, iy]]]
        if view is not None and not any(_in_view(points, view) for points in shown):
            label = ""
        if lines:
            for line in lines:
                ax.plot(line[:, ix], line[:, iy], color=color, lw=width, zorder=4)
            handle = line_handle(color=color, lw=width, label=label)
        else:
            marker = "X" if s.kind == Kind.SADDLE else "o"
            size = 10 if s.dimension == 0 else 3
            ax.plot(
                s.points[:, ix],
                s.points[:, iy],
                marker,
                color=color,
                ms=size,
                mec="white",
                mew=1.2 if size > 5 else 0,
                zorder=5,
            )
            handle = line_handle(color=color, marker=marker, ls="none", ms=8, label=label)
        if label and label not in seen:
            seen.add(label)
            handles.append(handle)
    return handles


def _in_view(points: np.ndarray, view: Sequence[float]) -> bool:
    """Whether any of ``points`` (shape ``(n, 2)``) lies in ``view`` = ``(x0, x1, y0, y1)``."""
    x0, x1, y0, y1 = view
    x, y = points[:, 0], points[:, 1]
    return bool(np.any((x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)))


def draw_overlays(ax: Axes, overlays: Sequence[Overlay]) -> list[Any]:
    """Paths (:class:`gradflow.Overlay`: ``label``, ``path`` of shape ``(n, 2)``, ``color``,
    ``linestyle``) over everything else, cased in white so that no thin line of the same hue
    (a level set) reads as one, a dot at each start and a cross at each end; one legend handle
    per label."""
    from matplotlib.patheffects import Normal, Stroke

    casing = [Stroke(linewidth=3.6, foreground="white"), Normal()]
    handles, seen = [], set()
    for overlay in overlays:
        style = {"color": overlay.color, "lw": 1.6, "ls": overlay.linestyle}
        ax.plot(overlay.path[:, 0], overlay.path[:, 1], zorder=6, path_effects=casing, **style)
        ax.plot(*overlay.path[0], "o", color=overlay.color, ms=5, zorder=7)
        ax.plot(*overlay.path[-1], "X", color=overlay.color, ms=8, mec="white", mew=0.8, zorder=7)
        if overlay.label not in seen:
            seen.add(overlay.label)
            handles.append(line_handle(**style, label=overlay.label))
    return handles


def legend_below(ax: Axes, handles: Sequence[Any], fontsize: float = 7.5) -> None:
    """A legend under the axes: two columns when every label is short, else one."""
    short = all(len(h.get_label()) <= 48 for h in handles)
    ax.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.1),
        ncol=2 if short else 1,
        fontsize=fontsize,
        frameon=False,
    )


def figure_png(fig: Figure) -> bytes:
    """The PNG bytes of a matplotlib figure (for Jupyter's ``_repr_png_``)."""
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    return buffer.getvalue()


def basin_figure(basin_map: BasinMap, labels: Sequence[str], title: str) -> Figure:
    """A figure of a basin map alone: attractor basins, the legend below, and ``title``."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 7.0), layout="constrained")
    ax = fig.add_subplot()
    handles = draw_basins(
        ax,
        basin_map.xs,
        basin_map.ys,
        basin_map.attractor_ids,
        basin_map.labels,
        labels,
        basin_map.attractors,
        basin_map.critical.param_names,
    )
    if basin_map.evidence is not None and np.any(basin_map.evidence == 0):
        handles.append(draw_unproven(ax, basin_map.xs, basin_map.ys, basin_map.evidence))
    ax.set_xlabel(f"${basin_map.plane[0]}$")
    ax.set_ylabel(f"${basin_map.plane[1]}$", rotation=0, ha="right")
    ax.set_title(title, fontsize=10)
    ax.legend(
        handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.1), fontsize=7, frameon=False
    )
    return fig


def critical_figure(sets: CriticalSets) -> Figure:
    """A figure of critical sets alone, in the plane of their first two parameters, the legend
    below."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 7.0), layout="constrained")
    ax = fig.add_subplot()
    (x0, x1), (y0, y1) = sets.box[0], sets.box[1]
    handles = draw_critical(ax, sets, (0, 1), sets.unit, (x0, x1, y0, y1))
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_xlabel(f"${sets.param_names[0]}$")
    ax.set_ylabel(f"${sets.param_names[1]}$", rotation=0, ha="right")
    ax.set_title(f"critical sets of {sets.title or 'the loss'}", fontsize=10)
    fig.legend(handles=handles, loc="outside lower center", fontsize=7.5, frameon=False)
    return fig


def trajectory_figure(trajectory: Trajectory) -> Figure:
    """A figure of a trajectory: its path in its plane (``trajectory.plane``, else the first
    two coordinates), and its loss in time."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9.0, 3.6), layout="constrained")
    path_ax, loss_ax = fig.subplots(1, 2)
    names = trajectory.param_names or tuple(f"θ{i}" for i in range(trajectory.thetas.shape[1]))
    if trajectory.thetas.shape[1] >= 2:
        plane = trajectory.plane or names[:2]
        i, j = names.index(plane[0]), names.index(plane[1])
        path = trajectory.thetas[:, [i, j]]
        path_ax.plot(path[:, 0], path[:, 1], color="#1f5fbf", lw=1.4)
        path_ax.plot(*path[0], "o", color="black", ms=4)
        kind = None if trajectory.reached is None else trajectory.reached.kind
        color = KIND_COLORS.get(kind, "black")
        sure = trajectory.evidence is not None and trajectory.evidence.proven
        path_ax.plot(*path[-1], "X", color=color, mfc=color if sure else "none", ms=8)
        path_ax.set_xlabel(f"${plane[0]}$")
        path_ax.set_ylabel(f"${plane[1]}$", rotation=0, ha="right")
        path_ax.locator_params(axis="x", nbins=4)  # a short path far from 0: labels like 0.04988
    else:
        path_ax.plot(trajectory.ts, trajectory.thetas[:, 0], color="#1f5fbf")
        path_ax.set_xlabel("flow time")
        path_ax.set_ylabel(f"${names[0]}$", rotation=0, ha="right")
    loss_ax.plot(trajectory.ts, trajectory.losses, color="black", lw=1.2)
    loss_ax.set_ylabel("L")
    first = trajectory.ts[trajectory.ts > 0]
    if first.size:
        low = int(np.floor(np.log10(first[0])))  # a power of ten: ticks whole decades apart
        high = int(np.ceil(np.log10(trajectory.ts[-1])))
        loss_ax.set_xscale("symlog", linthresh=10.0**low)
        every = max(1, -(-(high - low) // 5))
        loss_ax.set_xticks([0.0] + [10.0**d for d in range(low, high + 1, every)])
        loss_ax.set_xlabel(f"flow time (logarithmic above {10.0**low:g}, linear below)")
    else:
        loss_ax.set_xlabel("flow time")
    evidence = trajectory.evidence
    escaping = evidence is not None and evidence.reason.startswith("escaping")
    proven = "" if evidence is None else f" ({evidence.word}{', escaping' if escaping else ''})"
    marker = (
        "" if evidence is None or evidence.proven else "; the end is not proven, the marker hollow"
    )
    start = format_point(trajectory.thetas[0])
    where = f"({', '.join(names)}) from {start}" if trajectory.thetas.shape[1] >= 2 else start
    what = f"{trajectory.title}: flow" if trajectory.title else "flow"
    fig.suptitle(f"{what} of {where}\nreached {trajectory.reached}{proven}{marker}", fontsize=9)
    return fig
