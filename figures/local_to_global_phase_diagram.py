"""Local to Global: the phase diagram of the canonical model over the switching square.

For every ``(p, q)`` of a grid in ``(0, 1)²``, the basin map of the canonical flow ``L(e, w)`` on
``[-3, 3]²``: (a) the share of initializations that reach the global minimum Γ* (the bigram
solution), with the line ``p + q = 1`` where the chain is i.i.d. and the bifurcations located
between cells along every row and column (the halves of ``e = 0`` trade kinds there); (b) the
loss gap between the local and the global minimum, ``H(π) - H`` (the entropy rate ``H``), in
nats; (c) the share that reaches the local minimum on ``e = 0`` (the unigram solution).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from gradflow import GradflowError, basin_memory

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from gradflow import Sweep

__all__ = ["NAME", "SIZE", "Config", "Data", "compute", "draw"]

NAME = "local-to-global-phase-diagram"
SIZE = (15.0, 5.2)


@dataclass(frozen=True)
class Config:
    """Settings of the figure.

    Raises:
        GradflowError: fewer than 2 cells per axis, a grid below 2, or a range not inside
            ``(0, 1)``.
    """

    cells: int = field(default=19, metadata={"help": "values of p and of q"})
    lo: float = field(default=0.05, metadata={"help": "smallest p and q"})
    hi: float = field(default=0.95, metadata={"help": "largest p and q"})
    grid: int = field(default=51, metadata={"help": "basin grid points per axis in every cell"})

    SIZES: ClassVar[tuple[str, ...]] = ("grid",)
    """The field that sets the memory the figure needs (cells are computed one at a time)."""

    def __post_init__(self) -> None:
        if self.cells < 2 or self.grid < 2:
            raise GradflowError(f"cells = {self.cells} and grid = {self.grid} must be ≥ 2")
        if not 0 < self.lo < self.hi < 1:
            raise GradflowError(f"need 0 < lo < hi < 1, got lo = {self.lo}, hi = {self.hi}")

    def memory_bytes(self) -> float:
        """One cell's basin map at a time."""
        return basin_memory(self.grid, 2)


@dataclass(frozen=True)
class Data:
    """The sweep and the closed-form loss gap on its cells."""

    config: Config
    sweep: Sweep
    gap: np.ndarray

    @property
    def values(self) -> np.ndarray:
        """The values of p (and of q), shape ``(cells,)``."""
        return np.asarray(self.sweep.axes["p"])

    def arrays(self) -> dict[str, np.ndarray]:
        """The sweep's arrays, the shares reaching each kind and the loss gap, over ``(p, q)``."""
        return {
            **self.sweep.arrays(),
            "global_share": self.sweep.fraction("global_min"),
            "local_share": self.sweep.fraction("local_min"),
            "loss_gap": self.gap,
        }

    def metadata(self) -> dict[str, Any]:
        """The settings, the sweep's cells and where critical sets change kind."""
        return {
            "model": "canonical",
            "config": vars(self.config),
            **self.sweep.to_dict(),
            "source": "Makkuva et al., Local to Global (NeurIPS 2024): how the basins depend on p, q",
        }


def compute(config: Config = Config()) -> Data:
    """Sweep the canonical model over ``config.cells²`` values of ``(p, q)``."""
    from gradflow import sweep
    from gradflow.models.markov import canonical_model

    values = np.linspace(config.lo, config.hi, config.cells)
    model = canonical_model()
    result = sweep(model, {"p": values, "q": values}, grid=config.grid)
    gap = np.array([[_loss_gap(model.bind(p=p, q=q).references) for q in values] for p in values])
    return Data(config=config, sweep=result, gap=gap)


def _loss_gap(references: dict[str, float]) -> float:
    """``H(π) - H``: the unigram solution's loss above the entropy rate (nats)."""
    return references["unigram_loss"] - references["entropy_rate"]


def draw(data: Data, fig: Figure) -> None:
    """Three heat maps over ``(q, p)``, each with the line ``p + q = 1`` and the bifurcations
    the sweep located between its cells (where the halves of ``e = 0`` trade kinds)."""
    axes = fig.subplots(1, 3)
    v = data.values
    step = v[1] - v[0]
    extent = (v[0] - step / 2, v[-1] + step / 2, v[0] - step / 2, v[-1] + step / 2)
    panels = (
        (
            "(a) share reaching the global minimum Γ*",
            data.sweep.fraction("global_min"),
            "Greens",
            (0, 1),
        ),
        (
            "(b) loss gap H(π) − H between the local and global minimum (nats)",
            data.gap,
            "Purples",
            None,
        ),
        (
            "(c) share reaching the local minimum (unigram)",
            data.sweep.fraction("local_min"),
            "Blues",
            (0, 1),
        ),
    )
    for ax, (title, values, cmap, limits) in zip(axes, panels):
        image = ax.imshow(
            values,
            origin="lower",
            extent=extent,
            cmap=cmap,
            vmin=None if limits is None else limits[0],
            vmax=None if limits is None else limits[1],
            aspect="equal",
        )
        levels = (0.25, 0.5, 0.75) if limits else 6
        lines = ax.contour(v, v, values, levels=levels, colors="black", linewidths=0.5)
        ax.clabel(lines, fontsize=6, fmt="%.2g")
        ax.plot([0, 1], [1, 0], color="#c0202a", lw=1.4, ls="--", label="p + q = 1 (i.i.d. chain)")
        located = data.sweep.bifurcations
        ax.plot(
            [b.at["q"] for b in located],
            [b.at["p"] for b in located],
            "x",
            color="black",
            ms=5,
            mew=1.2,
            label="bifurcations located by the sweep",
        )
        ax.set_xlim(extent[:2])
        ax.set_ylim(extent[2:])
        ax.set_xlabel("$q$")
        ax.set_ylabel("$p$", rotation=0)
        ax.set_title(title, fontsize=9)
        fig.colorbar(image, ax=ax, shrink=0.8)
    axes[0].legend(loc="lower left", fontsize=7, frameon=False)
    fig.suptitle(
        f"Canonical model L(e, w): basins of [-3, 3]² over the switching square "
        f"({len(v)} × {len(v)} values, {data.config.grid}² initializations each)",
        fontsize=11,
    )
