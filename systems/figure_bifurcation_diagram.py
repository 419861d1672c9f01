"""A bifurcation diagram: the critical points of a loss along one hyperparameter.

A sweep of a loss over one hyperparameter (default the pitchfork normal form
``x⁴/4 - a x²/2 + y²/2``, Kuznetsov, *Elements of Applied Bifurcation Theory*, §3.4): (a) one
coordinate of every branch of isolated critical points against the hyperparameter — minima
solid, saddles dashed, maxima dotted — with the located bifurcations marked; (b) the share of
the basin grid that reaches each attractor, followed from value to value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from gradflow import GradflowError, basin_memory

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from gradflow import Sweep

__all__ = ["NAME", "SIZE", "Config", "Data", "compute", "draw"]

NAME = "bifurcation-diagram"
SIZE = (8.0, 7.0)
STYLES = {"min": "-", "saddle": "--", "max": ":", "degenerate": ":"}
"""Line style of a branch by its kind (BifurcationKit's and MatCont's convention)."""
MARKERS = {"fold": "o", "pitchfork": "D", "transcritical": "s", "degenerate crossing": "X"}
"""Marker of each bifurcation type."""


@dataclass(frozen=True)
class Config:
    """Settings of the figure.

    Raises:
        GradflowError: fewer than 3 values, a grid below 2, ``lo ≥ hi``, or a loss, parameter
            or hyperparameter that does not fit.
    """

    loss: str = field(default="x**4/4 - a*x**2/2 + y**2/2", metadata={"help": "the loss, as text"})
    hyper: str = field(default="a", metadata={"help": "the swept hyperparameter of the loss"})
    lo: float = field(default=-1.0, metadata={"help": "its smallest value"})
    hi: float = field(default=1.0, metadata={"help": "its largest value"})
    cells: int = field(default=41, metadata={"help": "values of the hyperparameter"})
    grid: int = field(default=41, metadata={"help": "basin grid points per axis at each value"})
    coordinate: str = field(default="x", metadata={"help": "the parameter drawn against it"})

    SIZES: ClassVar[tuple[str, ...]] = ("grid",)
    """The field that sets the memory the figure needs (cells are computed one at a time)."""

    def __post_init__(self) -> None:
        if self.cells < 3 or self.grid < 2:
            raise GradflowError(f"cells = {self.cells} must be ≥ 3 and grid = {self.grid} ≥ 2")
        if not self.lo < self.hi:
            raise GradflowError(f"need lo < hi, got lo = {self.lo}, hi = {self.hi}")

    def memory_bytes(self) -> float:
        """One value's basin map at a time."""
        return basin_memory(self.grid, 2)


@dataclass(frozen=True)
class Data:
    """The sweep and the parameter names of the loss."""

    config: Config
    sweep: Sweep
    params: tuple[str, ...]

    @property
    def values(self) -> np.ndarray:
        """The hyperparameter's values, shape ``(cells,)``."""
        return np.asarray(self.sweep.axes[self.config.hyper])

    def arrays(self) -> dict[str, np.ndarray]:
        """The sweep's arrays and the share reaching each followed attractor, ``(tracks,
        cells)``."""
        return {
            **self.sweep.arrays(),
            "attractor_fractions": np.array([t.fractions for t in self.sweep.attractor_tracks]),
        }

    def metadata(self) -> dict[str, Any]:
        """The settings, and the sweep with its branches, bifurcations and attractor tracks."""
        return {
            "config": vars(self.config),
            "parameters": list(self.params),
            **self.sweep.metadata(),
        }

    def summary(self) -> str:
        """One line per bifurcation."""
        lines = [
            f"{len(self.sweep.branches)} branches, {len(self.sweep.bifurcations)} bifurcations"
        ]
        lines += [f"  {b.text(self.params)}" for b in self.sweep.bifurcations]
        return "\n".join(lines)


def compute(config: Config = Config()) -> Data:
    """Sweep the loss over ``config.cells`` values of the hyperparameter.

    Raises:
        GradflowError: the loss does not parse, or ``coordinate`` is not one of its parameters.
    """
    from gradflow import Region, loss_model, sweep

    model = loss_model(config.loss, None, [config.hyper], name=f"L = {config.loss}")
    model.index(config.coordinate)
    values = np.linspace(config.lo, config.hi, config.cells)
    result = sweep(model, {config.hyper: values}, region=Region.of(model, grid=config.grid))
    return Data(config=config, sweep=result, params=model.param_names)


