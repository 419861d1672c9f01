"""One two-mixture experiment: a model, a training schedule, a run, its detected stages.

:class:`MixtureSettings` holds every setting of ``gradflow mixture`` (and of the
``two-mixture`` figure, which adds the ``ω`` sweep), :func:`run_experiment` trains the full model
or runs the reduced dynamics and detects the stages, and :class:`MixtureReport` is what it
records: arrays, a JSON-ready summary, a text report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from gradflow import format_table
from gradflow.models.mixture_data import BASES, FILLERS
from gradflow.models.mixture_transformer import COMBINES, READOUTS, MixtureConfig

from .mixture import METHODS, SCHEDULES, MixtureRun, TrainOptions, train, train_reduced
from .mixture_stages import StageTimes, detect_stages

__all__ = ["MixtureReport", "MixtureSettings", "run_experiment"]

MODEL = "two-headed transformer on the two-mixture task (reconstruction), gradflow.models.mixture_transformer"


@dataclass(frozen=True)
class MixtureSettings:
    """The model (:class:`MixtureConfig`, with ``k`` for ``K``) and how it is trained
    (:class:`TrainOptions`).

    Raises:
        GradflowError: whatever :class:`MixtureConfig` or :class:`TrainOptions` reject.
    """

    k: int = field(default=2, metadata={"help": "groups K ≥ 2", "metavar": "K"})
    d: int = field(default=8, metadata={"help": "token dimension d ≥ 2K"})
    m: int = field(default=256, metadata={"help": "ReLU neurons per head m ≥ 1"})
    omega: float = field(
        default=0.05, metadata={"help": "initialization scale ω > 0: weights N(0, ω²/m)"}
    )
    combine: str = field(
        default="difference",
        metadata={
            "choices": COMBINES,
            "help": "how the heads make the logit: F+ − F− (difference), F+ + F− with signed a_r (signed-sum), F+ − F− with W_Q− = −W_Q+, W_K− = W_K+ (tied)",
        },
    )
    readout: str = field(
        default="sqrt",
        metadata={"choices": READOUTS, "help": "neuron sum scale κ = 1/√m (sqrt) or 1/m (mean)"},
    )
    L: int = field(default=3, metadata={"help": "tokens per sample L ≥ 3"})
    filler: str = field(
        default="zero",
        metadata={
            "choices": FILLERS,
            "help": "tokens beyond the third: zero vectors or the three tokens cycled",
        },
    )
    d_head: int | None = field(
        default=None, metadata={"help": "inner dimension of W_Q, W_K (default m)"}
    )
    basis: str = field(
        default="standard",
        metadata={
            "choices": BASES,
            "help": "signal frame U: standard basis vectors or a random orthonormal frame",
        },
    )
    seed: int = field(default=0, metadata={"help": "seed of the initialization and token orders"})
    schedule: str = field(
        default="joint",
        metadata={
            "choices": SCHEDULES,
            "help": "joint, or staged: neurons, then attention, then neurons",
        },
    )
    stage_times: tuple[float, float] | None = field(
        default=None,
        metadata={
            "nargs": 2,
            "metavar": ("T1", "T2"),
            "help": "ends of the first two stages of --schedule staged (default t_max/10, t_max/2)",
        },
    )
    method: str = field(
        default="gd",
        metadata={
            "choices": METHODS,
            "help": "gradient descent (gd) or the gradient flow (flow: adaptive Tsit5, slow past ReLU kinks)",
        },
    )
    t_max: float = field(default=2000.0, metadata={"help": "horizon in flow time units"})
    lr: float = field(
        default=0.1,
        metadata={"help": "descent step η; t_max/(records·η) must be a whole number"},
    )
    records: int = field(default=200, metadata={"help": "recorded states after the initial one"})

    SIZES: ClassVar[tuple[str, ...]] = ("k", "d", "m", "L")
    """The fields that set the memory a run needs."""

    def memory_bytes(self) -> float:
        """Estimated peak memory (float64): two heads of ``m`` neurons and query/key weights on
        ``d``, and the exact population of ``K (K - 1) · 4`` samples of ``L`` tokens with the
        per-sample activations and gradients."""
        d_head = self.d_head if self.d_head is not None else self.m
        params = 2 * (self.m * self.d + self.m + 2 * d_head * self.d)
        samples = 4 * self.k * max(self.k - 1, 1)
        return 8.0 * (20 * params + 20 * samples * self.L * (self.d + self.m + self.L))

    def __post_init__(self) -> None:
        self.model()
        self.options()

    def model(self) -> MixtureConfig:
        """The model's sizes, ``ω``, named options and seed."""
        return MixtureConfig(
            K=self.k,
            d=self.d,
            m=self.m,
            omega=self.omega,
            L=self.L,
            combine=self.combine,
            readout=self.readout,
            d_head=self.d_head,
            filler=self.filler,
            basis=self.basis,
            seed=self.seed,
        )

    def options(self) -> TrainOptions:
        """Schedule, integrator and horizon."""
        return TrainOptions(
            schedule=self.schedule,
            method=self.method,
            t_max=self.t_max,
            lr=self.lr,
            records=self.records,
            stage_times=self.stage_times,
        )


@dataclass(frozen=True)
class MixtureReport:
    """A recorded run and the stage times detected on it."""

    run: MixtureRun
    stages: StageTimes

    def arrays(self) -> dict[str, np.ndarray]:
        """The run's recorded arrays (:meth:`MixtureRun.arrays`)."""
        return self.run.arrays()

    def metadata(self) -> dict[str, Any]:
        """Model, kind, configuration, options, status, stage times, final losses, drift."""
        run = self.run
        return {
            "model": MODEL,
            "kind": run.kind,
            "config": vars(run.config),
            "options": vars(run.options),
            "status": run.status,
            "stages": self.stages.to_dict(),
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
        }

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
