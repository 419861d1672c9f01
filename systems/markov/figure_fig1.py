"""Local to Global (Makkuva et al., NeurIPS 2024), Figure 1: the canonical gradient flow.

Four panels in the (w, e) plane of the canonical model ``L(e, w)``: for p = q = 0.1 (p + q < 1)
and p = q = 0.9 (p + q > 1), the flow with the level sets of the conserved energy
``E = e² - w² - sgn(w) ln|w|``, and the basins of attraction computed by integrating the flow,
with the saddle's separatrix (the level set ``E = -(1 + ln 2)/2`` on the side where the flow
runs into the saddle).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from numbers import Integral
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from gradflow import GradflowError, basin_memory

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from gradflow import Portrait

__all__ = ["CASES", "NAME", "SIZE", "Config", "Data", "compute", "draw"]

NAME = "local-to-global-fig1"
SIZE = (12.0, 14.0)
CASES = ((0.1, 0.1), (0.9, 0.9))
"""The switching probabilities ``(p, q)`` of the two columns."""


@dataclass(frozen=True)
class Config:
    """Settings of the figure.

    Raises:
        GradflowError: ``grid`` below 2.
    """

    grid: int = field(default=201, metadata={"help": "basin grid points per axis"})

    def __post_init__(self) -> None:
        if isinstance(self.grid, bool) or not isinstance(self.grid, Integral) or self.grid < 2:
            raise GradflowError(f"grid = {self.grid!r} must be an integer ≥ 2")

    SIZES: ClassVar[tuple[str, ...]] = ("grid",)
    """The field that sets the memory the figure needs."""

    def memory_bytes(self) -> float:
        """The basin maps' estimated peak memory (one map at a time)."""
        return basin_memory(self.grid, 2)


@dataclass(frozen=True)
class Data:
    """The portraits of the two cases, in the order of :data:`CASES`."""

    config: Config
    portraits: tuple[Portrait, ...]

    def arrays(self) -> dict[str, np.ndarray]:
        """Each portrait's arrays, prefixed ``p0.1_q0.1_`` and so on."""
        return {
            f"{_tag(p, q)}_{k}": v
            for (p, q), result in zip(CASES, self.portraits)
            for k, v in result.arrays().items()
        }

    def metadata(self) -> dict[str, Any]:
        """The model, the cases, the grid, box and solver, the basin fractions per case."""
        last = self.portraits[-1]
        return {
            "model": "canonical",
            "hyperparameters": [{"p": p, "q": q} for p, q in CASES],
            "grid": self.config.grid,
            "box": list(last.box),
            "solver": [o.metadata() for o in last.basin_map.options],
            "fractions": {
                _tag(p, q): result.basin_map.fractions()
                for (p, q), result in zip(CASES, self.portraits)
            },
            "source": "Makkuva et al., Local to Global (NeurIPS 2024), Figure 1",
        }


def _tag(p: float, q: float) -> str:
    return f"p{p:g}_q{q:g}"


def compute(config: Config) -> Data:
    """The portrait (flow, energy levels, basins on a ``grid × grid`` grid) of each case."""
    from gradflow import Region, portrait
    from gradflow.systems import markov

    return Data(
        config=config,
        portraits=tuple(
            portrait(
                markov.canonical(p, q), region=Region.of(markov.canonical(p, q), grid=config.grid)
            )
            for p, q in CASES
        ),
    )


def draw(data: Data, fig: Figure) -> None:
    """Flow and energy levels (top row), basins and separatrix (bottom row), one column per case,
    each column with its legend below it."""
    for column, (p, q), result in zip(fig.subfigures(1, 2), CASES, data.portraits):
        top, bottom = column.subplots(2, 1)
        side = "<" if p + q < 1 else ">"
        handles = result.draw(
            top,
            layers=("invariant", "streamlines", "critical"),
            title=f"p = q = {p:g} (p + q {side} 1): flow and energy levels",
            legend=False,
        )
        handles += result.draw(
            bottom,
            layers=("basins", "separatrix", "critical"),
            title=f"p = q = {p:g}: basins of attraction and separatrix",
            legend=False,
        )
        unique = {h.get_label(): h for h in handles}
        column.legend(handles=list(unique.values()), loc="outside lower center", fontsize=7.5)
    fig.suptitle(
        "Canonical model L(e, w) = Φ(e²(1 + 2w|w|)) (Local to Global, Fig. 1)", fontsize=12
    )
