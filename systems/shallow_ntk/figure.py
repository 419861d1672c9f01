"""The shallow encoder's NTK against width (Wu et al., NeurIPS 2023): four panels.

(a) ``λ_min(K_0)`` and (b) ``α_0 = σ_min(F_pre)`` against ``d_m`` for each initialization
    (colour) and scaling (line style);
(c) the relative kernel change ``‖K_T - K_0‖_F / ‖K_0‖_F`` after ``T`` GD steps against ``d_m``
    (log-log) with the fitted slopes in the legend;
(d) GD loss curves at each width (solid) against the linearized flow ``df/dt = -K_0 (f - y)``
    (dashed), for one (init, scaling), by default LeCun with ``τ0 = d_m^{-1/2}``.

Values are geometric means over ``seeds`` networks on one synthetic data set
(:func:`gradflow.systems.shallow_ntk.sweep.width_sweep`), every init and scaling.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gradflow import GradflowError

from .config import SweepConfig, seeds_field, steps_field, widths_field
from .scheme import INITS, SCALINGS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .sweep import Sweep

__all__ = ["NAME", "SIZE", "Config", "Data", "compute", "draw"]

NAME = "shallow-ntk"
SIZE = (13.0, 10.0)


@dataclass(frozen=True)
class Config:
    """Settings of the figure: the sweep's widths, steps and seeds, the pair of panel (d).

    Raises:
        GradflowError: a width, step or seed count that is not a positive integer, or ``curves``
            not ``INIT/SCALING``.
    """

    widths: tuple[int, ...] = widths_field()
    steps: int = steps_field()
    seeds: int = seeds_field(2)
    curves: str = field(
        default="lecun/sqrt",
        metadata={
            "help": "the (init, scaling) of panel (d), GD against the linearized flow",
            "metavar": "INIT/SCALING",
        },
    )

    def __post_init__(self) -> None:
        self.sweep()
        init, _, scaling = self.curves.partition("/")
        if init not in INITS or scaling not in SCALINGS:
            raise GradflowError(
                f"--curves {self.curves!r} must be INIT/SCALING with INIT in {', '.join(INITS)} "
                f"and SCALING in {', '.join(SCALINGS)}"
            )

    def sweep(self) -> SweepConfig:
        """The sweep: every init and scaling at these widths, steps and seeds."""
        return SweepConfig(
            widths=self.widths, inits=INITS, scalings=SCALINGS, steps=self.steps, seeds=self.seeds
        )


@dataclass(frozen=True)
class Data:
    """The width sweep behind the four panels."""

    config: Config
    sweep: Sweep

    def arrays(self) -> dict[str, np.ndarray]:
        """One row per run: scalars and loss curves (:meth:`Sweep.arrays`)."""
        return self.sweep.arrays()

    def metadata(self) -> dict[str, Any]:
        """The sweep's configuration, runs and slopes, and the pair of panel (d)."""
        record = self.sweep.metadata()
        return {
            "config": record["config"],
            "curves": self.config.curves,
            "runs": record["runs"],
            "slopes": record["slopes"],
            "source": "Wu et al., On the Convergence of Encoder-only Shallow Transformers (NeurIPS 2023)",
        }


def compute(config: Config) -> Data:
    """Run the width sweep over every init and scaling."""
    from .sweep import width_sweep

    return Data(config=config, sweep=width_sweep(config.sweep()))


def draw(data: Data, fig: Figure) -> None:
    """λ_min(K0), α0 and the kernel change against width; GD against the linearized flow
    (:func:`gradflow.systems.shallow_ntk.draw.draw_sweep`)."""
    from .draw import draw_sweep

    init, _, scaling = data.config.curves.partition("/")
    draw_sweep(data.sweep, fig, init, scaling)
