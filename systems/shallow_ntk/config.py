"""The settings of the shallow encoder's width sweep and their option parsers, without JAX.

:mod:`.sweep` (which runs the sweep) re-exports everything here; the command line builds its
options and checks them from this module before JAX is loaded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from gradflow import Estimate, GradflowError

from .scheme import INITS, SCALINGS, check_size

__all__ = [
    "DATA",
    "OUTCOMES",
    "SMALLEST_SHAPE",
    "SUFFICIENT_EXPONENT",
    "NtkFateConfig",
    "SweepConfig",
    "check_runs",
    "compiled_width",
    "name_list",
    "positive_int",
    "positive_list",
    "sample_list",
    "seeds_field",
    "size_field",
    "sizes",
    "steps_field",
    "width_list",
    "widths_field",
]

OUTCOMES = ("converged", "stalled", "diverged")
"""Outcomes of a full run of the fate map, in the order of their codes."""
DATA = ("synthetic", "digits")
"""The data a width sweep can train on."""


def positive_int(text: str) -> int:
    """An option's text as an integer ≥ 1.

    Raises:
        ValueError: it is not one (the message quotes it).
    """
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1 or str(value) != text.strip().lstrip("+"):
        raise ValueError(f"{text!r} is not a positive integer")
    return value


def positive_list(what: str, example: str) -> Callable[[str], tuple[int, ...]]:
    """A parser of comma-separated positive integers (``what`` names one in errors).

    The parser raises ``ValueError`` when an entry is not a positive integer.
    """

    def parse(text: str) -> tuple[int, ...]:
        try:
            return tuple(positive_int(part) for part in text.split(","))
        except ValueError:
            raise ValueError(
                f"{text!r}: every {what} must be a positive integer, e.g. {example}"
            ) from None

    return parse


width_list = positive_list("width", "64,256,1024")
"""Comma-separated widths, e.g. ``64,256,1024`` (``ValueError`` if one is not a positive
integer)."""

sample_list = positive_list("sample count N", "4,8,16")
"""Comma-separated sample counts, e.g. ``4,8,16``."""


def name_list(valid: tuple[str, ...], what: str) -> Callable[[str], tuple[str, ...]]:
    """A parser of comma-separated names, each one of ``valid`` (``what`` names them in errors)."""

    def parse(text: str) -> tuple[str, ...]:
        names = tuple(part.strip() for part in text.split(","))
        bad = [n for n in names if n not in valid]
        if bad:
            raise ValueError(
                f"unknown {what} {', '.join(map(repr, bad))} (valid: {', '.join(valid)})"
            )
        return names

    return parse


def size_field(default: int, text: str, metavar: str | None = None) -> Any:
    """A dataclass field holding a positive integer, with its option's help and parser."""
    meta = {"help": text, "parse": positive_int} | ({"metavar": metavar} if metavar else {})
    return field(default=default, metadata=meta)


def widths_field() -> Any:
    """The widths ``d_m`` of a sweep (default 64, 256, 1024, 4096), a comma list on the command line."""
    return field(
        default=(64, 256, 1024, 4096),
        metadata={"help": "widths d_m", "parse": width_list, "metavar": "W1,W2,…"},
    )


def steps_field() -> Any:
    """The GD steps ``T`` of a sweep (default 200)."""
    return size_field(200, "GD steps T", "T")


def seeds_field(default: int) -> Any:
    """The networks per width of a sweep."""
    return size_field(default, "networks per width")


def sizes(name: str, label: str, values: tuple[int, ...]) -> tuple[int, ...]:
    """``values`` (sizes called ``label``, e.g. widths ``d_m``) sorted without repeats.

    Raises:
        GradflowError: none given, or one that is not a positive integer.
    """
    if not values:
        raise GradflowError(f"{name} must name at least one {label}")
    return tuple(sorted({check_size(label, v) for v in values}))


def check_runs(config: Any) -> None:
    """Check and normalize a configuration's ``inits``, ``scalings`` (repeats dropped) and
    ``eta``.

    Raises:
        GradflowError: an unknown or no init or scaling, or ``η`` outside ``(0, 2)``.
    """
    for name, valid in (("inits", INITS), ("scalings", SCALINGS)):
        values = tuple(getattr(config, name))
        bad = [v for v in values if v not in valid]
        if bad or not values:
            raise GradflowError(
                f"{name[:-1]} = {', '.join(map(repr, bad)) or '(none)'} is not one of {', '.join(valid)}"
            )
        object.__setattr__(config, name, tuple(dict.fromkeys(values)))
    if not 0.0 < float(config.eta) < 2.0:
        raise GradflowError(f"eta = {config.eta!r} must be in (0, 2) (γ = η / λ_max(K_0))")


