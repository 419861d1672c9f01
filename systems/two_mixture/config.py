"""How a two-mixture run is set up and integrated, checked without JAX.

:class:`TrainOptions` (schedule, integrator, horizon) is re-exported by :mod:`.training`, which
runs it; :class:`MixtureSettings` (the model and its training, one option per field) by
:mod:`.experiment`.  The command line builds its options and checks them from this module
before JAX is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from gradflow import Estimate, GradflowError

from .data import BASES, FILLERS
from .model_config import COMBINES, NEURONS, READOUTS, MixtureConfig

__all__ = ["METHODS", "SCHEDULES", "MixtureFateConfig", "MixtureSettings", "TrainOptions"]

SCHEDULES = ("joint", "staged", "frozen")
"""Training schedules: all weights at once; neurons → attention → neurons; or the neurons alone
with the attention frozen at its initialization."""

METHODS = ("gd", "flow")
"""Integrators: gradient descent with step ``lr``, or the gradient flow (adaptive Tsit5)."""

STEP_S = 1.0e-7
"""Seconds of a fate map's descent step per neuron and per sample (a full run is padded to the
map's widest width, a limit run has ``particles`` neurons, ``K`` groups have ``4K(K - 1)``
samples): ``gradflow fate --model two-mixture --quick --omegas 0.01,0.02,0.05,0.1`` run after
the quick map, its programs compiled, took 1.9 s for 1.5·10⁷ step-neuron-samples on 2 busy
cores (load 9): 1.3·10⁻⁷; the default map's 82 s on quiet cores give 0.6–0.9·10⁻⁷."""
COMPILE_S = 20.0
"""Seconds of start-up and compilation per ``K`` of a fate map (the quick map, one ``K``, took
27 s cold on busy cores)."""


