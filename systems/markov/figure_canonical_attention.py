"""The three-scalar canonical model L(e, w, a) in 3-D: slices, rays from the origin, trajectories.

Top: basins of the flow on the slices a = -0.5, 0, 0.5 of the (w, e) plane at p = 0.5, q = 0.8
(trajectories leave the slice; each start is labelled by where its 3-D flow ends).  Bottom left:
the fraction of initial directions u (uniform on the sphere) whose flow from r·u reaches the
global minimum, against the initialization scale r, for L(e, w, a) and the canonical L(e, w), at
p + q > 1 and p + q < 1.  Bottom middle and right: 3-D trajectories projected onto (w, e) and
(a, e).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from gradflow import GradflowError, basin_memory

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from gradflow import Portrait, Trajectory

    from .rays import RayOutcomes

__all__ = ["NAME", "SIZE", "Config", "Data", "compute", "draw"]

NAME = "canonical-attention"
SIZE = (16.0, 15.0)
P, Q = 0.5, 0.8
SLICES = (-0.5, 0.0, 0.5)
BOX = (-2.5, 1.5, -2.0, 2.0)
RAY_CASES = ((P, Q, "-"), (0.2, 0.3, "--"))
"""``(p, q, line style)`` of the rays panel: p + q > 1 and p + q < 1."""
STARTS = np.array(
    [
        [0.2, 0.3, 0.8],
        [0.2, -1.0, -0.5],
        [0.3, 0.5, -1.2],
        [0.4, -0.4, 1.5],
        [0.1, 1.2, 0.3],
        [0.5, -1.5, 0.0],
    ]
)
"""Initial points (e, w, a) of the drawn 3-D trajectories."""
COLORS = ("#1b7a2e", "#1f5fbf", "#8e44ad", "#e67e22", "#16a085", "#c0392b")
"""One colour per start."""


@dataclass(frozen=True)
class Config:
    """Settings of the figure.

    Raises:
        GradflowError: fewer than one ray direction.
    """

    grid: int = field(default=61, metadata={"help": "basin grid points per axis"})
    directions: int = field(default=200, metadata={"help": "ray directions"})

    def __post_init__(self) -> None:
        if self.directions < 1:
            raise GradflowError(f"--directions {self.directions} must be ≥ 1")

    SIZES: ClassVar[tuple[str, ...]] = ("grid",)
    """The field that sets the memory the figure needs."""

    def memory_bytes(self) -> float:
        """The basin maps' estimated peak memory (one map at a time)."""
        return basin_memory(self.grid, 3)


@dataclass(frozen=True)
class RayCurve:
    """The rays of one model at one ``(p, q)``: its name, the outcomes, the line style."""

    model: str
    p: float
    q: float
    style: str
    outcomes: RayOutcomes


@dataclass(frozen=True)
class Data:
    """Slice portraits, ray outcomes and 3-D trajectories.

    Attributes:
        slices: one portrait per value in :data:`SLICES`.
        radii: initialization scales of the rays, shape ``(16,)``.
        rays: per model and ``(p, q)``.
        trajectories: the flow from each of :data:`STARTS`.
        unigram_loss: ``H(π)`` at ``(P, Q)``, nats (a trajectory below it ends at a global minimum).
    """

    config: Config
    slices: tuple[Portrait, ...]
    radii: np.ndarray
    rays: tuple[RayCurve, ...]
    trajectories: tuple[Trajectory, ...]
    unigram_loss: float

    def arrays(self) -> dict[str, np.ndarray]:
        """Each slice's portrait arrays, the ray labels, the trajectories' paths."""
        out = {
            f"slice{a:g}_{k}": v
            for a, pic in zip(SLICES, self.slices)
            for k, v in pic.arrays().items()
        }
        for ray in self.rays:
            out[f"rays_{ray.model}_p{ray.p:g}_q{ray.q:g}"] = ray.outcomes.labels
        for i, path in enumerate(self.trajectories):
            out[f"trajectory{i}"] = path.thetas
        return out

    def metadata(self) -> dict[str, Any]:
        """Settings and the basin fractions per slice."""
        return {
            "p": P,
            "q": Q,
            "slices": SLICES,
            "box": BOX,
            "grid": self.config.grid,
            "directions": self.config.directions,
            "radii": self.radii,
            "fractions": {
                f"a={a:g}": pic.basin_map.fractions() for a, pic in zip(SLICES, self.slices)
            },
            "starts": STARTS,
            "source": "derived here: docs/systems/markov.md",
        }


def compute(config: Config) -> Data:
    """Basins on the slices, the rays of both models at both ``(p, q)``, the trajectories."""
    from gradflow import Region, flow, portrait
    from gradflow.systems import markov

    from .attention import canonical_attention
    from .rays import ray_outcomes, sphere_directions

    model = canonical_attention(P, Q)
    slices = tuple(
        portrait(model, region=Region.of(model, grid=config.grid, box=BOX, fixed={"a": a}))
        for a in SLICES
    )
    radii = np.geomspace(0.05, 3.0, 16)
    rays = []
    for p, q, style in RAY_CASES:
        for bound in (canonical_attention(p, q), markov.canonical(p, q)):
            directions = sphere_directions(config.directions, bound.model.dim)
            outcomes = ray_outcomes(bound, directions, radii)
            rays.append(RayCurve(bound.model.name, p, q, style, outcomes))
    return Data(
        config=config,
        slices=slices,
        radii=radii,
        rays=tuple(rays),
        trajectories=tuple(flow(model, start) for start in STARTS),
        unigram_loss=model.references["unigram_loss"],
    )