@dataclass(frozen=True)
class SweepConfig:
    """What a width sweep runs.

    Attributes:
        n_samples: ``N``, samples.
        d_s: tokens per sample.
        d: token dimension.
        widths: the widths ``d_m``.
        steps: GD steps ``T``.
        seeds: network seeds per width.
        scalings: score scalings (``"sqrt"``, ``"linear"``).
        inits: initializations (``"lecun"``, ``"he"``, ``"ntk"``).
        eta: the GD step relative to the largest kernel eigenvalue, ``γ = η / λ_max(K_0)``,
            ``0 < η < 2`` (linear stability).
        data_seed: seed of the data (the synthetic draw, or the digit images drawn).
        hidden: include the hidden layer ``W_H``.
        data: ``"synthetic"`` (:func:`gradflow.systems.shallow_ntk.encoder.synthetic_data`) or
            ``"digits"`` (scikit-learn's handwritten digits,
            :func:`gradflow.systems.shallow_ntk.digits.digits_data`; needs ``d_s · d = 64``).

    Raises:
        GradflowError: a size, width, step count or seed count that is not a positive integer,
            an unknown init or scaling, or ``η`` outside ``(0, 2)``.
    """

    n_samples: int = size_field(16, "samples N", "N")
    d_s: int = size_field(4, "tokens per sample d_s", "DS")
    d: int = size_field(16, "token dimension d", "D")
    widths: tuple[int, ...] = widths_field()
    steps: int = steps_field()
    seeds: int = seeds_field(1)
    scalings: tuple[str, ...] = field(
        default=("sqrt",),
        metadata={
            "flag": "--scaling",
            "parse": name_list(SCALINGS, "scaling"),
            "metavar": "sqrt|linear",
            "help": "score scaling τ0 = d_m^{-1/2} (sqrt) or d_m^{-1} (linear); a comma list runs each",
        },
    )
    inits: tuple[str, ...] = field(
        default=("lecun",),
        metadata={
            "flag": "--init",
            "parse": name_list(INITS, "init"),
            "metavar": "lecun|he|ntk",
            "help": "initialization; a comma list runs each",
        },
    )
    eta: float = field(default=0.5, metadata={"help": "GD step γ = η / λ_max(K_0), 0 < η < 2"})
    data_seed: int = field(
        default=0, metadata={"flag": "--seed", "help": "seed of the synthetic data"}
    )
    hidden: bool = field(default=False, metadata={"help": "add the hidden layer W_H"})
    data: str = field(
        default="synthetic",
        metadata={
            "choices": DATA,
            "help": "synthetic (Gaussian tokens and targets) or digits (scikit-learn's 8 × 8 "
            "digit images cut into d_s tokens of d pixels, d_s · d = 64; the extra "
            "gradflow[digits])",
        },
    )

    SIZES: ClassVar[tuple[str, ...]] = ("widths", "n_samples", "d_s", "d")
    """The fields that set the memory a sweep needs."""

    def memory_bytes(self) -> float:
        """Estimated peak memory at the widest ``d_m`` (float64): the Jacobian of ``N`` outputs
        over the ``3 d_m d + d_m`` parameters (``+ d_m²`` with the hidden layer) and its kernel,
        and the ``N × d_s × d_m`` activations with their gradients."""
        d_m = float(max(self.widths))
        params = 3 * d_m * self.d + d_m + (d_m**2 if self.hidden else 0.0)
        return 8.0 * (3 * self.n_samples * params + 6 * self.n_samples * self.d_s * d_m)

    def __post_init__(self) -> None:
        for name in ("n_samples", "d_s", "d", "steps", "seeds"):
            object.__setattr__(self, name, check_size(name, getattr(self, name)))
        object.__setattr__(self, "widths", sizes("widths", "d_m", self.widths))
        check_runs(self)
        if self.data not in DATA:
            raise GradflowError(f"data = {self.data!r} is not one of {', '.join(DATA)}")
        if self.data == "digits" and self.d_s * self.d != 64:
            raise GradflowError(
                f"d_s = {self.d_s}, d = {self.d}: the digits' 64 pixels need d_s · d = 64"
            )


