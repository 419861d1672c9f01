"""Where full training ends against the reduced basins: the fate map of the canonical model.

Two panels in the (w, e) plane, p = 0.5, q = 0.8 (p + q > 1) and p = 0.2, q = 0.3 (p + q < 1):
the reduced model's basins in the metric the embedding induces (shaded), its separatrix in that
metric (dashed) and in the Euclidean one of the paper's portrait (dotted), and at every grid
point the fate of the full transformer trained by gradient flow on its exact loss from
``embed(e0, w0)`` (:mod:`gradflow.systems.markov.fate`): a marker per fate, circled in red where
it disagrees with the reduced prediction of the induced metric
(:func:`gradflow.systems.fate_markers.draw_fates`, the drawing of the fate map's own picture).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gradflow import GradflowError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from gradflow import Portrait

    from .fate import FateMap

__all__ = ["CASES", "NAME", "SIZE", "Config", "Data", "compute", "draw"]

NAME = "local-to-global-fate-map"
SIZE = (13.0, 7.5)
CASES = ((0.5, 0.8), (0.2, 0.3))
"""The switching probabilities ``(p, q)`` of the two panels."""
BOX = (-2.5, 2.0, 0.1, 1.6)


@dataclass(frozen=True)
class Config:
    """Settings of the figure.

    Raises:
        GradflowError: a grid below 2 or a bad length.
    """

    grid: int = field(default=12, metadata={"help": "fate grid points per axis"})
    basin_grid: int = field(default=61, metadata={"help": "reduced basin grid points per axis"})
    length: int = field(default=6, metadata={"help": "positions N of the full model"})
    max_steps: int = field(default=20_000, metadata={"help": "solver-step budget of each full run"})
    runs: str = field(
        default="",
        metadata={
            "help": "a folder keeping each case's full runs (p0.5_q0.8/, p0.2_q0.3/): a second "
            "drawing, or one after an interruption, reuses them instead of training again"
        },
    )

    def __post_init__(self) -> None:
        for name in ("grid", "basin_grid"):
            if getattr(self, name) < 2:
                raise GradflowError(f"{name} = {getattr(self, name)!r} must be an integer ≥ 2")


@dataclass(frozen=True)
class Data:
    """Per case, the fate map and the reduced portrait in the induced metric."""

    config: Config
    fates: tuple[FateMap, ...]
    portraits: tuple[Portrait, ...]

    def arrays(self) -> dict[str, np.ndarray]:
        """Each case's fate arrays and portrait arrays, prefixed ``p0.5_q0.8_``."""
        out = {}
        for (p, q), fate, portrait in zip(CASES, self.fates, self.portraits):
            out |= {f"{_tag(p, q)}_fate_{k}": v for k, v in fate.arrays().items()}
            out |= {f"{_tag(p, q)}_{k}": v for k, v in portrait.arrays().items()}
        return out

    def metadata(self) -> dict[str, Any]:
        """Per case: agreement per metric, reasons, fate counts, mismatches."""
        return {
            "model": "canonical",
            "box": list(BOX),
            "cases": {
                _tag(p, q): {k: v for k, v in f.metadata().items() if k != "config"}
                for (p, q), f in zip(CASES, self.fates)
            },
            "grid": self.config.grid,
            "basin_grid": self.config.basin_grid,
            "length": self.config.length,
            "max_steps": self.config.max_steps,
        }


def _tag(p: float, q: float) -> str:
    return f"p{p:g}_q{q:g}"


def compute(config: Config) -> Data:
    """The fate map (σ = 0) and the induced-metric portrait of each case."""
    from gradflow import Region, in_metric, portrait

    from .fate import FateConfig, fate_map

    fates, portraits = [], []
    for p, q in CASES:
        fate_config = FateConfig(
            p=p,
            q=q,
            grid=config.grid,
            box=BOX,
            sigma=(0.0,),
            length=config.length,
            max_steps=config.max_steps,
        )
        folder = Path(config.runs) / _tag(p, q) if config.runs else None
        fates.append(fate_map(fate_config, checkpoint=folder))
        full = fate_config.full()
        flows = in_metric(full.reduced.bind(p=p, q=q), full.metric, name="induced")
        region = Region.of(flows, grid=config.basin_grid, box=BOX)
        portraits.append(portrait(flows, region=region))
    return Data(config=config, fates=tuple(fates), portraits=tuple(portraits))


def draw(data: Data, fig: Figure) -> None:
    """One panel per case: induced-metric basins, both separatrices, full fates as markers; the
    legend lists the reduced model's layers in its left column and the full model's fates in its
    right one."""
    from gradflow.systems.fate_markers import draw_fates

    axes = fig.subplots(1, 2)
    for ax, (p, q), fate, result in zip(axes, CASES, data.fates, data.portraits):
        side = ">" if p + q > 1 else "<"
        share = fate.agreement()
        title = (
            f"p = {p:g}, q = {q:g} (p + q {side} 1): agreement "
            f"{100 * share['induced σ=0']:.0f} % induced, "
            f"{100 * share['euclidean σ=0']:.0f} % Euclidean"
        )
        reduced = result.draw(
            ax, layers=("basins", "separatrix", "critical"), title=title, legend=False
        )
        ax.set_title(title, fontsize=10, pad=TITLE_PAD)
        full = draw_fates(ax, fate.ws, fate.es, fate.fate_names()[0], fate.reduced["induced"])
        ax.legend(
            handles=_columns(reduced, full),
            loc="upper center",
            bbox_to_anchor=(0.5, -0.12),
            fontsize=7,
            ncol=2,
        )


TITLE_PAD = 12.0
"""Points between a panel's top edge and its title: the fates on the box's top edge are drawn
unclipped (ringed, 7 points in radius) and would sit on the title."""


def _columns(reduced: list[Any], full: list[Any]) -> list[Any]:
    """Legend handles for two columns: the reduced model's (basins, separatrices, critical sets)
    on the left, the full model's fates on the right, the shorter one padded with blank rows."""
    from matplotlib.lines import Line2D

    left = list({h.get_label(): h for h in reduced}.values())
    rows = max(len(left), len(full))

    def padded(handles: list[Any]) -> list[Any]:
        return handles + [Line2D([], [], ls="", label=" ") for _ in range(rows - len(handles))]

    return padded(left) + padded(full)