def draw(data: Data, fig: Figure) -> None:
    """(a) the branches and bifurcations, (b) the attractors' shares."""
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    _draw_branches(data, top)
    _draw_fractions(data, bottom)
    fig.suptitle(f"L = {data.config.loss}: critical points along {data.config.hyper}", fontsize=11)


def _draw_branches(data: Data, ax: Axes) -> None:
    """Each branch as runs of one kind between neighbouring values (a run ends half-way to a
    value of another kind), styled by kind; each bifurcation as a marker."""
    from gradflow import stability

    h = data.values
    j = data.params.index(data.config.coordinate)
    for number, branch in enumerate(data.sweep.branches):
        color = f"C{number % 10}"
        x, y = h[list(branch.cells)], branch.points[:, j]
        kinds = [stability(k) for k in branch.kinds]
        ax.plot(x, y, ".", color=color, ms=3)
        for run in _runs(branch.cells, kinds):
            xs, ys = list(x[run]), list(y[run])
            if run[0] > 0 and branch.cells[run[0] - 1] == branch.cells[run[0]] - 1:
                xs.insert(0, (x[run[0] - 1] + x[run[0]]) / 2)
                ys.insert(0, (y[run[0] - 1] + y[run[0]]) / 2)
            if run[-1] + 1 < len(x) and branch.cells[run[-1] + 1] == branch.cells[run[-1]] + 1:
                xs.append((x[run[-1]] + x[run[-1] + 1]) / 2)
                ys.append((y[run[-1]] + y[run[-1] + 1]) / 2)
            ax.plot(xs, ys, STYLES[kinds[run[0]]], color=color, lw=1.6)
        ax.plot([], [], "-", color=color, label=branch.name)
    for kind, style in (("minima", "-"), ("saddles", "--"), ("maxima", ":")):
        ax.plot([], [], style, color="black", label=kind)
    seen = set()
    for b in data.sweep.bifurcations:
        label = None if b.type in seen else b.type
        seen.add(b.type)
        ax.plot(
            b.at[data.config.hyper],
            b.point[j],
            MARKERS[b.type],
            color="black",
            ms=8,
            mfc="none",
            mew=1.5,
            label=label,
            zorder=5,
        )
    ax.set_ylabel(f"${data.config.coordinate}$", rotation=0, ha="right")
    ax.set_title("(a) branches of critical points, bifurcations located between values", fontsize=9)
    ax.legend(fontsize=7, loc="best", frameon=False, ncol=2)
    ax.grid(alpha=0.3)


def _runs(cells: tuple[int, ...], kinds: list[str]) -> list[list[int]]:
    """Positions of a branch grouped into runs of neighbouring cells of one kind."""
    runs = [[0]]
    for i in range(1, len(cells)):
        if cells[i] == cells[i - 1] + 1 and kinds[i] == kinds[i - 1]:
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


def _draw_fractions(data: Data, ax: Axes) -> None:
    """The share of the grid reaching each attractor that some grid point reaches (markers of
    different shapes and sizes, so that tracks with equal shares stay visible)."""
    h = data.values
    for i, track in enumerate(data.sweep.attractor_tracks):
        if not np.any(track.fractions > 0):
            continue
        present = track.ids >= 0
        ax.plot(
            h[present],
            track.fractions[present],
            "-" + "os^v"[i % 4],
            ms=6 - 1.2 * (i % 4),
            mfc="none",
            lw=1.2,
            color=f"C{i % 10}",
            label=f"#{track.id} {track.set}",
        )
    ax.set_xlabel(f"${data.config.hyper}$")
    ax.set_ylabel("share of the grid")
    ax.set_ylim(-0.03, 1.03)
    ax.set_title(
        f"(b) share of the {data.config.grid}² grid reaching each attractor, followed "
        "across values",
        fontsize=9,
    )
    ax.legend(fontsize=7, loc="best", frameon=False)
    ax.grid(alpha=0.3)
