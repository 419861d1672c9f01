"""Two-mixture linear classification (ICLR 2025, reconstruction): the stages of training.

Left column: (a) neuron alignment, the mean over each head's neurons of ``|cos(w, c_j)|`` and
``|cos(w, v_j)|`` and the cosine of all neurons with the signal span (the stage criterion);
(b) the population loss with its hard (``ε = -y``) and consistent parts.  Middle: the scores
``s(key, query)`` of head ``+`` for the ``c`` queries (c) and the ``v`` queries (d), and of
head ``-`` (e, f), one colour per key (query index 1 solid, 2 dashed).  The detected stage times
(neurons aligned, attention escape, fit) are vertical lines on every time axis.  Right: (g) the
attention-stage duration against ``ω`` (log axis) with the fitted law ``a ln(1/ω) + b``.

The time panels are one full-model run (gradient descent on the exact population loss); the
``ω`` sweep runs the reduced dynamics, whose descent map is the exact projection of the full one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gradflow import GradflowError

from .config import MixtureSettings

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .experiment import MixtureReport
    from .stages import LogLaw, StageTimes

__all__ = ["NAME", "SIZE", "Config", "Data", "compute", "draw"]

NAME = "two-mixture"
SIZE = (16.0, 13.0)
OMEGAS = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)


@dataclass(frozen=True)
class Config(MixtureSettings):
    """The run's model and schedule (:class:`MixtureSettings`) and the scales of the ``ω`` sweep.

    Raises:
        GradflowError: a bad model or schedule, or fewer than two positive scales.
    """

    omegas: tuple[float, ...] = field(
        default=OMEGAS,
        metadata={"help": "initialization scales of the ω sweep", "metavar": "W1,W2,…"},
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if len(self.omegas) < 2 or not all(np.isfinite(v) and v > 0 for v in self.omegas):
            raise GradflowError(
                f"omegas = {self.omegas!r}: need at least two positive scales, e.g. 1e-3,1e-2,1e-1"
            )


@dataclass(frozen=True)
class Data:
    """The full-model run with its stages, and the ``ω`` sweep with its fitted law."""

    config: Config
    report: MixtureReport
    sweep: tuple[StageTimes, ...]
    law: LogLaw | None

    def arrays(self) -> dict[str, np.ndarray]:
        """The run's arrays, the scales and the sweep's stage times."""
        return {
            **self.report.arrays(),
            "omegas": np.asarray(self.config.omegas),
            **{
                f"sweep_{k}": np.array([getattr(t, k) for t in self.sweep])
                for k in ("t_align", "t_attention", "t_fit")
            },
        }

    def metadata(self) -> dict[str, Any]:
        """The run's record, the stage times per ``ω`` and the fitted law."""
        return {
            **self.report.metadata(),
            "omega_sweep": [t.metadata() for t in self.sweep],
            "log_law": None if self.law is None else vars(self.law),
        }


def compute(config: Config) -> Data:
    """Train the full model; run the reduced dynamics at every ``ω`` of the sweep."""
    from .experiment import run_experiment
    from .stages import omega_sweep

    report = run_experiment(config)
    times, law = omega_sweep(config.model(), config.omegas, config.options())
    return Data(config=config, report=report, sweep=tuple(times), law=law)


def draw(data: Data, fig: Figure) -> None:
    """The run's six panels (:func:`gradflow.systems.two_mixture.draw.draw_run`), the ω law below."""
    from .draw import draw_run, run_title

    grid = fig.add_gridspec(3, 3, height_ratios=(1.0, 1.0, 0.8))
    draw_run(data.report, fig, grid)
    _law_panel(fig.add_subplot(grid[2, :]), np.asarray(data.config.omegas), data.sweep, data.law)
    fig.suptitle(run_title(data.report))


def _law_panel(
    ax: Any, omegas: np.ndarray, times: tuple[StageTimes, ...], law: LogLaw | None
) -> None:
    durations = np.array([t.attention_duration for t in times])
    ax.semilogx(
        omegas, durations, "o", color="black", label="attention stage t_attention − t_align"
    )
    if law is not None:
        grid = np.geomspace(min(omegas), max(omegas), 100)
        ax.semilogx(
            grid,
            law(grid),
            "-",
            color="k",
            lw=1,
            label=f"{law.slope:.1f} ln(1/ω) + {law.intercept:.1f}, R² = {law.r2:.4f}",
        )
    ax.set_xlabel("initialization scale ω")
    ax.set_ylabel("flow time")
    ax.set_title("(g) attention-stage duration vs ω", fontsize=10)
    ax.legend(fontsize=7)
