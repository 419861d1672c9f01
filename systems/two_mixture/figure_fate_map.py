"""Two-mixture (reconstruction): where the infinite-width reduced dynamics predicts finite-width
training of the full transformer, and where not.

One row per ``K``: (a) the attention's escape time against ``ω`` for the limit, its linear
prediction and the full runs of each width; (b) the agreement grid over ``ω × m`` for the
attention trained and frozen, disagreements boxed with their reason; (c) the hard samples' loss
with the attention trained and frozen (:mod:`gradflow.systems.two_mixture.fate_figure`).  The map is
``gradflow fate --model two-mixture``'s (:func:`gradflow.systems.two_mixture.fate.fate_map`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gradflow.systems.fate import FateData

from .config import MixtureFateConfig

if TYPE_CHECKING:
    from matplotlib.figure import Figure


__all__ = ["NAME", "SIZE", "Config", "Data", "compute", "draw"]

NAME = "two-mixture-fate-map"
SIZE = (16.0, 9.8)


@dataclass(frozen=True)
class Config(MixtureFateConfig):
    """The fate map's settings (:class:`~gradflow.systems.two_mixture.config.MixtureFateConfig`).

    Raises:
        GradflowError: whatever the fate map's configuration rejects.
    """


Data = FateData
"""The figure's data: the map (:class:`~gradflow.systems.fate.FateData`)."""


def compute(config: Config) -> Data:
    """Run the fate map."""
    from .fate import fate_map

    return FateData(fate_map(config))


def draw(data: Data, fig: Figure) -> None:
    """The map's picture (:func:`~gradflow.systems.two_mixture.fate_figure.draw_fate`)."""
    from .fate_figure import draw_fate

    draw_fate(data.result, fig)
