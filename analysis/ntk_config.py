"""The settings of the shallow encoder's width sweep and their option parsers, without JAX.

:mod:`.ntk_sweep` (which runs the sweep) re-exports everything here; the command line builds its
options and checks them from this module before JAX is loaded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from gradflow import GradflowError
from gradflow.models.shallow_scheme import INITS, SCALINGS, check_size

__all__ = [
    "SweepConfig",
    "name_list",
    "positive_int",
    "seeds_field",
    "size_field",
    "steps_field",
    "width_list",
    "widths_field",
]


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


def width_list(text: str) -> tuple[int, ...]:
    """Comma-separated positive integers, e.g. ``64,256,1024``.

    Raises:
        ValueError: an entry is not a positive integer.
    """
    try:
        return tuple(positive_int(part) for part in text.split(","))
    except ValueError:
        raise ValueError(
            f"{text!r}: every width must be a positive integer, e.g. 64,256,1024"
        ) from None


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
        data_seed: seed of the synthetic data (:func:`gradflow.models.shallow_encoder.synthetic_data`).
        hidden: include the hidden layer ``W_H``.

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
        if not self.widths:
            raise GradflowError("widths must name at least one width d_m")
        object.__setattr__(
            self, "widths", tuple(sorted({check_size("d_m", w) for w in self.widths}))
        )
        for name, valid in (("inits", INITS), ("scalings", SCALINGS)):
            values = tuple(getattr(self, name))
            bad = [v for v in values if v not in valid]
            if bad or not values:
                raise GradflowError(
                    f"{name[:-1]} = {', '.join(map(repr, bad)) or '(none)'} is not one of {', '.join(valid)}"
                )
            object.__setattr__(self, name, values)
        if not 0.0 < float(self.eta) < 2.0:
            raise GradflowError(f"eta = {self.eta!r} must be in (0, 2) (γ = η / λ_max(K_0))")