@dataclass(frozen=True)
class TrainOptions:
    """How a run is integrated.

    Attributes:
        schedule: ``"joint"``, ``"staged"`` or ``"frozen"`` (:data:`SCHEDULES`).
        method: ``"gd"`` or ``"flow"``.
        t_max: flow-time horizon (time units of the gradient flow; ``t_max/lr`` descent steps).
        lr: descent step ``η`` (``method = "gd"``).
        records: recorded states, evenly spaced in time, besides the initial one.
        stage_times: ``(t_1, t_2)`` of the staged schedule; default the record times nearest
            ``(t_max/10, t_max/2)``.  Each must lie on the record grid.
        rtol, atol: tolerances of the flow's step-size controller (``method = "flow"``).
        max_steps: solver-step budget per record interval (``method = "flow"``).

    Raises:
        GradflowError: an unknown schedule or method, non-positive ``t_max``, ``lr`` or
            ``records``, a horizon that is not a whole number of descent steps per record, or
            stage times off the record grid or out of order.
    """

    schedule: str = "joint"
    method: str = "gd"
    t_max: float = 2000.0
    lr: float = 0.1
    records: int = 200
    stage_times: tuple[float, float] | None = None
    rtol: float = 1e-7
    atol: float = 1e-10
    max_steps: int = 200_000

    def __post_init__(self) -> None:
        if self.schedule not in SCHEDULES:
            raise GradflowError(
                f"schedule = {self.schedule!r} is not one of {', '.join(SCHEDULES)}"
            )
        if self.method not in METHODS:
            raise GradflowError(f"method = {self.method!r} is not one of {', '.join(METHODS)}")
        for name in ("t_max", "lr"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value > 0):
                raise GradflowError(f"{name} = {value!r} must be > 0")
        if int(self.records) != self.records or self.records < 1:
            raise GradflowError(f"records = {self.records!r} must be an integer ≥ 1")
        if self.method == "gd":
            self.steps_per_record()
        if self.schedule == "staged" or self.stage_times is not None:
            t1, t2 = self.boundaries()
            grid = self.t_max / self.records
            for t in (t1, t2):
                if abs(t / grid - round(t / grid)) > 1e-9:
                    raise GradflowError(
                        f"stage time {t!r} is not on the record grid (multiples of {grid:g})"
                    )
            if not 0 < t1 < t2 < self.t_max:
                raise GradflowError(
                    f"stage_times = ({t1!r}, {t2!r}) need 0 < t_1 < t_2 < t_max = {self.t_max!r}"
                )

    def steps_per_record(self) -> int:
        """Descent steps between two records, ``t_max / (records · lr)``, an integer."""
        ratio = self.t_max / (self.records * self.lr)
        if ratio < 1 - 1e-9 or abs(ratio - round(ratio)) > 1e-6:
            raise GradflowError(
                f"t_max/(records·lr) = {ratio:g} must be a whole number ≥ 1 of descent steps per record; "
                f"adjust --t-max, --lr or --records"
            )
        return int(round(ratio))

    def boundaries(self) -> tuple[float, float]:
        """``(t_1, t_2)``: the ends of the first two stages of the staged schedule; by default the
        record-grid points nearest ``t_max/10`` and ``t_max/2``."""
        if self.stage_times is not None:
            return tuple(float(t) for t in self.stage_times)
        grid = self.t_max / self.records
        return grid * max(1, round(self.records / 10)), grid * round(self.records / 2)

    def segments(self) -> list[tuple[int, int, tuple[bool, bool]]]:
        """``(first record, last record, (attention, neurons))`` of each stage."""
        if self.schedule in ("joint", "frozen"):
            return [(0, self.records, (self.schedule == "joint", True))]
        grid = self.t_max / self.records
        r1, r2 = (int(round(t / grid)) for t in self.boundaries())
        return [(0, r1, (False, True)), (r1, r2, (True, False)), (r2, self.records, (False, True))]


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
    neurons: str = field(
        default="average",
        metadata={
            "choices": NEURONS,
            "help": "what the neurons read: the attention output averaged over queries, "
            "ReLU(⟨w, Σ α_i x_i⟩) (average), or every token alone, Σ α_i ReLU(⟨w, x_i⟩) (tokens)",
        },
    )
    L: int = field(default=3, metadata={"help": "tokens per sample L ≥ 3"})
    filler: str = field(
        default="zero",
        metadata={
            "choices": FILLERS,
            "help": "tokens beyond the third: zero vectors, the three tokens cycled, or "
            "distractors (each position its own ε_j v_k'_j, every choice enumerated)",
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
            "help": "joint; staged: neurons, then attention, then neurons; frozen: the neurons "
            "alone, attention frozen at its initialization",
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
            neurons=self.neurons,
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


def _positive_tuple(name: str, values: tuple, integer: bool = False) -> None:
    """Raise unless ``values`` is a non-empty tuple of distinct positive numbers (integers)."""
    bad = [v for v in values if not (np.isfinite(v) and v > 0 and (not integer or int(v) == v))]
    if not values or bad or len(set(values)) != len(values):
        kind = "integers ≥ 1" if integer else "numbers > 0"
        raise GradflowError(f"{name} = {values!r}: need distinct {kind}, at least one")


@dataclass(frozen=True)
class MixtureFateConfig:
    """The two-mixture fate map: finite-width training of the full transformer against the
    infinite-width reduced dynamics, over ``K × ω × m`` (:mod:`gradflow.systems.two_mixture.fate`).

    Raises:
        GradflowError: a ``K < 2``, a non-positive ``ω`` or width, an unknown option value, a
            quadrature size that is not a power of two ``≥ 8``, a horizon that is not a whole
            number of records of whole descent steps, levels or a band out of range.
    """

    QUICK: ClassVar[dict[str, Any]] = {
        "ks": (2,),
        "omegas": (1e-2, 1e-1),
        "widths": (4, 64),
        "particles": 64,
        "t_max": 600.0,
        "records": 60,
    }
    """A small map (``gradflow fate --model two-mixture --quick``): 8 finite runs, 4 limit runs."""

    ks: tuple[int, ...] = field(
        default=(2, 3), metadata={"flag": "--k", "metavar": "K1,K2", "help": "groups K ≥ 2"}
    )
    omegas: tuple[float, ...] = field(
        default=(1e-3, 1e-2, 1e-1),
        metadata={"metavar": "W1,W2,…", "help": "initialization scales ω: weights N(0, ω²/m)"},
    )
    widths: tuple[int, ...] = field(
        default=(4, 16, 64, 256),
        metadata={
            "metavar": "M1,M2,…",
            "help": "neurons per head m (and d_head = m) of the full runs",
        },
    )
    particles: int = field(
        default=256,
        metadata={
            "help": "quadrature points per head of the infinite-width neuron law, a power of two"
        },
    )
    neurons: str = field(
        default="average",
        metadata={
            "choices": NEURONS,
            "help": "what the neurons read: ReLU(⟨w, Σ α_i x_i⟩) (average, the default model) "
            "or Σ α_i ReLU(⟨w, x_i⟩) (tokens)",
        },
    )
    combine: str = field(
        default="difference", metadata={"choices": COMBINES, "help": "how the heads make the logit"}
    )
    t_max: float = field(default=1500.0, metadata={"help": "horizon in flow time units"})
    lr: float = field(
        default=0.5, metadata={"help": "descent step η of every run (flow time per step)"}
    )
    records: int = field(default=150, metadata={"help": "recorded states after the initial one"})
    escape_level: float = field(
        default=0.1,
        metadata={
            "help": "the attention has escaped when max |B| reaches it (≪ 1: where the linear "
            "escape still holds)"
        },
    )
    fit_level: float = field(
        default=0.1,
        metadata={"help": "the hard samples are fitted when their loss (nats) is below"},
    )
    band: float = field(
        default=1.25,
        metadata={"help": "stage times agree when full/limit lies in [1/band, band]"},
    )
    seed: int = field(default=0, metadata={"help": "seed of the finite-width initializations"})
    seeds: int = field(
        default=1,
        metadata={
            "help": "finite-width draws per cell (seeds seed … seed + seeds − 1): the agreement "
            "is reported per draw, with its mean and spread"
        },
    )

    def __post_init__(self) -> None:
        _positive_tuple("ks", self.ks, integer=True)
        if int(self.seeds) != self.seeds or self.seeds < 1:
            raise GradflowError(f"seeds = {self.seeds!r}: need a whole number ≥ 1")
        if min(self.ks) < 2:
            raise GradflowError(f"ks = {self.ks!r}: every K must be ≥ 2")
        _positive_tuple("omegas", self.omegas)
        _positive_tuple("widths", self.widths, integer=True)
        p = self.particles
        if int(p) != p or p < 8 or p & (p - 1):
            raise GradflowError(f"particles = {p!r}: need a power of two ≥ 8")
        for name, allowed in (("neurons", NEURONS), ("combine", COMBINES)):
            if getattr(self, name) not in allowed:
                raise GradflowError(
                    f"{name} = {getattr(self, name)!r} is not one of {', '.join(allowed)}"
                )
        TrainOptions(t_max=self.t_max, lr=self.lr, records=self.records)
        if not 0 < self.escape_level:
            raise GradflowError(f"escape_level = {self.escape_level!r} must be > 0")
        if not 0 < self.fit_level < np.log(2):
            raise GradflowError(f"fit_level = {self.fit_level!r}: need 0 < level < ln 2 nats")
        if not self.band > 1:
            raise GradflowError(f"band = {self.band!r} must be > 1")

    SIZES: ClassVar[tuple[str, ...]] = ("ks", "widths", "particles", "records")
    """The fields that set the memory the map needs."""

    def runs(self) -> tuple[int, int]:
        """``(full, limit)``: the map's full runs (every ``K``, ``ω``, width, draw and group)
        and limit runs (every ``K``, ``ω`` and group)."""
        cells = len(self.ks) * len(self.omegas) * 2
        return cells * len(self.widths) * int(self.seeds), cells

    def memory_bytes(self) -> float:
        """The map's peak memory, bytes: the largest run's (every full run is padded to the
        widest width ``W``: ``12 K W`` trained weights on ``d = 2K`` — ``W_Q``, ``W_K`` and the
        neurons of two heads — recorded ``records + 1`` times, and about 8 float64 of
        activations per neuron, token and sample of the ``4K(K - 1)`` samples of 3 tokens at
        every record, where the margins are read), plus what every run keeps (its margins and
        three traces per record) and the records of the comparisons."""
        from gradflow.systems.fate import COMPARISON_BYTES

        K, T = max(self.ks), self.records + 1
        samples = 4 * K * (K - 1)
        width = max(max(self.widths), self.particles)
        run = 8.0 * width * T * (12 * K + 8 * 3 * samples)
        full, limit = self.runs()
        kept = 8.0 * (full + limit) * T * (samples + 3)
        return run + kept + full * COMPARISON_BYTES

    def run_seconds(self, kind: str, K: int) -> float:
        """Estimated seconds of one run of ``kind`` (``full``, ``limit``) at ``K`` groups: its
        descent steps × its neurons (a full run padded to the widest width, a limit run
        ``particles``) × the ``4K(K - 1)`` samples × :data:`STEP_S`."""
        neurons = max(self.widths) if kind == "full" else self.particles
        return STEP_S * self.steps_per_record() * self.records * neurons * 4 * K * (K - 1)

    def estimate(self) -> Estimate:
        """The map's size, rough duration and memory: :data:`STEP_S` per descent step, neuron
        and sample of a run (full runs at the widest width, limit runs at ``particles``), and
        :data:`COMPILE_S` per ``K``."""
        full, limit = self.runs()
        steps = self.steps_per_record() * self.records
        per_k = len(self.omegas) * 2
        width = len(self.widths) * int(self.seeds)
        runs = sum(
            per_k * (self.run_seconds("limit", K) + width * self.run_seconds("full", K))
            for K in self.ks
        )
        return Estimate(
            size=f"{full:,} full runs of widths up to {max(self.widths):,} and {limit} limit "
            f"runs, {steps:,} descent steps each",
            seconds=COMPILE_S * len(self.ks) + runs,
            basis=f"{STEP_S * 1e6:g} µs a step, neuron and sample, and {COMPILE_S:g} s to "
            "compile for each K",
            memory=self.memory_bytes(),
        )

    def draws(self) -> tuple[int, ...]:
        """The seeds of the finite-width draws: ``seed … seed + seeds − 1``."""
        return tuple(range(self.seed, self.seed + int(self.seeds)))

    def steps_per_record(self) -> int:
        """Descent steps between two records."""
        return TrainOptions(t_max=self.t_max, lr=self.lr, records=self.records).steps_per_record()