def draw(data: Data, fig: Figure) -> None:
    """Slices (top row) and one legend below them (:func:`_slice_legend`); rays, trajectories
    on (w, e) and on (a, e) (bottom row)."""
    grid = fig.add_gridspec(3, 3, height_ratios=(1.0, 0.42, 1.0))
    top = [fig.add_subplot(grid[0, i]) for i in range(3)]
    handles = []
    for ax, a, picture in zip(top, SLICES, data.slices):
        handles.append(
            picture.draw(
                ax,
                layers=("basins", "streamlines", "critical"),
                legend=False,
                title=f"slice a = {a:g}: basins of the 3-D flow, streamlines in the slice",
            )
        )
    _slice_legend(fig.add_subplot(grid[1, :]), handles)
    bottom = [fig.add_subplot(grid[2, i]) for i in range(3)]
    _rays_panel(bottom[0], data)
    for start, color, path in zip(STARTS, COLORS, data.trajectories):
        ends = "global" if path.losses[-1] < data.unigram_loss - 1e-6 else "H(π)"
        for ax, (x, y) in zip(bottom[1:], ((1, 0), (2, 0))):
            ax.plot(
                path.thetas[:, x],
                path.thetas[:, y],
                color=color,
                lw=1.5,
                label=f"({', '.join(f'{v:g}' for v in start)}) → {ends}, L = {path.losses[-1]:.4f}",
            )
            ax.plot(*path.thetas[0, [x, y]], "o", color=color, ms=5)
            ax.plot(*path.thetas[-1, [x, y]], "x", color=color, ms=8, mew=2)
    for ax, xname in zip(bottom[1:], ("w", "a")):
        ax.set_xlabel(f"${xname}$")
        ax.set_ylabel("$e$", rotation=0, ha="right")
        ax.axhline(0, color="#1f5fbf", lw=1, alpha=0.5)
        ax.set_title(
            f"3-D trajectories of L(e, w, a) projected onto ({xname}, e)\n"
            "legend: start (e, w, a) → where it ends",
            fontsize=10,
        )
    bottom[1].axvline(-1 / np.sqrt(2), color="#e07b00", lw=1, ls="--", label="w = -1/√2")
    bottom[1].legend(fontsize=7.5, loc="upper right")
    fig.suptitle(
        f"Three-scalar canonical model L(e, w, a) = Φ(e²(1 + a e²/4)(1 + 2w|w|)), p = {P}, q = {Q}",
        fontsize=12,
    )


def _slice_legend(ax: Any, handles: list[list[Any]]) -> None:
    """One legend for the three slices: the critical sets and the drawing's layers once (the
    slices cut the same 3-D sets), each slice's attractors with their shares, in two columns,
    every equation whole."""
    from matplotlib.patches import Patch

    ax.axis("off")
    shared, seen, per_slice = [], set(), []
    for a, drawn in zip(SLICES, handles):
        for handle in drawn:
            label = handle.get_label()
            if isinstance(handle, Patch) and label.startswith("#"):
                handle.set_label(f"a = {a:g}: {label}")
                per_slice.append(handle)
            elif label not in seen:
                seen.add(label)
                shared.append(handle)
    ax.legend(
        handles=shared + per_slice,
        loc="center",
        ncol=2,
        fontsize=7.5,
        frameon=False,
        title="critical sets (every slice); each slice's attractors: the share of its grid",
        title_fontsize=8,
    )


def _rays_panel(ax: Any, data: Data) -> None:
    """Fraction of directions reaching the global minimum against the scale, per model and case."""
    colors = {"canonical-attention": "#1f5fbf", "canonical": "#c0392b"}
    for ray in data.rays:
        ax.plot(
            data.radii,
            ray.outcomes.fraction("global"),
            ray.style,
            color=colors[ray.model],
            marker="o",
            ms=3,
            label=f"{ray.model}, p = {ray.p:g}, q = {ray.q:g} (p + q {'>' if ray.p + ray.q > 1 else '<'} 1)",
        )
    ax.set_xscale("log")
    ax.set_xlabel("initialization scale r (θ0 = r·u, u uniform on the sphere)")
    ax.set_ylabel("fraction of directions reaching the global minimum")
    ax.set_ylim(-0.03, 1.03)
    ax.legend(  # long handles: the dashed (p + q < 1) from the solid (p + q > 1)
        fontsize=7.5,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.16),
        frameon=False,
        handlelength=4.5,
    )
    ax.set_title(f"rays from the origin ({data.config.directions} directions)", fontsize=10)
