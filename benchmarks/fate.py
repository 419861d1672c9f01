"""``gradflow bench fate``: what a fate map costs, and the choice it rests on.

Times :func:`gradflow.systems.markov.fate.fate_map` at ``p = 0.5, q = 0.8``, ``σ = 0``, on a
``grid × grid`` grid (the full model: ``N`` positions, width ``d``, linear attention) from a cold
process, compilation included, with how many runs ended in each fate, the longest flow time,
and the steps of each fate (where the map's time goes: every step costs about the same).
The baseline, measured in the same run, is the full model's gradient: one member at a time
(how the fate map integrates its runs, by :func:`gradflow.slide`) against a batch of 64 under
``jax.vmap`` (how the basin maps integrate theirs), per member.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gradflow import GradflowError

__all__ = ["Config", "Report", "bench"]

P, Q = 0.5, 0.8
"""The switching probabilities of the timed map (p + q > 1)."""
BATCH = 64
"""Members of the vmapped gradient of the baseline."""
ONE_CALLS = 200
"""Consecutive calls timed together for the gradient of one member."""


@dataclass(frozen=True)
class Config:
    """Sizes of the benchmark.

    Raises:
        GradflowError: ``grid`` below 2, a bad ``length`` or width ``d``, or a budget ``t_max``
            the fate map refuses (not above its descent step).
    """

    grid: int = field(default=12, metadata={"help": "fate grid points per axis"})
    length: int = field(default=6, metadata={"help": "positions N of the full model"})
    d: int = field(default=8, metadata={"help": "embedding width d of the full model"})
    t_max: float = field(default=300.0, metadata={"help": "flow-time budget of each full run"})

    def __post_init__(self) -> None:
        if self.grid < 2:
            raise GradflowError(f"grid = {self.grid!r} must be an integer ≥ 2")
        from gradflow.systems.markov.data import check_length

        check_length(self.length, exact=True)
        self.fate_config()

    def fate_config(self) -> Any:
        """The timed map's :class:`~gradflow.systems.markov.config.FateConfig` (σ = 0).

        Raises:
            GradflowError: a budget ``t_max`` the fate map refuses.
        """
        from gradflow.systems.markov.config import FateConfig

        return FateConfig(
            p=P, q=Q, grid=self.grid, sigma=(0.0,), length=self.length, d=self.d, t_max=self.t_max
        )


@dataclass(frozen=True)
class Report:
    """What :func:`bench` measured.

    Attributes:
        seconds: the fate map's wall time, compilation included.
        counts: runs per fate.
        cost: per fate, steps in all, the most of one run, share of the map's steps
            (:meth:`~gradflow.systems.markov.fate.FateMap.cost`).
        longest: the largest flow time of a run (time units of the flow).
        one_at_a_time, vmapped: seconds per member of one full gradient, alone and in a vmapped
            batch of :data:`BATCH`.
        weights: full weights per run; cores: CPU cores; devices: JAX's devices.
    """

    config: Config
    seconds: float
    counts: dict[str, int]
    cost: dict[str, dict[str, float]]
    longest: float
    one_at_a_time: float
    vmapped: float
    weights: int
    cores: int
    devices: tuple[str, ...]

    def metadata(self) -> dict[str, Any]:
        """Sizes, times, fates and the gradient baseline."""
        runs = self.config.grid**2
        return {
            "model": "canonical",
            "p": P,
            "q": Q,
            "grid": self.config.grid,
            "length": self.config.length,
            "d": self.config.d,
            "weights": self.weights,
            "runs": runs,
            "seconds": self.seconds,
            "seconds_per_run": self.seconds / runs,
            "counts": self.counts,
            "steps": self.cost,
            "longest_flow_time": self.longest,
            "gradient_seconds_one_at_a_time": self.one_at_a_time,
            "gradient_seconds_vmapped": self.vmapped,
            "ratio_vmapped_to_one_at_a_time": self.vmapped / self.one_at_a_time,
            "cores": self.cores,
            "devices": list(self.devices),
        }

    def text(self) -> str:
        """Four lines: the map, its fates, their steps, the gradient baseline."""
        from gradflow.systems.markov.fate import cost_line

        r = self.metadata()
        g = self.config.grid
        return "\n".join(
            [
                f"fate map of the canonical model, p = {P}, q = {Q}, σ = 0: {g} × {g} full runs"
                f" (N = {self.config.length}, d = {self.config.d}, {self.weights} weights),"
                f" {self.cores} cores",
                f"  {self.seconds:.0f} s with compilation ({r['seconds_per_run']:.2f} s per run;"
                f" longest flow time {self.longest:.4g}); fates: "
                + ", ".join(f"{k} {v}" for k, v in self.counts.items()),
                "  " + cost_line(self.cost),
                f"  full gradient: {1e6 * self.one_at_a_time:.0f} µs per member alone,"
                f" {1e6 * self.vmapped:.0f} µs in a vmapped batch of {BATCH}"
                f" ({r['ratio_vmapped_to_one_at_a_time']:.1f}×)",
            ]
        )


def _per_member(fn: Any, x: Any, h: Any, members: int, calls: int, repeats: int = 5) -> float:
    """Seconds per member of ``fn(x, h)``: the median over ``repeats`` of ``calls`` consecutive
    warm calls (a call of one member lasts a few hundred microseconds, too short to time
    alone)."""
    fn(x, h).block_until_ready()
    times = []
    for _ in range(repeats):
        begin = time.perf_counter()
        for _ in range(calls):
            out = fn(x, h)
        out.block_until_ready()
        times.append((time.perf_counter() - begin) / calls)
    return float(np.median(times)) / members


def bench(config: Config) -> Report:
    """Run the fate map from cold, then time the full gradient both ways."""
    import jax
    import jax.numpy as jnp

    from gradflow.systems.markov.fate import fate_map
    from gradflow.systems.markov.full_landscape import embed_batch, full_field

    fate_config = config.fate_config()
    begin = time.perf_counter()
    result = fate_map(fate_config)
    seconds = time.perf_counter() - begin
    full = fate_config.full()
    h = full.reduced.bind(p=P, q=Q).h
    starts = np.random.default_rng(0).uniform([0.1, -2.5], [1.6, 2.0], size=(BATCH, 2))
    x = embed_batch(full)(jnp.asarray(starts), h)
    grad = full_field(full).grad
    one = _per_member(jax.jit(grad), x[0], h, 1, ONE_CALLS)
    batched = _per_member(jax.jit(jax.vmap(grad, in_axes=(0, None))), x, h, BATCH, 5)
    return Report(
        config=config,
        seconds=seconds,
        counts=result.counts(),
        cost=result.cost(),
        longest=float(np.max(result.times)),
        one_at_a_time=one,
        vmapped=batched,
        weights=int(x.shape[1]),
        cores=os.cpu_count() or 1,
        devices=tuple(str(d) for d in jax.devices()),
    )