SMALLEST_SHAPE = 16
"""The fate map runs its networks padded (exactly,
:func:`~gradflow.systems.shallow_ntk.encoder.pad_width`) to the smallest of 16, 64, 256, … (powers
of 4 from this) at least their width, so that a map compiles three programs per ``N`` for widths
up to 256 instead of one per width: compiling, not running, dominates the cost of small widths."""


SHAPE_S = 4.0
"""Seconds to compile a fate map's programs for one ``(N, padded width)``: the quick map (4
shapes) took 59 s cold on 2 busy cores (load 9), its cells 3 s of it."""
CELL_S = 0.06
"""Seconds of a cell's fixed work (kernels, spectra, limits): ``gradflow fate --model shallow-ntk
--quick --seeds 4``, its programs compiled, took 3.1 s for 16 cells of 400 steps, and 4.8 s at
800 steps (busy cores: 0.08 s a cell and 0.27 ms a step; the default map's 74 s on quiet cores
fit 0.06 s and 0.2 ms)."""
CELL_STEP_S = 2e-4
"""Seconds of one gradient-descent step of a cell's networks at small widths (see
:data:`CELL_S`)."""
UNIT_STEP_S = 1e-9
"""Seconds per step, sample and padded neuron of one network, beyond :data:`CELL_STEP_S`: a
floor of about a GFLOP/s on the ``N × d_s × W`` activations, which matters only for widths of
thousands."""


def compiled_width(d_m: int) -> int:
    """The width a network of width ``d_m`` is run at in the fate map (:data:`SMALLEST_SHAPE`)."""
    width = SMALLEST_SHAPE
    while width < d_m:
        width *= 4
    return width


SUFFICIENT_EXPONENT = {"sqrt": 2.0, "linear": 1.0}
"""The width Wu et al. (2023) find sufficient for GD to converge, ``d_m ≥ N^α`` (up to constants
and logarithms the statement hides): ``α = 2`` under ``τ0 = d_m^{-1/2}``, ``α = 1`` under
``τ0 = d_m^{-1}``."""


