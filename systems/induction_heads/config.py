"""The settings of ICL-MC training runs, checked without importing JAX.

:class:`RunSpec` (one run) is re-exported by :mod:`.train`, which trains it;
:class:`ICLConfig` (the ``gradflow icl`` options, one run per seed) by :mod:`.experiment`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

from gradflow import Estimate, GradflowError

from .task import (
    MIXINGS,
    PRIOR_NAMES,
    Dirichlet,
    Prior,
    check_mixing,
    check_sizes,
    doubly_stochastic_mixture,
    parse_prior,
)

__all__ = [
    "DEFAULT_LR",
    "DEFAULT_OPTIMIZER",
    "MODELS",
    "OPTIMIZERS",
    "ICLConfig",
    "ICLFateConfig",
    "RunSpec",
    "check_start",
]

MODELS = ("minimal", "transformer", "reduced")

OPTIMIZERS = ("sgd", "momentum", "adam", "adamw")
"""Trainers of the minimal model and the transformer: plain SGD, SGD with heavy-ball momentum
0.9, Adam and AdamW (betas (0.9, 0.95), AdamW's weight decay 0.1: the paper's transformer
optimizer)."""

DEFAULT_OPTIMIZER = {"minimal": "sgd", "transformer": "adamw"}
"""The optimizer of each trained model: the minimal model's SGD is the gradient flow the
reduction integrates; AdamW is the paper's for the transformer."""

DEFAULT_LR = {"minimal": 4.0, "transformer": 5e-4, "reduced": 4.0}
"""SGD step of the minimal model, AdamW step of the transformer, GD step (flow time per step) of
the reduced model."""


def check_start(init_scale: float | None, a0: float, b0: float) -> None:
    """Raise :class:`GradflowError` unless ``init_scale`` is ``None`` or finite and ``≥ 0`` and
    ``a0``, ``b0`` are finite."""
    if init_scale is not None and not (math.isfinite(init_scale) and init_scale >= 0):
        raise GradflowError(f"init_scale = {init_scale!r} must be a finite number ≥ 0")
    for name, value in (("a0", a0), ("b0", b0)):
        if not math.isfinite(value):
            raise GradflowError(f"{name} = {value!r} must be a finite number")


SOLVERS = ("flow", "gd", "sgd")
"""How the reduced model is run: the engine's flow or gradient descent on a fixed sample, or
SGD on fresh batches."""

STARTS = ("zero", "unigram")
"""Starts of the fate map's minimal model and reduction (:class:`ICLFateConfig`)."""

EVALUATIONS = ("task", "training")
"""Where a run's stages are measured: on the task's sequences (Dirichlet prior) or on its
training prior's."""
RUN_BYTES = 1536
"""Bytes a fate map keeps per run besides its arrays' values: its cell (285 B measured with
``tracemalloc`` around the map's cell list) and six NumPy arrays in a dict."""
TRANSFORMER_STEP_S = 4.8e-3
"""Seconds of a transformer AdamW step at T = 50, batch 32, d = 16: ``gradflow bench
induction-heads`` measures 22–32 steps/s at T = 100, batch 64, and a step's cost grows as
batch × T² (the attention scores)."""
MINIMAL_STEP_S = 2.3e-3
"""Seconds of a minimal-model (or reduction) SGD step at T = 50, batch 64: the benchmark's
104–122 steps/s at T = 100, scaled by T²."""
ICL_FIXED_S = 45.0
"""Seconds of start-up and compilation of a fate map (its three models; the default map took
1 min 48 s cold, about 60 s of it training at the rates above)."""


