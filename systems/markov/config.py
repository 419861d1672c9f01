"""The settings of the Markov transformer's training runs, reduced-vs-full checks and fate maps.

Plain dataclasses whose checks import no JAX, so that the command line answers ``--help`` and
rejects a bad argument before any model is loaded; :mod:`.training`, :mod:`.compare`
and :mod:`gradflow.systems.fate` re-export them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from gradflow import Estimate, GradflowError, Region

from .costs import fate_estimate, fate_memory, train_estimate
from .ranges import (
    FULL_LENGTH,
    check_attention,
    check_length,
    check_states,
    check_switching,
    check_width,
)

if TYPE_CHECKING:
    from .full_model import MarkovFullModel

__all__ = [
    "FATE_MODELS",
    "FateConfig",
    "INITS",
    "MAX_SEEDS",
    "MAX_STEPS",
    "CompareConfig",
    "TrainConfig",
    "switching_field",
]

INITS = ("standard", "canonical", "paper")
MAX_STEPS = 10_000_000
MAX_SEEDS = 1024


def switching_field(name: str, default: float | None = None) -> Any:
    """The dataclass field of a switching probability ``p`` or ``q`` in ``(0, 1)``: required,
    or with a ``default``."""
    texts = {"p": "P(x_{n+1} = 1 | x_n = 0) in (0, 1)", "q": "P(x_{n+1} = 0 | x_n = 1) in (0, 1)"}
    if default is None:
        return field(metadata={"help": texts[name]})
    return field(default=default, metadata={"help": texts[name]})


@dataclass(frozen=True)
class TrainConfig:
    """One training run (all seeds share it).

    Attributes:
        p, q: switching probabilities in ``(0, 1)``.
        init: ``"standard"``, ``"canonical"`` (``embed(θ0)`` of the canonical model ``L(e, w)``;
            with ``states ≥ 3`` its rank-``(k − 1)`` generalisation,
            :func:`gradflow.systems.markov.states_embedding.states_canonical_init`) or
            ``"paper"`` (the recommended init for ``p + q > 1``, binary only).
        theta0: ``(e, w)`` of the canonical init.
        steps: optimizer steps.
        length: positions ``N`` (sequences of ``N + 1`` symbols).
        d: width.
        seeds: number of independent runs (seeds ``seed0 … seed0 + seeds - 1``).
        seed0: first seed.
        batch: sequences per step.
        lr: peak learning rate.
        weight_decay: AdamW's decoupled weight decay.
        attention: ``"softmax"`` (the paper's) or ``"linear"``.
        eval_every: steps between evaluations (and the length of a compiled chunk).
        eval_batch: sequences of the fixed evaluation set.
        states: number of chain states ``k``; 2 is the binary model, ``k ≥ 3`` the ``k``-state
            model (:mod:`gradflow.systems.markov.states_transformer`) on the chain that leaves
            state 0 with ``p`` and every other state with ``q``, uniformly to the others
            (:func:`gradflow.systems.markov.states.switching_kernel`), standard or canonical
            init (the canonical one needs ``d ≥ k − 1``).

    Raises:
        GradflowError: any setting out of range.
    """

    p: float = switching_field("p")
    q: float = switching_field("q")
    init: Literal["standard", "canonical", "paper"] = field(
        default="standard",
        metadata={
            "choices": INITS,
            "help": "standard N(0, 0.02²), canonical embed(θ0) (with --states K: its rank-(K − 1) "
            "version), or the paper's init for p + q > 1 (binary)",
        },
    )
    theta0: tuple[float, float] = field(
        default=(0.5, 0.5),
        metadata={"nargs": 2, "metavar": ("E", "W"), "help": "(e, w) of the canonical init"},
    )
    steps: int = field(default=500, metadata={"help": "optimizer steps"})
    length: int = field(
        default=64,
        metadata={
            "flag": "--seq-len",
            "metavar": "N",
            "help": "positions per sequence (the paper uses 1024)",
        },
    )
    d: int = field(default=8, metadata={"help": "embedding width"})
    seeds: int = field(default=1, metadata={"help": "independent runs, trained in parallel"})
    seed0: int = field(default=0, metadata={"flag": "--seed", "help": "first seed"})
    batch: int = field(default=16, metadata={"help": "sequences per step"})
    lr: float = field(
        default=2e-3, metadata={"help": "peak learning rate of the cosine one-cycle schedule"}
    )
    weight_decay: float = field(default=1e-3, metadata={"help": "AdamW weight decay"})
    attention: Literal["softmax", "linear"] = field(
        default="softmax", metadata={"choices": ("softmax", "linear"), "help": "attention kind"}
    )
    eval_every: int = field(default=25, metadata={"help": "steps between test-loss evaluations"})
    eval_batch: int = 256
    states: int = field(
        default=2,
        metadata={
            "help": "chain states k; k ≥ 3: the k-state model on the chain leaving state 0 with "
            "p and every other state with q, uniformly to the others (standard or canonical init)"
        },
    )

    SIZES: ClassVar[tuple[str, ...]] = ("length", "batch", "seeds", "d")
    """The fields that set the memory a run needs."""

    def memory_bytes(self) -> float:
        """Estimated peak memory of a run (float32): causal attention scores, softmax and their
        gradients for ``batch × seeds`` sequences, the evaluation batch's forward pass, and the
        activations of width ``5d`` along ``N`` positions."""
        sequences = self.batch * self.seeds
        return (
            4.0 * self.length**2 * (4 * sequences + self.eval_batch)
            + 200.0 * sequences * self.length * self.d
        )

    def estimate(self) -> Estimate:
        """The run's size, rough duration and memory, before anything runs
        (:func:`~gradflow.systems.markov.costs.train_estimate`)."""
        return train_estimate(self, self.memory_bytes())

    def __post_init__(self) -> None:
        check_switching(self.p, self.q)
        if self.init not in INITS:
            raise GradflowError(f"init = {self.init!r} must be one of {', '.join(INITS)}")
        if check_states(self.states) > 2 and self.init == "paper":
            raise GradflowError(
                f"init = 'paper' is the binary model's; with states = {self.states} use the "
                "standard or the canonical (rank-(k − 1)) init"
            )
        check_length(self.length)
        check_width(self.d)
        if self.init == "canonical" and self.d < self.states - 1:
            raise GradflowError(
                f"width d = {self.d} is below k − 1 = {self.states - 1}: the canonical init of "
                f"a {self.states}-state chain needs d ≥ {self.states - 1}"
            )
        check_attention(self.attention)
        for name, value, hi in (
            ("steps", self.steps, MAX_STEPS),
            ("seeds", self.seeds, MAX_SEEDS),
            ("batch", self.batch, 1 << 20),
            ("eval_every", self.eval_every, MAX_STEPS),
            ("eval_batch", self.eval_batch, 1 << 20),
        ):
            if isinstance(value, bool) or int(value) != value or not 1 <= value <= hi:
                raise GradflowError(f"{name} = {value!r} must be an integer in 1…{hi:,}")
        for name, value in (("lr", self.lr), ("weight_decay", self.weight_decay)):
            if not (math.isfinite(value) and value >= 0) or (name == "lr" and value == 0):
                raise GradflowError(
                    f"{name} = {value!r} must be a finite number {'> 0' if name == 'lr' else '≥ 0'}"
                )
        if len(self.theta0) != 2 or not all(math.isfinite(v) for v in self.theta0):
            raise GradflowError(f"theta0 = {self.theta0!r} must be two finite numbers (e, w)")


@dataclass(frozen=True)
class CompareConfig:
    """What :func:`compare` checks.

    Raises:
        GradflowError: ``p`` or ``q`` outside ``(0, 1)``, no points or steps, a length too long
            to enumerate, a bad width.
    """

    p: float = switching_field("p")
    q: float = switching_field("q")
    points: int = field(default=20, metadata={"help": "random reduced points per model"})
    length: int = field(
        default=10,
        metadata={
            "flag": "--seq-len",
            "metavar": "N",
            "help": "positions of the full model, exact enumeration of 2^N sequences, at most 14",
        },
    )
    d: int = field(default=8, metadata={"help": "embedding width"})
    seed: int = field(default=0, metadata={"help": "seed of the random points"})
    theta0: tuple[float, float, float, float] = field(
        default=(0.5, -1.0, 0.0, 0.0),
        metadata={
            "nargs": 4,
            "metavar": ("E", "W", "A", "B"),
            "help": "start of the dynamics check",
        },
    )
    steps: int = field(
        default=2000, metadata={"help": "gradient-descent steps of the dynamics check"}
    )
    lr: float = field(default=0.05, metadata={"help": "gradient-descent step (flow time per step)"})
    dynamics_length: int = field(
        default=FULL_LENGTH,
        metadata={
            "flag": "--dynamics-seq-len",
            "metavar": "N",
            "help": "positions in the dynamics check",
        },
    )
    spectra: bool = field(
        default=False,
        metadata={
            "help": "also give the Morse index of each reduced critical set in the reduced and "
            "in the full model (one Hessian of every full weight per set)"
        },
    )

    def __post_init__(self) -> None:
        check_switching(self.p, self.q)
        if self.points < 1:
            raise GradflowError(f"--points {self.points} must be ≥ 1")
        if self.steps < 1:
            raise GradflowError(f"--steps {self.steps} must be ≥ 1")
        check_length(self.length, exact=True)
        check_length(self.dynamics_length, exact=True)
        check_width(self.d)


FATE_MODELS = ("canonical", "canonical-attention")


def _sigmas(value: Any) -> tuple[float, ...]:
    return tuple(float(v) for v in value)


@dataclass(frozen=True)
class FateConfig:
    """A fate map (module docstring).

    Raises:
        GradflowError: ``p`` or ``q`` outside ``(0, 1)``, an unknown model or attention kind, a
            grid below 2, an empty box, a negative ``σ``, no seeds, a bad length or budget.
    """

    QUICK: ClassVar[dict[str, Any]] = {"grid": 4, "sigma": (0.0,), "seeds": 1}
    """A small map (``gradflow fate --quick``): 16 runs without noise."""

    SIZES: ClassVar[tuple[str, ...]] = ("grid", "sigma", "seeds")
    """The fields that set the memory the map needs."""

    def memory_bytes(self) -> float:
        """The map's peak memory, bytes: its arrays and records per run, its starts and
        predictions per grid point (:func:`~gradflow.systems.markov.costs.fate_memory`)."""
        return fate_memory(self)

    def estimate(self) -> Estimate:
        """The map's size, rough duration and memory, before anything runs
        (:func:`~gradflow.systems.markov.costs.fate_estimate`)."""
        return fate_estimate(self)

    p: float = switching_field("p", 0.5)
    q: float = switching_field("q", 0.8)
    model: str = field(
        default="canonical", metadata={"help": "the reduced model", "choices": FATE_MODELS}
    )
    grid: int = field(default=12, metadata={"help": "grid points per axis (grid × grid runs)"})
    box: tuple[float, float, float, float] = field(
        default=(-2.5, 2.0, 0.1, 1.6),
        metadata={"nargs": 4, "metavar": ("WMIN", "WMAX", "EMIN", "EMAX"), "help": "w and e range"},
    )
    sigma: tuple[float, ...] = field(
        default=(0.0, 0.01, 0.1),
        metadata={"help": "standard deviations of the noise on every full weight, comma-separated"},
    )
    seeds: int = field(default=3, metadata={"help": "noise draws per σ > 0"})
    length: int = field(
        default=FULL_LENGTH, metadata={"help": "positions N of the full model (N ≤ 14)"}
    )
    d: int = field(default=8, metadata={"help": "embedding width of the full model"})
    attention: str = field(
        default="linear",
        metadata={"help": "attention of the full model", "choices": ("linear", "softmax")},
    )
    t_max: float = field(default=300.0, metadata={"help": "flow-time budget of each full run"})
    gtol: float = field(default=1e-6, metadata={"help": "steady state: ‖∇L_full‖ ≤ gtol"})
    max_steps: int = field(
        default=20_000,
        metadata={"help": "solver-step budget of each full run (a run on a ReLU kink spends it)"},
    )
    lr: float = field(
        default=0.02,
        metadata={
            "help": "step η of the gradient descent that trains the runs with noise (σ > 0) for "
            "the first half of the flow-time budget"
        },
    )
    spectra: bool = field(
        default=False,
        metadata={
            "help": "also give the Morse index of each reduced critical set in the reduced and "
            "in the full model (one Hessian of every full weight per set)"
        },
    )

    def __post_init__(self) -> None:
        check_switching(self.p, self.q)
        if self.model not in FATE_MODELS:
            raise GradflowError(f"model = {self.model!r} must be one of {', '.join(FATE_MODELS)}")
        self.region()
        object.__setattr__(self, "sigma", _sigmas(self.sigma))
        if not self.sigma or any(not (s >= 0 and math.isfinite(s)) for s in self.sigma):
            raise GradflowError(f"sigma = {self.sigma} must be finite numbers ≥ 0")
        if self.seeds < 1:
            raise GradflowError(f"seeds = {self.seeds} must be ≥ 1")
        check_length(self.length, exact=True)
        check_width(self.d)
        check_attention(self.attention)
        if isinstance(self.max_steps, bool) or self.max_steps < 1:
            raise GradflowError(f"max_steps = {self.max_steps!r} must be an integer ≥ 1")
        if not (self.t_max > 0 and self.gtol > 0):
            raise GradflowError(f"t_max = {self.t_max} and gtol = {self.gtol} must be > 0")
        if not (0 < self.lr < self.t_max and math.isfinite(self.lr)):
            raise GradflowError(f"lr = {self.lr} must be in (0, t_max = {self.t_max:g})")
        self.full()

    def region(self) -> Region:
        """The grid of initial points: ``grid × grid`` on the ``(w, e)`` plane in ``box``,
        ``a = 0`` for the model with attention.

        Raises:
            GradflowError: a grid below 2 or an empty or non-finite box.
        """
        from gradflow.systems import MODELS

        grid = (self.grid, self.grid)
        return Region(MODELS[self.model].params, ("w", "e"), self.box, grid, {})

    def full(self) -> MarkovFullModel:
        """The full model of the configuration."""
        from .full_model import full_model

        return full_model(self.model, length=self.length, d=self.d, attention=self.attention)

    def runs(self) -> list[tuple[float, int]]:
        """``(σ, seed)`` of every full run batch: one for ``σ = 0``, ``seeds`` for each other."""
        return [(s, k) for s in self.sigma for k in range(1 if s == 0 else self.seeds)]
