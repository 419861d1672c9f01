"""Does the canonical flow predict training?  Full-model training trajectories (standard and
recommended init, several seeds) projected onto the canonical coordinates (w, e) and drawn over
the phase portrait and basins of the reduced model L(e, w) at p = 0.5, q = 0.8.

The projection (:func:`gradflow.systems.markov.embedding.canonical_coordinates`) reads ``e = ‖e‖``
and ``4w|w| = α̂ᵀ W_2 W_1 α̂`` along ``α̂ = e/‖e‖``.  Training is AdamW on sampled batches
(CPU-sized: N = 64 positions, d = 8), not the gradient flow of the portrait: the overlay shows
where the weights go, the basins show where the reduced flow would take them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from gradflow import GradflowError, basin_memory

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from gradflow import Portrait

    from .training import TrainResult

__all__ = ["NAME", "SIZE", "Config", "Data", "compute", "draw"]

NAME = "local-to-global-overlay"
SIZE = (8.5, 9.0)
P, Q = 0.5, 0.8
BOX = (-2.5, 2.0, 0.0, 1.6)
COLORS = {"standard": "#6b3e26", "paper": "#e6007e"}
"""One colour per init (dark brown, magenta), neither a colour of a kind of critical set nor of a
basin's tint (green, blue, orange, red, purple), nor the black of the separatrix: a training path
must not read as a separatrix or a set."""
STYLES = ("-", "--", ":")
"""One line style per seed."""


@dataclass(frozen=True)
class Config:
    """Settings of the figure.

    Raises:
        GradflowError: ``seeds`` outside 1…3.
    """

    steps: int = field(default=600, metadata={"help": "optimizer steps"})
    seeds: int = field(default=3, metadata={"help": "seeds per init, 1 to 3"})
    grid: int = field(default=121, metadata={"help": "basin grid points per axis"})

    def __post_init__(self) -> None:
        if not 1 <= self.seeds <= 3:
            raise GradflowError(f"--seeds {self.seeds} must be in 1…3")

    SIZES: ClassVar[tuple[str, ...]] = ("grid",)
    """The field that sets the memory the figure needs."""

    def memory_bytes(self) -> float:
        """The basin maps' estimated peak memory (one map at a time)."""
        return basin_memory(self.grid, 2)


@dataclass(frozen=True)
class Data:
    """The training runs per init and the portrait with their projected paths overlaid."""

    config: Config
    runs: dict[str, TrainResult]
    picture: Portrait

    def arrays(self) -> dict[str, np.ndarray]:
        """Projected coordinates and test losses per init, then the portrait's arrays."""
        out = {}
        for init, result in self.runs.items():
            out[f"{init}_coords"] = result.coords
            out[f"{init}_test_loss"] = result.test_loss
        return out | self.picture.arrays()

    def metadata(self) -> dict[str, Any]:
        """Settings, each run's endpoint and final test loss, and the portrait's record."""
        endpoints = {
            init: {"coords": r.coords[:, -1], "test_loss": r.test_loss[:, -1]}
            for init, r in self.runs.items()
        }
        return {
            "p": P,
            "q": Q,
            "steps": self.config.steps,
            "seeds": self.config.seeds,
            "box": BOX,
            "endpoints": endpoints,
            **self.picture.metadata(),
        }


def compute(config: Config) -> Data:
    """Train every init's seeds; the portrait of ``L(e, w)`` with their ``(w, e)`` paths."""
    from gradflow import Overlay, Region, portrait
    from gradflow.systems import markov

    from .training import TrainConfig, train

    runs, overlays = {}, []
    for init, color in COLORS.items():
        result = train(TrainConfig(p=P, q=Q, init=init, steps=config.steps, seeds=config.seeds))
        runs[init] = result
        for seed in range(config.seeds):
            label = f"{init} init, seed {seed}: loss {result.test_loss[seed, -1]:.4f}"
            path = result.coords[seed][:, [1, 0]]
            overlays.append(Overlay(label, path, color, STYLES[seed]))
    picture = portrait(
        markov.canonical(P, Q),
        region=Region.of(markov.canonical(P, Q), grid=config.grid, box=BOX),
        overlays=overlays,
    )
    return Data(config=config, runs=runs, picture=picture)


def draw(data: Data, fig: Figure) -> None:
    """The portrait with the training paths; dots at the starts, crosses at the ends (drawn by
    every overlay)."""
    ax = fig.add_subplot()
    data.picture.draw(
        ax,
        title=(
            f"Full-model training projected onto (w, e) over the canonical flow L(e, w), p = {P}, q = {Q}\n"
            f"AdamW, N = 64, d = 8, {data.config.steps} steps; dots: start, crosses: end"
        ),
    )
