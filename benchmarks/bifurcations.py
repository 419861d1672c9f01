"""``gradflow bench bifurcations``: a 1-D sweep with its branches and bifurcations followed.

Times :func:`gradflow.sweep` of the pitchfork normal form ``x⁴/4 - a x²/2 + y²/2`` (two
parameters) over ``cells`` values of ``a`` in [-1, 1], each cell a ``grid × grid`` basin map,
from a cold process (compilation included), then :func:`gradflow.follow` on it: the branches,
the bifurcations located between cells and the attractors matched across them.  The ratio of
the two, measured in the same run, is what following adds to a sweep.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gradflow import GradflowError

__all__ = ["Config", "Report", "bench"]

LOSS = "x**4/4 - a*x**2/2 + y**2/2"
"""The pitchfork normal form (Kuznetsov, *Elements of Applied Bifurcation Theory*, §3.4)."""


@dataclass(frozen=True)
class Config:
    """Sizes of the benchmark.

    Raises:
        GradflowError: ``cells`` below 3 or ``grid`` below 2.
    """

    cells: int = field(default=201, metadata={"help": "values of a in [-1, 1]"})
    grid: int = field(default=41, metadata={"help": "basin grid points per axis in every cell"})

    def __post_init__(self) -> None:
        if self.cells < 3 or self.grid < 2:
            raise GradflowError("--cells must be ≥ 3 and --grid ≥ 2")


@dataclass(frozen=True)
class Report:
    """What :func:`bench` measured.

    Attributes:
        seconds: the sweep's cells, compilation included.
        follow_seconds: branches, bifurcations and attractor tracks afterwards.
        bifurcations: the bifurcations found, as text.
        cores: CPU cores of the machine.
    """

    config: Config
    seconds: float
    follow_seconds: float
    bifurcations: tuple[str, ...]
    cores: int

    def metadata(self) -> dict[str, Any]:
        """Sizes, times and the ratio of the whole to the cells alone."""
        return {
            "loss": LOSS,
            "a": [-1.0, 1.0, self.config.cells],
            "grid": self.config.grid,
            "seconds": self.seconds,
            "follow_seconds": self.follow_seconds,
            "total_seconds": self.seconds + self.follow_seconds,
            "ratio_with_bifurcations": (self.seconds + self.follow_seconds) / self.seconds,
            "bifurcations": list(self.bifurcations),
            "cores": self.cores,
        }

    def text(self) -> str:
        """The sizes, the two times and what was found."""
        r = self.metadata()
        return "\n".join(
            [
                f"sweep of L = {LOSS} over {self.config.cells} values of a in [-1, 1],"
                f" grid {self.config.grid}² per value, {self.cores} cores",
                f"  cells {self.seconds:.1f} s with compilation, following"
                f" {self.follow_seconds:.1f} s: {r['total_seconds']:.1f} s in all"
                f" ({r['ratio_with_bifurcations']:.3f}× the cells)",
                *(f"  {line}" for line in self.bifurcations),
            ]
        )


def bench(config: Config) -> Report:
    """Sweep from cold without following, then follow."""
    from gradflow import Region, follow, loss_model, sweep

    model = loss_model(LOSS, None, ["a"], name=f"L = {LOSS}")
    values = np.linspace(-1.0, 1.0, config.cells)
    begin = time.perf_counter()
    cells = sweep(
        model,
        {"a": values},
        region=Region.of(model, grid=config.grid),
        progress=True,
        bifurcations=False,
    )
    seconds = time.perf_counter() - begin
    begin = time.perf_counter()
    followed = follow(model, cells)
    follow_seconds = time.perf_counter() - begin
    return Report(
        config=config,
        seconds=seconds,
        follow_seconds=follow_seconds,
        bifurcations=tuple(b.text(model.param_names) for b in followed.bifurcations),
        cores=os.cpu_count() or 1,
    )