@dataclass(frozen=True)
class NtkFateConfig:
    """What the shallow encoder's fate map runs (:mod:`gradflow.systems.shallow_ntk.fate`).

    Every ``(N, d_m, seed)`` draws one data set (``N`` samples) and one network per init and
    scaling, and trains each by full-batch GD with ``γ = η / λ_max(K_0)`` for at most ``T``
    steps, stopping once every network of the cell has converged or diverged.

    Attributes:
        n_samples: the sample counts ``N``.
        widths: the widths ``d_m``.
        d_s: tokens per sample.
        d: token dimension.
        seeds: data and network draws per ``(N, d_m)``.
        steps: the GD step budget ``T``.
        eta: ``γ = η / λ_max(K_0)``, ``0 < η < 2``.
        eps: a run has converged once ``ℓ_k ≤ ε ℓ_0`` for some ``k ≤ T``.
        scalings, inits: as in :class:`SweepConfig`.
        data_seed: the seed all draws derive from.

    Raises:
        GradflowError: a size, width, count or budget that is not a positive integer, an unknown
            init or scaling, ``η`` outside ``(0, 2)`` or ``ε`` outside ``(0, 1)``.
    """

    QUICK: ClassVar[dict[str, Any]] = {
        "n_samples": (4, 8),
        "widths": (1, 4, 16, 64),
        "seeds": 2,
        "steps": 400,
    }
    """A small map (``gradflow fate --model shallow-ntk --quick``): 8 cells of 6 networks each
    draw."""

    n_samples: tuple[int, ...] = field(
        default=(4, 8, 16, 32),
        metadata={"help": "sample counts N", "parse": sample_list, "metavar": "N1,N2,…"},
    )
    widths: tuple[int, ...] = field(
        default=(1, 2, 4, 8, 16, 64, 256),
        metadata={"help": "widths d_m", "parse": width_list, "metavar": "W1,W2,…"},
    )
    d_s: int = size_field(4, "tokens per sample d_s", "DS")
    d: int = size_field(16, "token dimension d", "D")
    seeds: int = size_field(3, "data and network draws per (N, d_m)")
    steps: int = size_field(1000, "GD step budget T", "T")
    eta: float = field(default=0.5, metadata={"help": "GD step γ = η / λ_max(K_0), 0 < η < 2"})
    eps: float = field(
        default=1e-3, metadata={"help": "converged: ℓ_k ≤ ε ℓ_0 within the budget, 0 < ε < 1"}
    )
    scalings: tuple[str, ...] = field(
        default=SCALINGS,
        metadata={
            "flag": "--scaling",
            "parse": name_list(SCALINGS, "scaling"),
            "metavar": "sqrt|linear",
            "help": "score scalings τ0 = d_m^{-1/2} (sqrt), d_m^{-1} (linear), a comma list",
        },
    )
    inits: tuple[str, ...] = field(
        default=INITS,
        metadata={
            "flag": "--init",
            "parse": name_list(INITS, "init"),
            "metavar": "lecun|he|ntk",
            "help": "initializations, a comma list",
        },
    )
    data_seed: int = field(default=0, metadata={"flag": "--seed", "help": "seed of every draw"})

    def __post_init__(self) -> None:
        for name in ("d_s", "d", "seeds", "steps"):
            object.__setattr__(self, name, check_size(name, getattr(self, name)))
        object.__setattr__(self, "n_samples", sizes("n_samples", "N", self.n_samples))
        object.__setattr__(self, "widths", sizes("widths", "d_m", self.widths))
        check_runs(self)
        if not 0.0 < float(self.eps) < 1.0:
            raise GradflowError(f"eps = {self.eps!r} must be in (0, 1) (converged: ℓ ≤ ε ℓ_0)")

    def pairs(self) -> list[tuple[str, str]]:
        """``(init, scaling)`` of the networks of every cell, in the arrays' order."""
        return [(i, s) for i in self.inits for s in self.scalings]

    SIZES: ClassVar[tuple[str, ...]] = ("widths", "n_samples", "d_s", "d")
    """The fields that set the memory a map needs."""

    def memory_bytes(self) -> float:
        """Estimated peak memory (float64) of the largest cell: its networks, run together at
        the widest padded width ``W``, hold per-sample gradients of ``N`` outputs over
        ``(3d + 1) W`` parameters with their kernels and gradient-descent copies, and the
        ``N × d_s × W`` activations with their gradients; plus what the map keeps of every
        cell: per network its loss curve (``steps + 1``) and 25 measurements, and its
        comparison (:data:`~gradflow.systems.fate.COMPARISON_BYTES`)."""
        from gradflow.systems.fate import COMPARISON_BYTES

        width = float(compiled_width(max(self.widths)))
        n = float(max(self.n_samples))
        networks = len(self.inits) * len(self.scalings)
        params = (3 * self.d + 1) * width
        cell = 8.0 * networks * (3 * n * params + 6 * n * self.d_s * width)
        kept = networks * (8.0 * (self.steps + 1 + 25) + COMPARISON_BYTES)
        return cell + self.cells() * kept

    def cells(self) -> int:
        """Cells ``(N, d_m, draw)``, each running every init and scaling."""
        return len(self.n_samples) * len(self.widths) * self.seeds

    def cell_seconds(self, n_samples: int, d_m: int) -> float:
        """Estimated seconds of a cell once its programs are compiled: :data:`CELL_S`, and per
        step :data:`CELL_STEP_S` and :data:`UNIT_STEP_S` per sample and padded neuron of each
        network."""
        networks = len(self.inits) * len(self.scalings)
        unit = n_samples * compiled_width(d_m) * networks * UNIT_STEP_S
        return CELL_S + self.steps * (CELL_STEP_S + unit)

    def estimate(self) -> Estimate:
        """The map's size, rough duration (:data:`SHAPE_S` per compiled shape, :data:`CELL_S`
        per cell, :data:`CELL_STEP_S` per step of a cell's networks together and
        :data:`UNIT_STEP_S` per step, sample and padded neuron of each) and memory."""
        networks = len(self.inits) * len(self.scalings)
        shapes = len(self.n_samples) * len({compiled_width(w) for w in self.widths})
        cells = sum(self.cell_seconds(n, w) for n in self.n_samples for w in self.widths)
        seconds = SHAPE_S * shapes + self.seeds * cells
        return Estimate(
            size=f"{self.cells():,} cells (N × d_m × draw) of {networks} networks, "
            f"{self.steps:,} steps each",
            seconds=seconds,
            basis=f"{SHAPE_S:g} s to compile each of {shapes} shapes, {CELL_S:g} s a cell, "
            f"{CELL_STEP_S * 1e3:g} ms a step of a cell's networks at small widths",
            memory=self.memory_bytes(),
        )