def check_evaluation(evaluate_on: str) -> None:
    """Raise :class:`GradflowError` unless ``evaluate_on`` is one of :data:`EVALUATIONS`."""
    if evaluate_on not in EVALUATIONS:
        raise GradflowError(
            f"evaluate_on = {evaluate_on!r}: choose one of {', '.join(EVALUATIONS)}"
        )


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
        solver: reduced model only: ``flow`` (diffrax) or ``gd`` (the engine's gradient descent)
            on a fixed sample of ``batch`` sequences, or ``sgd`` (fresh batches of ``batch``,
            the minimal model's).
        init_scale: standard deviation of the Gaussian added to every weight at the start
            (transformer: every matrix and ``r_m`` drawn ``N(0, init_scale²)``, default the
            paper's 0.02; minimal: ``W`` and ``v`` around their standard start, default no
            noise; reduced: the projection of the minimal model's start).
        a0, b0: minimal and reduced models: ``W`` starts at ``a0 I + b0 11ᵀ`` (``a0 = 1``,
            ``b0 = 0`` is the authors' code's start ``W = I``; default 0, 0).
        optimizer: one of :data:`OPTIMIZERS` (default :data:`DEFAULT_OPTIMIZER`); the reduced
            model has none (its ``solver`` integrates the gradient flow).
        evaluate_on: ``task`` (the evaluation batch from the Dirichlet prior, whatever the
            training prior) or ``training`` (from the training prior).
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
    init_scale: float | None = None
    a0: float = 0.0
    b0: float = 0.0
    optimizer: str | None = None
    evaluate_on: str = "task"

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
        if self.solver not in SOLVERS:
            raise GradflowError(f"solver {self.solver!r}: choose one of {', '.join(SOLVERS)}")
        check_start(self.init_scale, self.a0, self.b0)
        check_evaluation(self.evaluate_on)
        if self.optimizer is not None:
            if self.model == "reduced":
                raise GradflowError(
                    f"optimizer {self.optimizer!r}: the reduced model integrates the gradient "
                    "flow (choose its --solver)"
                )
            if self.optimizer not in OPTIMIZERS:
                raise GradflowError(
                    f"unknown optimizer {self.optimizer!r}; choose one of {', '.join(OPTIMIZERS)}"
                )
            if self.lr is None and self.optimizer != DEFAULT_OPTIMIZER[self.model]:
                raise GradflowError(
                    f"optimizer {self.optimizer!r} for the {self.model}: give its lr (the default "
                    f"{DEFAULT_LR[self.model]:g} is {DEFAULT_OPTIMIZER[self.model]}'s)"
                )

    @property
    def trainer(self) -> str:
        """The optimizer that trains the model (reduced: its ``solver``)."""
        if self.model == "reduced":
            return self.solver
        return self.optimizer if self.optimizer is not None else DEFAULT_OPTIMIZER[self.model]

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
    solver: str = field(
        default="flow",
        metadata={
            "help": "reduced: flow (diffrax) or gd on a fixed sample of --batch sequences, or "
            "sgd (fresh batches, the minimal model's)"
        },
    )
    d: int = field(default=16, metadata={"help": "transformer width"})
    init_scale: float | None = field(
        default=None,
        metadata={
            "help": "standard deviation of the Gaussian added to every weight at the start "
            "(default: transformer 0.02, minimal/reduced none)"
        },
    )
    a0: float = field(
        default=0.0,
        metadata={"help": "minimal/reduced: W starts at a0·I + b0·11ᵀ (the authors' code: a0 = 1)"},
    )
    b0: float = field(default=0.0, metadata={"help": "minimal/reduced: see --a0"})
    optimizer: str | None = field(
        default=None,
        metadata={
            "help": f"minimal/transformer: {' | '.join(OPTIMIZERS)} (default: minimal sgd, "
            "transformer adamw)"
        },
    )
    evaluate_on: str = field(
        default="task",
        metadata={
            "help": "the evaluation batch: task (Dirichlet sequences) or training (the "
            "training prior's)",
            "choices": EVALUATIONS,
        },
    )

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
                init_scale=self.init_scale,
                a0=self.a0,
                b0=self.b0,
                optimizer=self.optimizer,
                evaluate_on=self.evaluate_on,
            )
            for seed in range(self.seeds)
        ]


@dataclass(frozen=True)
class ICLFateConfig:
    """The fate map of the induction-head task (``gradflow fate --model induction-heads``).

    A grid of doubly-stochastic shares ``ρ`` (the training prior ``mixture:ρ``: a share ``ρ`` of
    sequences from doubly-stochastic matrices, the rest Dirichlet, so ``ρ`` removes the
    unigram signal and leaves the bigram task) × init scales ``σ`` (every weight of every model
    drawn with standard deviation ``σ``), ``seeds`` runs per cell and model.  The defaults are
    CPU-sized (T = 50, transformer batch 32 and lr 1e-3 for 1000 steps, where the paper has
    T = 100, batch 64, lr 5e-4 and ≈ 2000 steps): the transformer still passes uniform →
    unigram → bigram with a plateau, in half the paper's steps.

    Raises:
        GradflowError: a share outside ``[0, 1]``, a repeated share or scale, a scale that is
            not a finite number ``> 0``, a size or budget below 1, a ``k`` the
            doubly-stochastic prior cannot sample.
    """

    QUICK: ClassVar[dict[str, Any]] = {
        "T": 32,
        "shares": (0.0, 1.0),
        "scales": (0.02,),
        "transformer_steps": 400,
        "transformer_lr": 3e-3,
        "minimal_steps": 150,
        "eval_n": 64,
        "evaluations": 30,
    }
    """A small map (``--quick``): T = 32, shares 0 and 1 at the paper's init scale, runs just
    long enough to reach bigram.  Measured (seed 0): the transformer passes uniform → unigram →
    bigram at ρ = 0 (transition at step 299 of 400) and uniform → bigram at ρ = 1 (169); the
    minimal model and its reduction reach bigram at steps 100 and 130 of 150.  With T = 16 and
    40 steps (the earlier quick map) no run reached bigram; at T = 16 even 300 transformer
    steps at lr 3·10⁻³ left ρ = 0 in the unigram stage, bigram statistics from 16 tokens being
    too noisy to pay."""

    k: int = field(default=3, metadata={"help": "number of states"})
    T: int = field(default=50, metadata={"help": "tokens per sequence"})
    shares: tuple[float, ...] = field(
        default=(0.0, 0.5, 1.0),
        metadata={"help": "doubly-stochastic shares ρ of the training prior, comma-separated"},
    )
    scales: tuple[float, ...] = field(
        default=(0.02, 0.05, 0.1),
        metadata={"help": "init scales σ (standard deviation of every weight), comma-separated"},
    )
    seeds: int = field(default=1, metadata={"help": "seeds per cell and model"})
    transformer_steps: int = field(default=1000, metadata={"help": "transformer AdamW steps"})
    transformer_lr: float = field(default=1e-3, metadata={"help": "transformer AdamW step"})
    transformer_batch: int = field(default=32, metadata={"help": "transformer sequences per step"})
    d: int = field(default=16, metadata={"help": "transformer width"})
    minimal_steps: int = field(default=300, metadata={"help": "minimal-model SGD steps"})
    minimal_lr: float = field(
        default=4.0, metadata={"help": "minimal-model SGD step (the reduction's GD step)"}
    )
    minimal_batch: int = field(default=64, metadata={"help": "minimal-model sequences per step"})
    reduced_solver: str = field(
        default="sgd",
        metadata={
            "help": "reduction: sgd (the minimal model's batches and steps) or gd (gradient "
            "descent on a fixed sample of --reduced-n sequences)",
            "choices": ("sgd", "gd"),
        },
    )
    reduced_n: int = field(
        default=256,
        metadata={"help": "reduction with --reduced-solver gd: sequences in its fixed sample"},
    )
    lags: int | None = field(
        default=None, metadata={"help": "minimal model and reduction: learnable lags (default T-1)"}
    )
    eval_n: int = field(default=256, metadata={"help": "sequences of the evaluation batch"})
    evaluations: int = field(default=50, metadata={"help": "evaluations per run"})
    evaluate_on: str = field(
        default="task",
        metadata={
            "help": "where the stages are measured: task (Dirichlet sequences, the paper's "
            "task) or training (each run's training prior)",
            "choices": EVALUATIONS,
        },
    )
    start: str = field(
        default="zero",
        metadata={
            "help": "start of the minimal model and its reduction: zero (W = 0, v = 0, the "
            "paper's) or unigram (W = b*·11ᵀ, the unigram stage already fitted by b alone)",
            "choices": STARTS,
        },
    )

    SIZES: ClassVar[tuple[str, ...]] = (
        "shares",
        "scales",
        "seeds",
        "evaluations",
        "k",
        "T",
        "transformer_batch",
        "minimal_batch",
        "reduced_n",
        "d",
    )
    """The fields that set the memory the map needs."""

    def points(self) -> int:
        """Grid points ``(ρ, σ, seed)``: three runs each (transformer, minimal, reduction)."""
        return len(self.shares) * len(self.scales) * self.seeds

    def memory_bytes(self) -> float:
        """The largest of its runs' estimates (:meth:`ICLConfig.memory_bytes`: the map trains
        one run at a time), plus what the map keeps: per run 10 float64 per evaluation (its
        step, three distances, test loss, ``(a, b, v)``, off-family share, lag-1 mass) and
        :data:`RUN_BYTES` of cell and arrays, per point its four comparisons
        (:data:`~gradflow.systems.fate.COMPARISON_BYTES` each)."""
        from gradflow.systems.fate import COMPARISON_BYTES

        sizes = dict(k=self.k, T=self.T, d=self.d)
        run = max(
            ICLConfig(model="transformer", batch=self.transformer_batch, **sizes).memory_bytes(),
            ICLConfig(model="minimal", batch=self.minimal_batch, **sizes).memory_bytes(),
            ICLConfig(model="reduced", batch=self.reduced_n, **sizes).memory_bytes(),
        )
        kept = 3 * (8.0 * 10 * (self.evaluations + 1) + RUN_BYTES) + 4 * COMPARISON_BYTES
        return run + self.points() * kept

    def step_seconds(self) -> tuple[float, float]:
        """Estimated seconds of a transformer step and of a minimal-model (or reduced) step:
        :data:`TRANSFORMER_STEP_S` and :data:`MINIMAL_STEP_S` scaled by batch and ``T²``."""
        scale = (self.T / 50) ** 2
        return (
            TRANSFORMER_STEP_S * self.transformer_batch / 32 * scale,
            MINIMAL_STEP_S * self.minimal_batch / 64 * scale,
        )

    def run_seconds(self, model: str) -> float:
        """Estimated seconds of one run of ``model`` (``transformer``, ``minimal``,
        ``reduced``): its steps at :meth:`step_seconds`' rates."""
        transformer, minimal = self.step_seconds()
        if model == "transformer":
            return self.transformer_steps * transformer
        return self.minimal_steps * minimal

    def estimate(self) -> Estimate:
        """The map's size, rough duration (:data:`TRANSFORMER_STEP_S` and
        :data:`MINIMAL_STEP_S` per step, scaled by batch and ``T``; :data:`ICL_FIXED_S` to
        start) and memory."""
        transformer, minimal = self.step_seconds()
        per_point = sum(self.run_seconds(model) for model in ("transformer", "minimal", "reduced"))
        points = self.points()
        return Estimate(
            size=f"{3 * points:,} runs ({points:,} points ρ × σ × seed, each the transformer's "
            f"{self.transformer_steps:,} steps and the minimal model's and the reduction's "
            f"{self.minimal_steps:,})",
            seconds=ICL_FIXED_S + points * per_point,
            basis=f"{transformer * 1e3:.2g} ms a transformer step, {minimal * 1e3:.2g} ms a "
            f"minimal or reduced step at T = {self.T}, and {ICL_FIXED_S:g} s to start",
            memory=self.memory_bytes(),
        )

    def __post_init__(self) -> None:
        object.__setattr__(self, "shares", tuple(float(r) for r in self.shares))
        object.__setattr__(self, "scales", tuple(float(s) for s in self.scales))
        if not self.shares or not self.scales:
            raise GradflowError("the map needs at least one share and one init scale")
        for name in ("shares", "scales"):
            values = getattr(self, name)
            if len(set(values)) != len(values):
                raise GradflowError(f"{name} = {values}: each value once")
        for rho in self.shares:
            doubly_stochastic_mixture(rho).check(self.k)
        for sigma in self.scales:
            if not (math.isfinite(sigma) and sigma > 0):
                raise GradflowError(f"init scale {sigma!r} must be a finite number > 0")
        for name in ("transformer_lr", "minimal_lr"):
            if not getattr(self, name) > 0:
                raise GradflowError(f"{name} = {getattr(self, name)!r} must be > 0")
        for name in ("seeds", "reduced_n", "evaluations"):
            if getattr(self, name) < 1:
                raise GradflowError(f"{name} = {getattr(self, name)!r} must be ≥ 1")
        if self.reduced_solver not in ("sgd", "gd"):
            raise GradflowError(f"reduced_solver = {self.reduced_solver!r}: choose sgd or gd")
        if self.start not in STARTS:
            raise GradflowError(f"start = {self.start!r}: choose one of {', '.join(STARTS)}")
        self.specs(self.shares[0], self.scales[0], 0)

    def specs(self, rho: float, sigma: float, seed: int) -> dict[str, RunSpec]:
        """The three runs of one cell and seed, by model: the transformer (AdamW), the minimal
        model (SGD) and its reduction (SGD on the minimal model's batches, or GD on a fixed
        sample, with the minimal model's step, started at the projection of its start).  With ``start = "unigram"``
        the minimal model's and the reduction's ``b0`` is set by the run
        (:func:`gradflow.systems.induction_heads.fate.run_cell`), which computes ``b*``.

        Raises:
            GradflowError: a size or budget out of range.
        """
        common = dict(
            k=self.k,
            T=self.T,
            prior=doubly_stochastic_mixture(rho),
            seed=seed,
            eval_n=self.eval_n,
            init_scale=sigma,
            evaluate_on=self.evaluate_on,
        )
        minimal = dict(
            common,
            steps=self.minimal_steps,
            lr=self.minimal_lr,
            eval_every=max(1, self.minimal_steps // self.evaluations),
            lags=self.lags,
        )
        return {
            "transformer": RunSpec(
                model="transformer",
                steps=self.transformer_steps,
                lr=self.transformer_lr,
                batch=self.transformer_batch,
                eval_every=max(1, self.transformer_steps // self.evaluations),
                d=self.d,
                **common,
            ),
            "minimal": RunSpec(model="minimal", batch=self.minimal_batch, **minimal),
            "reduced": RunSpec(
                model="reduced",
                batch=self.minimal_batch if self.reduced_solver == "sgd" else self.reduced_n,
                solver=self.reduced_solver,
                **minimal,
            ),
        }
