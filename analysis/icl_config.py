"""The settings of ICL-MC training runs, checked without importing JAX.

:class:`RunSpec` (one run) is re-exported by :mod:`.icl_train`, which trains it;
:class:`ICLConfig` (the ``gradflow icl`` options, one run per seed) by :mod:`.icl_experiment`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

from gradflow import GradflowError
from gradflow.models.icl_task import (
    MIXINGS,
    PRIOR_NAMES,
    Dirichlet,
    Prior,
    check_mixing,
    check_sizes,
    parse_prior,
)

__all__ = ["DEFAULT_LR", "MODELS", "ICLConfig", "RunSpec"]

MODELS = ("minimal", "transformer", "reduced")

DEFAULT_LR = {"minimal": 4.0, "transformer": 5e-4, "reduced": 4.0}
"""SGD step of the minimal model, AdamW step of the transformer, GD step (flow time per step) of
the reduced model."""


@dataclass(frozen=True)
class RunSpec:
    """One training run.

    Attributes:
        model: ``minimal``, ``transformer`` or ``reduced``.
        k, T: states and sequence length.
        steps: optimizer steps (reduced: flow time ``lr · steps``).
        prior: training prior.
        seed: PRNG seed (initialization, batches; the evaluation batch has its own fixed seed).
        lr: step size (default per model, :data:`DEFAULT_LR`).
        batch: sequences per step (reduced: sequences in the fixed sample before relabelling).
        eval_every: steps between evaluations.
        eval_n: sequences in the evaluation batch.
        mixing: positional mixing of the minimal/reduced model.
        lags: learnable lags of the minimal/reduced model (default ``T - 1``).
        d: transformer width.
        solver: reduced model only: ``flow`` (diffrax) or ``gd`` (the engine's gradient descent).
    """

    model: str
    k: int = 3
    T: int = 100
    steps: int = 1000
    prior: Prior = field(default_factory=Dirichlet)
    seed: int = 0
    lr: float | None = None
    batch: int = 64
    eval_every: int = 20
    eval_n: int = 512
    mixing: str = "softmax"
    lags: int | None = None
    d: int = 16
    solver: str = "flow"

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise GradflowError(f"unknown model {self.model!r}; choose one of {', '.join(MODELS)}")
        check_sizes(self.k, self.T)
        self.prior.check(self.k)
        check_mixing(self.mixing)
        for name in ("steps", "batch", "eval_every", "eval_n", "d"):
            if getattr(self, name) < 1:
                raise GradflowError(f"{name} = {getattr(self, name)!r} must be ≥ 1")
        if self.lags is not None and not 1 <= self.lags <= self.T - 1:
            raise GradflowError(f"lags = {self.lags!r} must lie in 1 … T-1 = {self.T - 1}")
        if self.lr is not None and not self.lr > 0:
            raise GradflowError(f"lr = {self.lr!r} must be > 0")
        if self.solver not in ("flow", "gd"):
            raise GradflowError(f"solver {self.solver!r}: choose flow or gd")

    @property
    def step_size(self) -> float:
        return DEFAULT_LR[self.model] if self.lr is None else float(self.lr)

    @property
    def n_lags(self) -> int:
        return self.T - 1 if self.lags is None else self.lags


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
