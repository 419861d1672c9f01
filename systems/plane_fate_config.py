"""The configuration of the fate map of any registered model with a full model (no JAX).

:class:`ModelFateConfig` is what ``gradflow fate --model NAME`` builds for a model of
:data:`gradflow.systems.MODELS` marked ``full`` that has no fate system of its own
(:mod:`gradflow.systems.plane_fate` runs it); its checks read the registry entry alone, so a
rejected option answers before JAX is loaded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

from gradflow import GradflowError

__all__ = ["ModelFateConfig"]


@dataclass(frozen=True)
class ModelFateConfig:
    """A fate map of a registered model with a full model (:mod:`gradflow.systems.plane_fate`).

    Raises:
        GradflowError: a model not registered or without a full model, a hyperparameter
            missing, unknown, not ``NAME=NUMBER`` or outside its range, a grid below 2, an empty
            box, a negative ``σ``, no seeds, a budget or ``gtol`` not above 0.
    """

    QUICK: ClassVar[dict[str, Any]] = {"grid": 5}
    """A small map (``gradflow fate --quick``): 5 × 5 starts."""

    model: str = field(default="", metadata={"help": "the registered model"})
    hyper: tuple[str, ...] = field(
        default=(),
        metadata={"nargs": "+", "metavar": "NAME=VALUE", "help": "hyperparameter values"},
    )
    grid: int = field(default=9, metadata={"help": "starts per axis of the plane (grid × grid)"})
    box: tuple[float, float, float, float] | None = field(
        default=None,
        metadata={
            "nargs": 4,
            "metavar": ("XMIN", "XMAX", "YMIN", "YMAX"),
            "help": "range of the plane's two parameters (default the model's bounds)",
        },
    )
    sigma: tuple[float, ...] = field(
        default=(0.0,),
        metadata={"help": "standard deviations of the noise on every full weight, comma-separated"},
    )
    seeds: int = field(default=1, metadata={"help": "noise draws per σ > 0"})
    t_max: float = field(
        default=100.0, metadata={"help": "flow-time budget of each run, in the loss's time scale"}
    )
    gtol: float = field(
        default=1e-6, metadata={"help": "steady state: ‖∇L‖ ≤ gtol, relative to the loss's scale"}
    )

    def __post_init__(self) -> None:
        from gradflow.systems import MODELS

        entry = MODELS.get(self.model)
        if entry is None or entry.full != "declared":
            with_full = ", ".join(n for n, e in MODELS.items() if e.full == "declared")
            raise GradflowError(
                f"model = {self.model!r} has no declared full model for the generic fate map "
                f"(models with one: {with_full or 'none'})"
            )
        object.__setattr__(self, "hyper", tuple(self.hyper))
        object.__setattr__(self, "sigma", tuple(float(s) for s in self.sigma))
        values = self.values()
        for name, (lo, hi) in entry.hyperparams.items():
            if name not in values:
                raise GradflowError(
                    f"model {self.model!r} needs a value for {name} "
                    f"(--hyper {name}=VALUE, in ({lo:g}, {hi:g}))"
                )
            if not lo < values[name] < hi:
                raise GradflowError(
                    f"{name} = {values[name]:g} is outside the valid range ({lo:g}, {hi:g})"
                )
        unknown = sorted(set(values) - set(entry.hyperparams))
        if unknown:
            raise GradflowError(
                f"unknown hyperparameter(s) {', '.join(unknown)} for model {self.model!r}; "
                f"expected {', '.join(entry.hyperparams) or 'none'}"
            )
        if isinstance(self.grid, bool) or self.grid < 2:
            raise GradflowError(f"grid = {self.grid!r} must be an integer ≥ 2")
        if self.box is not None and not (
            all(math.isfinite(v) for v in self.box)
            and self.box[0] < self.box[1]
            and self.box[2] < self.box[3]
        ):
            raise GradflowError(f"box = {self.box} must be finite with XMIN < XMAX, YMIN < YMAX")
        if not self.sigma or any(not (s >= 0 and math.isfinite(s)) for s in self.sigma):
            raise GradflowError(f"sigma = {self.sigma} must be finite numbers ≥ 0")
        if isinstance(self.seeds, bool) or self.seeds < 1:
            raise GradflowError(f"seeds = {self.seeds!r} must be an integer ≥ 1")
        if not (self.t_max > 0 and self.gtol > 0):
            raise GradflowError(f"t_max = {self.t_max} and gtol = {self.gtol} must be > 0")

    def values(self) -> dict[str, float]:
        """The hyperparameters ``--hyper NAME=VALUE …`` gives, by name.

        Raises:
            GradflowError: an item that is not ``NAME=NUMBER``, or a name given twice.
        """
        out: dict[str, float] = {}
        for item in self.hyper:
            name, sep, text = item.partition("=")
            try:
                value = float(text)
            except ValueError:
                sep = ""
            if not sep or not name or not math.isfinite(value) or name in out:
                raise GradflowError(
                    f"--hyper {item!r}: expected NAME=NUMBER once per name, e.g. k=0.5"
                )
            out[name] = value
        return out

    def runs(self) -> list[tuple[float, int]]:
        """``(σ, seed)`` of every batch of full runs: one for ``σ = 0``, ``seeds`` for each
        other."""
        return [(s, k) for s in self.sigma for k in range(1 if s == 0 else self.seeds)]
