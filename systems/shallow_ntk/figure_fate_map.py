"""Where GD on the shallow encoder converges over ``(N, d_m)``, against Wu et al. (NeurIPS 2023).

The fate map of :mod:`gradflow.systems.shallow_ntk.fate` (also ``gradflow fate --model shallow-ntk``):
six panels of outcomes over the sample count ``N`` and the width ``d_m``, one per
initialization (LeCun, He, NTK) and score scaling (``τ0 = d_m^{-1/2}``, ``d_m^{-1}``), each with
the theorem's sufficient width ``d_m = N^α`` and the fitted threshold; then, against ``d_m``,
``λ_min(K_0) / λ_min(K∞)``, the share of the attention blocks in the kernel and the measured and
guaranteed rates (:mod:`gradflow.systems.shallow_ntk.fate_figure` says what each panel shows).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gradflow.systems.fate import FateData

from .config import NtkFateConfig, sample_list, size_field, width_list
from .fate_figure import SIZE

if TYPE_CHECKING:
    from matplotlib.figure import Figure


__all__ = ["NAME", "SIZE", "Config", "Data", "compute", "draw"]

NAME = "shallow-ntk-fate-map"


@dataclass(frozen=True)
class Config:
    """Settings of the figure: the map's grid, draws and budget (the rest as in
    :class:`~gradflow.systems.shallow_ntk.config.NtkFateConfig`).

    Raises:
        GradflowError: a size, width, count or budget that is not a positive integer.
    """

    n_samples: tuple[int, ...] = field(
        default=NtkFateConfig.n_samples,
        metadata={"help": "sample counts N", "parse": sample_list, "metavar": "N1,N2,…"},
    )
    widths: tuple[int, ...] = field(
        default=NtkFateConfig.widths,
        metadata={"help": "widths d_m", "parse": width_list, "metavar": "W1,W2,…"},
    )
    seeds: int = size_field(NtkFateConfig.seeds, "data and network draws per (N, d_m)")
    steps: int = size_field(NtkFateConfig.steps, "GD step budget T", "T")
    d: int = size_field(NtkFateConfig.d, "token dimension d", "D")

    def __post_init__(self) -> None:
        self.fate()

    def fate(self) -> NtkFateConfig:
        """The fate map's configuration."""
        return NtkFateConfig(**dataclasses.asdict(self))


Data = FateData
"""The figure's data: the map (:class:`~gradflow.systems.fate.FateData`)."""


def compute(config: Config) -> Data:
    """Run the fate map."""
    from .fate import fate_map

    return FateData(fate_map(config.fate()))


def draw(data: Data, fig: Figure) -> None:
    """The nine panels (:func:`gradflow.systems.shallow_ntk.fate_figure.draw`)."""
    from .fate_figure import draw as draw_map

    draw_map(data.result, fig)
