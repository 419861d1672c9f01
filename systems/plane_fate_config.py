"""The configuration of the fate map of any model with a full model.

:class:`ModelFateConfig` is what ``gradflow fate --model SPEC`` builds for a model that declares
a full model and has no fate system of its own (:mod:`gradflow.systems.plane_fate` runs it):
a model of :data:`gradflow.systems.MODELS` marked ``full``, an installed plugin's, or
``FILE.py:FACTORY`` (:mod:`gradflow.systems.model_specs`).  For a registered model the checks
read the registry entry alone, so a rejected option answers before JAX is loaded; a plugin's or
a file's model is loaded to be checked.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from gradflow import Estimate, GradflowError

__all__ = ["ModelFateConfig"]


@dataclass(frozen=True)
class ModelFateConfig:
    """A fate map of a model with a full model (:mod:`gradflow.systems.plane_fate`).

    Raises:
        GradflowError: a model that is no model spec or declares no full model, a hyperparameter
            missing, unknown, not ``NAME=NUMBER`` or outside its range, a grid below 2, an empty
            box, a negative ``σ``, no seeds, a budget or ``gtol`` not above 0.
    """

    QUICK: ClassVar[dict[str, Any]] = {"grid": 5}
    """A small map (``gradflow fate --quick``): 5 × 5 starts."""

    model: str = field(
        default="", metadata={"help": "the model: a registered name or FILE.py:FACTORY"}
    )
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
        object.__setattr__(self, "hyper", tuple(self.hyper))
        object.__setattr__(self, "sigma", tuple(float(s) for s in self.sigma))
        values = self.values()
        domains = _hyperparameter_domains(self.model)
        for name, (show, inside) in domains.items():
            if name not in values:
                raise GradflowError(
                    f"model {self.model!r} needs a value for {name} "
                    f"(--hyper {name}=VALUE, in {show})"
                )
            if not inside(values[name]):
                raise GradflowError(f"{name} = {values[name]:g} is outside the valid range {show}")
        unknown = sorted(set(values) - set(domains))
        if unknown:
            raise GradflowError(
                f"unknown hyperparameter(s) {', '.join(unknown)} for model {self.model!r}; "
                f"expected {', '.join(domains) or 'none'}"
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

    SIZES: ClassVar[tuple[str, ...]] = ("grid", "sigma", "seeds")
    """The fields that set the memory the map needs."""

    def memory_bytes(self) -> float:
        """The map's peak memory, bytes: one batch of ``grid²`` full runs integrated together
        (:func:`gradflow.basin_memory` in the full model's ``P`` weights, loaded to count
        them), and per run of every batch 10 float64 kept and its two comparisons
        (:data:`~gradflow.systems.fate.COMPARISON_BYTES` each)."""
        from gradflow import basin_memory
        from gradflow.systems.fate import COMPARISON_BYTES

        runs = self.grid**2 * len(self.runs())
        weights = full_weights(self.model, self.hyper)
        return basin_memory(self.grid, weights) + runs * (80.0 + 2 * COMPARISON_BYTES)

    def estimate(self) -> Estimate:
        """The map's size, rough duration (:data:`PLANE_RUN_S` a run, :data:`PLANE_FIXED_S` to
        start) and memory."""
        batches = len(self.runs())
        runs = self.grid**2 * batches
        draws = f" × {batches} batches (σ, seed)" if batches > 1 else ""
        return Estimate(
            size=f"{runs:,} runs of the full model ({self.grid} × {self.grid} starts{draws}) of "
            f"{full_weights(self.model, self.hyper):,} weights",
            seconds=PLANE_FIXED_S + runs * PLANE_RUN_S,
            basis=f"{PLANE_RUN_S:g} s a run, measured for canonical-bias, and {PLANE_FIXED_S:g} "
            "s to start and find the reduced attractors",
            memory=self.memory_bytes(),
        )


PLANE_RUN_S = 30.0
"""Seconds a full run of a plane fate map takes, batched with its grid (the batch steps until its
slowest run is done): the 5 × 5 quick map of ``canonical-bias`` at ``p = 0.5``, ``q = 0.8`` took
13 min 16 s (18 min 19 s of CPU) on 2 cores at load 2–3, about 29 s a run once started, most
of its runs out of their 20,000 Tsit5 steps at flow times 2–11 of the 155 of their budget (the
full model is stiff).  An earlier 0.5 s was measured while every run's budget was a
thousandth of that: the full landscape's time unit was measured on its weights' default
ranges instead of being the reduced loss's."""
PLANE_FIXED_S = 60.0
"""Seconds of start-up, compilation, the critical sets and the reduced predictions (the quick
map took 270 s cold at load 13)."""


@functools.cache
def full_weights(spec: str, hyper: tuple[str, ...]) -> int:
    """The number of weights of the full model of ``spec`` at the hyperparameters ``hyper``
    (``NAME=VALUE`` items), read off its embedding's shape (the model is loaded)."""
    import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree

    from gradflow.systems.model_specs import load_model

    values = ModelFateConfig(model=spec, hyper=hyper).values()
    model = load_model(spec)
    bound = model.bind(**values)
    flat = jax.eval_shape(
        lambda theta: ravel_pytree(model.full.embed(theta, bound.h))[0], jnp.zeros(bound.dim)
    )
    return int(flat.size)


def _hyperparameter_domains(spec: str) -> dict[str, tuple[str, Callable[[float], bool]]]:
    """The hyperparameters of the model ``spec`` names: ``{name: (its range as text, membership
    test)}``, from the registry entry for a registered model (no import), else from the loaded
    model's declaration.

    Raises:
        GradflowError: ``spec`` names no model, or a model without a full model.
    """
    from gradflow.systems import MODELS

    entry = MODELS.get(spec)
    if entry is not None:
        if not entry.full:
            with_full = ", ".join(n for n, e in MODELS.items() if e.full)
            raise GradflowError(
                f"model = {spec!r} declares no full model (registered models with one: "
                f"{with_full or 'none'}; or FILE.py:FACTORY)"
            )
        return {
            name: (f"({lo:g}, {hi:g})", lambda v, lo=lo, hi=hi: lo < v < hi)
            for name, (lo, hi) in entry.hyperparams.items()
        }
    from gradflow import show_domain
    from gradflow.systems.model_specs import load_model

    model = load_model(spec)
    if model.full is None:
        raise GradflowError(
            f"model = {spec!r} declares no full model: give its ReducedModel "
            "full=gradflow.FullModel(embed, loss) to map its fate"
        )
    return {
        h.name: (show_domain(model.domains[h]), lambda v, d=model.domains[h]: bool(d.contains(v)))
        for h in model.hyperparams
    }
