"""Where the minimal model and its ``(a, b, v)`` reduction predict the induction-head transformer,
over the doubly-stochastic share ``ρ`` × the init scale ``σ`` (``gradflow figures
induction-heads-fate-map``).

The fate map of :mod:`gradflow.systems.induction_heads.fate` (also ``gradflow fate --model
induction-heads``), drawn by :mod:`gradflow.systems.induction_heads.fate_figure`: the transition step and
stage order of each model per cell, mismatches with the transformer marked, the response of
the transition to ``ρ``, the ratio reduction/transformer, and the time in each stage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gradflow.systems.fate import FateData

from .config import ICLFateConfig
from .fate_figure import SIZE

if TYPE_CHECKING:
    from matplotlib.figure import Figure


__all__ = ["NAME", "SIZE", "Config", "Data", "compute", "draw"]

NAME = "induction-heads-fate-map"

Config = ICLFateConfig
"""The figure's settings are the map's (:class:`~gradflow.systems.induction_heads.config.ICLFateConfig`)."""


Data = FateData
"""The figure's data: the map (:class:`~gradflow.systems.fate.FateData`)."""


def compute(config: ICLFateConfig) -> Data:
    """Run the fate map."""
    from .fate import fate_map

    return FateData(fate_map(config))


def draw(data: Data, fig: Figure) -> None:
    """The six panels (:func:`gradflow.systems.induction_heads.fate_figure.draw`)."""
    from .fate_figure import draw as draw_map

    draw_map(data.result, fig)
