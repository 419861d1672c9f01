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

from gradflow import GradflowError, Region, basin_memory

from .ranges import check_switching

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
    """Settings of the figure: the grid, the two columns' ``(p, q)`` (default :data:`CASES`, the
    paper's) and the box (default the model's ranges).

    Raises:
        GradflowError: ``grid`` below 2 or no integer, ``p`` or ``q`` not two numbers in
            ``(0, 1)``, a box that is not four increasing pairs of finite numbers.
    """

    grid: int = field(default=201, metadata={"help": "basin grid points per axis"})
    p: tuple[float, float] = field(
        default=tuple(c[0] for c in CASES),
        metadata={"nargs": 2, "metavar": ("P1", "P2"), "help": "p of the two columns"},
    )
    q: tuple[float, float] = field(
        default=tuple(c[1] for c in CASES),
        metadata={"nargs": 2, "metavar": ("Q1", "Q2"), "help": "q of the two columns"},
    )
    box: tuple[float, float, float, float] | None = field(
        default=None,
        metadata={
            "nargs": 4,
            "metavar": ("WMIN", "WMAX", "EMIN", "EMAX"),
            "help": "the (w, e) box of every panel (default the model's ranges)",
        },
    )

    def __post_init__(self) -> None:
        if isinstance(self.grid, bool) or not isinstance(self.grid, Integral) or self.grid < 2:
            raise GradflowError(f"grid = {self.grid!r} must be an integer ≥ 2")
        if len(tuple(self.p)) != 2 or len(tuple(self.q)) != 2:
            raise GradflowError(f"p = {self.p!r}, q = {self.q!r}: give two values of each")
        pairs = tuple(check_switching(p, q) for p, q in zip(self.p, self.q))
        object.__setattr__(self, "p", tuple(p for p, _ in pairs))
        object.__setattr__(self, "q", tuple(q for _, q in pairs))
        if self.box is not None:
            Region(("e", "w"), ("w", "e"), tuple(self.box), (2, 2), {})  # checks the box
            object.__setattr__(self, "box", tuple(float(v) for v in self.box))

    @property
    def cases(self) -> tuple[tuple[float, float], ...]:
        """The ``(p, q)`` of the two columns."""
        return tuple(zip(self.p, self.q))

    SIZES: ClassVar[tuple[str, ...]] = ("grid",)
    """The field that sets the memory the figure needs."""

    def memory_bytes(self) -> float:
        """The basin maps' estimated peak memory (one map at a time)."""
        return basin_memory(self.grid, 2)


@dataclass(frozen=True)
class Data:
    """The portraits of the two cases, in the order of ``config.cases``."""

    config: Config
    portraits: tuple[Portrait, ...]

    def arrays(self) -> dict[str, np.ndarray]:
        """Each portrait's arrays, prefixed ``p0.1_q0.1_`` and so on."""
        return {
            f"{_tag(p, q)}_{k}": v
            for (p, q), result in zip(self.config.cases, self.portraits)
            for k, v in result.arrays().items()
        }

    def metadata(self) -> dict[str, Any]:
        """The model, the cases, the grid, box and solver, the basin fractions per case."""
        last = self.portraits[-1]
        return {
            "model": "canonical",
            "hyperparameters": [{"p": p, "q": q} for p, q in self.config.cases],
            "grid": self.config.grid,
            "box": list(last.box),
            "solver": [o.metadata() for o in last.basin_map.options],
            "fractions": {
                _tag(p, q): result.basin_map.fractions()
                for (p, q), result in zip(self.config.cases, self.portraits)
            },
            "source": "Makkuva et al., Local to Global (NeurIPS 2024), Figure 1",
        }


def _tag(p: float, q: float) -> str:
    return f"p{p:g}_q{q:g}"


def compute(config: Config) -> Data:
    """The portrait (flow, energy levels, basins on a ``grid × grid`` grid) of each case."""
    from gradflow import portrait
    from gradflow.systems import markov

    return Data(
        config=config,
        portraits=tuple(
            portrait(
                markov.canonical(p, q),
                region=Region.of(markov.canonical(p, q), grid=config.grid, box=config.box),
            )
            for p, q in config.cases
        ),
    )


def draw(data: Data, fig: Figure) -> None:
    """Flow and energy levels (top row), basins and separatrix (bottom row), one column per case,
    each column with its legend below it."""
    for column, (p, q), result in zip(fig.subfigures(1, 2), data.config.cases, data.portraits):
        top, bottom = column.subplots(2, 1)
        side = "<" if p + q < 1 else ">" if p + q > 1 else "="
        case = f"p = q = {p:g}" if p == q else f"p = {p:g}, q = {q:g}"
        handles = result.draw(
            top,
            layers=("invariant", "streamlines", "critical"),
            title=f"{case} (p + q {side} 1): flow and energy levels",
            legend=False,
        )
        handles += result.draw(
            bottom,
            layers=("basins", "separatrix", "critical"),
            title=f"{case}: basins of attraction and separatrix",
            legend=False,
        )
        unique = {h.get_label(): h for h in handles}
        column.legend(handles=list(unique.values()), loc="outside lower center", fontsize=7.5)
    fig.suptitle(
        "Canonical model L(e, w) = Φ(e²(1 + 2w|w|)) (Local to Global, Fig. 1)", fontsize=12
    )
