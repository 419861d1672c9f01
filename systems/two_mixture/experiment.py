"""One two-mixture experiment: a model, a training schedule, a run, its detected stages.

:class:`MixtureSettings` holds every setting of ``gradflow mixture`` (and of the
``two-mixture`` figure, which adds the ``ω`` sweep), :func:`run_experiment` trains the full model
or runs the reduced dynamics and detects the stages, and :class:`MixtureReport` is what it
records: arrays, a JSON-ready summary, a text report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from gradflow import format_table

from .config import MixtureSettings
from .scores import score_summary
from .stages import StageTimes, detect_stages
from .training import MixtureRun, train, train_reduced

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["MixtureReport", "MixtureSettings", "run_experiment"]

MODEL = "two-headed transformer on the two-mixture task (reconstruction), gradflow.systems.two_mixture.transformer"


@dataclass(frozen=True)
class MixtureReport:
    """A recorded run and the stage times detected on it."""

    run: MixtureRun
    stages: StageTimes

    def arrays(self) -> dict[str, np.ndarray]:
        """The run's recorded arrays (:meth:`MixtureRun.arrays`)."""
        return self.run.arrays()

    def metadata(self) -> dict[str, Any]:
        """Model, kind, configuration, options, status, stage times, final losses, drift, the
        score pattern (:func:`~gradflow.systems.two_mixture.scores.score_summary`)."""
        run = self.run
        return {
            "model": MODEL,
            "kind": run.kind,
            "config": vars(run.config),
            "options": vars(run.options),
            "status": run.status,
            "stages": self.stages.metadata(),
            "final": {
                "t": float(run.ts[-1]),
                "loss": float(run.loss[-1]),
                "loss_hard": float(run.loss_hard[-1]),
                "loss_consistent": float(run.loss_consistent[-1]),
                "max_score": float(abs(run.scores[-1]).max()),
            },
            "max_conservation_drift": float(run.conservation.max())
            if run.conservation.size
            else None,
            "scores": score_summary(run.ts, run.scores, run.config.K),
        }

    def figure(self) -> Figure:
        """A new matplotlib figure of the run (:func:`~gradflow.systems.two_mixture.draw.draw_run`):
        alignment, loss and scores against flow time with the stage times; the ``two-mixture``
        figure adds the attention-stage duration against ``ω``."""
        from matplotlib.figure import Figure

        from .draw import SIZE, draw_run, run_title

        fig = Figure(figsize=SIZE, layout="constrained")
        draw_run(self, fig, fig.add_gridspec(2, 3))
        fig.suptitle(run_title(self))
        return fig

    def text(self) -> str:
        """A heading, the stage times as a table, the final losses and the drift."""
        run, stages, record = self.run, self.stages, self.metadata()
        config, options, final = run.config, run.options, record["final"]
        rows = [
            [
                f"neurons aligned (span cosine ≥ {stages.levels['align_level']:g})",
                _time(stages.t_align),
            ],
            [
                f"attention escapes (max |s| ≥ {stages.levels['score_level']:g})",
                _time(stages.t_attention),
            ],
            [f"fit (loss ≤ {stages.levels['loss_level']:g} nats)", _time(stages.t_fit)],
            ["attention stage duration", _time(stages.attention_duration)],
        ]
        lines = [
            f"two-mixture, {run.kind} model: K = {config.K}, d = {config.d}, m = {config.m}, ω = {config.omega:g}, "
            f"{options.schedule} schedule, {options.method} to t = {run.ts[-1]:g} ({run.status})",
            format_table(["stage", "time"], rows),
            f"final loss {final['loss']:.6f} nats (hard {final['loss_hard']:.6f}, consistent {final['loss_consistent']:.6f})",
        ]
        sc = record["scores"]
        lines.append(
            f"scores |B[v_k', c_k]| between groups {sc['between_group_final']:.3g} against same "
            f"group |B[v_k, c_k]| {sc['same_group_final']:.3g} at the end (between-group peak "
            f"{sc['between_group_peak']:.3g} at t = {sc['between_group_peak_t']:g}); self-score "
            f"spread over groups at most {sc['self_spread_max']:.3g} of the run's max |B| "
            f"(t = {sc['self_spread_max_t']:g})"
        )
        if record["max_conservation_drift"] is not None:
            lines.append(
                f"max drift of W_Q W_Qᵀ − W_K W_Kᵀ (relative): {record['max_conservation_drift']:.3g}"
            )
        return "\n".join(lines)


def _time(value: float) -> str:
    return "not reached" if math.isnan(value) else f"{value:g}"


def run_experiment(
    settings: MixtureSettings, *, reduced: bool = False, progress: bool | None = None
) -> MixtureReport:
    """Train the full model (or, with ``reduced``, run the reduced dynamics); detect the stages."""
    trainer = train_reduced if reduced else train
    run = trainer(settings.model(), settings.options(), progress=progress)
    return MixtureReport(run=run, stages=detect_stages(run))
