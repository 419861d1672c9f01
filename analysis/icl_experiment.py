"""One ICL-MC experiment (``gradflow icl``): seeds of one model trained, and their phases.

:class:`ICLConfig` holds the settings (defaults that depend on the model are filled in by
:meth:`ICLConfig.specs`), :func:`run_experiment` trains every seed and :class:`ICLReport` holds
the histories with their phases: arrays (every seed's history under ``seed{i}_``), a JSON-ready
record and a text report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from gradflow import GradflowError, format_table
from gradflow.models.icl_data import PRIOR_NAMES, parse_prior
from gradflow.models.icl_minimal import MIXINGS
from gradflow.models.icl_strategies import STRATEGY_NAMES

from .icl_phases import Phases, phases
from .icl_train import MODELS, History, RunSpec, train

__all__ = ["ICLConfig", "ICLReport", "run_experiment"]


@dataclass(frozen=True)
class ICLConfig:
    """What to train: a model, the task's sizes, the prior, seeds ``0 … seeds - 1``.

    ``None`` means the model's default: steps 400 (transformer 2000), batch 64 (reduced 256),
    ``eval_every`` ``steps/50``, ``lr`` and ``lags`` as in :class:`RunSpec`.

    Raises:
        GradflowError: an unknown model, prior or mixing, no seeds, any size out of range.
    """

    model: str = field(default="minimal", metadata={"help": " | ".join(MODELS)})
    k: int = field(default=3, metadata={"help": "number of states, ≥ 2"})
    T: int = field(default=100, metadata={"help": "tokens per sequence, ≥ 2"})
    steps: int | None = field(
        default=None,
        metadata={"help": "training steps (default: minimal/reduced 400, transformer 2000)"},
    )
    prior: str = field(
        default="dirichlet",
        metadata={
            "help": f"training prior: {' | '.join(PRIOR_NAMES)} (RHO = share of doubly-stochastic sequences)"
        },
    )
    seeds: int = field(default=1, metadata={"help": "number of seeds 0 … K-1"})
    lr: float | None = field(
        default=None,
        metadata={
            "help": "step size (default: minimal 4 (SGD), transformer 5e-4 (AdamW), reduced 4 (flow time per step))"
        },
    )
    batch: int | None = field(
        default=None,
        metadata={
            "help": "sequences per step (default 64); reduced: sequences in its fixed sample before the k! relabellings (default 256)"
        },
    )
    eval_every: int | None = field(
        default=None, metadata={"help": "steps between evaluations (default steps/50)"}
    )
    mixing: str = field(
        default="softmax",
        metadata={"help": f"minimal/reduced positional mixing: {' | '.join(MIXINGS)}"},
    )
    lags: int | None = field(
        default=None, metadata={"help": "minimal/reduced: learnable lags (default T-1)"}
    )
    solver: str = field(default="flow", metadata={"help": "reduced: flow (diffrax) or gd"})
    d: int = field(default=16, metadata={"help": "transformer width"})

    SIZES: ClassVar[tuple[str, ...]] = ("k", "T", "batch", "d")
    """The fields that set the memory a run needs."""

    def memory_bytes(self) -> float:
        """Estimated peak memory (float64): the batch's ``k × k`` transition matrices, its
        one-hot sequences, ``T × T`` attention or positional mixing with gradients, and for the
        reduced model its sample relabelled by all ``k!`` permutations."""
        batch = self.batch if self.batch is not None else 64
        per_sequence = (
            24.0 * self.k**2 + 64.0 * self.T * self.k + 96.0 * self.T**2 + 64.0 * self.T * self.d
        )
        total = batch * per_sequence
        if self.model == "reduced":
            total += batch * math.exp(math.lgamma(self.k + 1)) * self.T * 8.0
        return total

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise GradflowError(f"unknown model {self.model!r}; choose one of {', '.join(MODELS)}")
        if self.seeds < 1:
            raise GradflowError(f"--seeds {self.seeds}: need at least 1 seed")
        self.specs()

    def specs(self) -> list[RunSpec]:
        """One :class:`RunSpec` per seed, the model's defaults filled in."""
        steps = (
            self.steps if self.steps is not None else (2000 if self.model == "transformer" else 400)
        )
        every = self.eval_every if self.eval_every is not None else max(1, steps // 50)
        batch = self.batch if self.batch is not None else (256 if self.model == "reduced" else 64)
        prior = parse_prior(self.prior)
        return [
            RunSpec(
                model=self.model,
                k=self.k,
                T=self.T,
                steps=steps,
                prior=prior,
                seed=seed,
                lr=self.lr,
                batch=batch,
                eval_every=every,
                mixing=self.mixing,
                lags=self.lags,
                d=self.d,
                solver=self.solver,
            )
            for seed in range(self.seeds)
        ]


@dataclass(frozen=True)
class ICLReport:
    """The trained seeds: their specs, histories and phases (in seed order)."""

    config: ICLConfig
    specs: tuple[RunSpec, ...]
    histories: tuple[History, ...]

    @property
    def phases(self) -> tuple[Phases, ...]:
        """Each seed's phases (from its distances averaged over positions)."""
        return tuple(phases(h.steps, h.distance_mean) for h in self.histories)

    def arrays(self) -> dict[str, np.ndarray]:
        """Every seed's history (:meth:`History.arrays`) under ``seed{i}_``."""
        out: dict[str, np.ndarray] = {}
        for spec, history in zip(self.specs, self.histories):
            out.update(history.arrays(prefix=f"seed{spec.seed}_"))
        return out

    def metadata(self) -> dict[str, Any]:
        """The setting, one record per seed (phases, final test loss and distances), and the
        mean ± std of the transition step and plateau length over the seeds that have one."""
        spec = self.specs[0]
        setting = {
            "model": spec.model,
            "k": spec.k,
            "T": spec.T,
            "steps": spec.steps,
            "prior": self.config.prior,
            "lr": spec.step_size,
            "batch": spec.batch,
            "eval_every": spec.eval_every,
            "eval_n": spec.eval_n,
            "seeds": len(self.specs),
            **(
                {"mixing": spec.mixing, "lags": spec.n_lags}
                if spec.model != "transformer"
                else {"d": spec.d}
            ),
            **({"solver": spec.solver} if spec.model == "reduced" else {}),
        }
        records = [
            _seed_record(s.seed, ph, h) for s, ph, h in zip(self.specs, self.phases, self.histories)
        ]
        return {
            "setting": setting,
            "runs": records,
            "transition_step": _summary([r["phases"]["transition_step"] for r in records]),
            "plateau_length": _summary([r["phases"]["plateau_length"] for r in records]),
        }

    def text(self) -> str:
        """A heading, one table row per seed, the mean transition step and plateau length."""
        spec, record = self.specs[0], self.metadata()
        rows = []
        for r in record["runs"]:
            ph = r["phases"]
            rows.append(
                [
                    r["seed"],
                    " → ".join(f"{m} [{a:g}, {b:g}]" for m, a, b in ph["intervals"]),
                    "—" if ph["transition_step"] is None else f"{ph['transition_step']:g}",
                    "censored" if ph["plateau_length"] is None else f"{ph['plateau_length']:g}",
                    f"{r['final_test_loss']['mean']:.4f}",
                    *(f"{r['final_distance'][m]['mean']:.4f}" for m in STRATEGY_NAMES),
                ]
            )
        header = ["seed", "phases", "transition", "plateau", "test loss", *STRATEGY_NAMES]
        lines = [
            f"gradflow icl: {spec.model}, k = {spec.k}, T = {spec.T}, {spec.steps} steps, prior {self.config.prior}, "
            f"{len(self.specs)} seed(s); distances E KL(strategy ‖ model) averaged over positions, nats",
            format_table(header, rows),
        ]
        for name in ("transition_step", "plateau_length"):
            s = record[name]
            if s["runs"]:
                lines.append(
                    f"{name.replace('_', ' ')}: {s['mean']:.1f} ± {s['std']:.1f} steps over {s['runs']} run(s)"
                )
        return "\n".join(lines)


def _seed_record(seed: int, ph: Phases, history: History) -> dict[str, Any]:
    """One seed: its phases, final test loss and distances (last position, and mean)."""
    return {
        "seed": seed,
        "phases": ph.to_dict(),
        "final_test_loss": {
            "last": float(history.test_last[-1]),
            "mean": float(history.test_mean[-1]),
        },
        "final_distance": {
            m: {
                "last": float(history.distance_last[-1, i]),
                "mean": float(history.distance_mean[-1, i]),
            }
            for i, m in enumerate(STRATEGY_NAMES)
        },
    }


def _summary(values: list[float | None]) -> dict[str, float | int | None]:
    """Mean, standard deviation and count of the known values."""
    known = [v for v in values if v is not None]
    return {
        "mean": float(np.mean(known)) if known else None,
        "std": float(np.std(known)) if known else None,
        "runs": len(known),
    }


def run_experiment(config: ICLConfig, *, progress: bool | None = None) -> ICLReport:
    """Train every seed of ``config`` (progress bars on stderr as ``progress`` says).

    Raises:
        GradflowError: a run diverged (non-finite predictions).
    """
    specs = tuple(config.specs())
    histories = tuple(train(spec, progress=progress) for spec in specs)
    return ICLReport(config=config, specs=specs, histories=histories)
