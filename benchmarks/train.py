"""``gradflow bench train``: speed of the full Markov transformer.

Training: AdamW steps per second at each ``--length`` N (d = 8, batch 16, float32, one seed,
p = 0.5, q = 0.8, a fresh batch every step), the way :func:`gradflow.systems.markov.training.train`
runs them (compiled ``lax.scan`` chunks).  Compilation is not timed.  The lengths are timed in
turn, one chunk of each per round (:func:`~gradflow.systems.markov.training.training_rates`), so
that on a shared machine the chunks of one round see the same load: the cost growth from the
shortest to the longest length is the median over the rounds of their ratio, with its range, and
each length's rate the median over the rounds.  The baseline, measured in the same run when
PyTorch is installed, is the same step written in PyTorch (eager, vectorized sampler,
:mod:`gradflow.systems.markov.torch_reference`); without PyTorch the report says so.

Exact enumeration: one evaluation of the exact population loss over all 2^12 input sequences,
and of the loss with its gradient, float64 (what the reduced-vs-full checks call).

JAX and the models are imported inside the functions that time them, so that ``--help`` and a
rejected option answer before JAX is loaded.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gradflow import GradflowError, format_table, progress_bar

__all__ = ["Config", "Report", "bench"]

P, Q = 0.5, 0.8
D, BATCH = 8, 16
EXACT_LENGTH = 12


def _lengths(text: str) -> tuple[int, ...]:
    """``"256,1024"`` as ``(256, 1024)``."""
    return tuple(int(v) for v in text.split(",") if v.strip())


@dataclass(frozen=True)
class Config:
    """Sizes of the benchmark.

    Raises:
        GradflowError: no length, a length below 2, fewer than 20 steps, a count below 1.
    """

    lengths: tuple[int, ...] = field(
        default=(256, 1024),
        metadata={
            "flag": "--length",
            "parse": _lengths,
            "metavar": "N,N",
            "help": "sequence lengths N",
        },
    )
    steps: int = field(
        default=200,
        metadata={"help": "timed training steps per length (rounded up to whole chunks)"},
    )
    torch_steps: int = field(
        default=60, metadata={"help": "timed steps of the PyTorch step per length (≥ 20)"}
    )
    torch_threads: int = field(
        default=1,
        metadata={"help": "PyTorch threads (1 avoids OpenMP spin-waiting on a shared machine)"},
    )
    chunk: int = field(
        default=25, metadata={"help": "steps per compiled chunk (one chunk per length per round)"}
    )
    repeats: int = field(default=20, metadata={"help": "timed exact-loss evaluations"})

    def __post_init__(self) -> None:
        if not self.lengths or min(self.lengths) < 2:
            raise GradflowError(f"--length {self.lengths}: give lengths N ≥ 2, e.g. 256,1024")
        if self.torch_steps < 20:
            raise GradflowError(f"--torch-steps {self.torch_steps} must be ≥ 20")
        for name in ("steps", "torch_threads", "chunk", "repeats"):
            if getattr(self, name) < 1:
                raise GradflowError(f"--{name.replace('_', '-')} {getattr(self, name)} must be ≥ 1")


@dataclass(frozen=True)
class Report:
    """What :func:`bench` measured.

    Attributes:
        lengths: per ``N``: gradflow's steps/s (median over the rounds) and its range, PyTorch's
            (``None`` without PyTorch), their ratio.
        growths: per round, gradflow's steps/s at the shortest length over the longest.
        exact: sequences enumerated, ms per loss and per loss with gradient, compile times (s).
        torch: whether PyTorch was available.
        cores: CPU cores of the machine; devices: JAX's devices.
    """

    config: Config
    lengths: dict[str, dict[str, float | None]]
    growths: tuple[float, ...]
    exact: dict[str, float]
    torch: bool
    cores: int
    devices: tuple[str, ...]

    @property
    def growth(self) -> float:
        """Cost per step at the longest length over the shortest (gradflow), median of the
        rounds."""
        return statistics.median(self.growths)

    def metadata(self) -> dict[str, Any]:
        """Settings, per-length timings and ratios, the exact-loss timings, the machine."""
        return {
            "settings": {
                "d": D,
                "batch": BATCH,
                "dtype": "float32",
                "p": P,
                "q": Q,
                "exact_N": EXACT_LENGTH,
            },
            "lengths": self.lengths,
            "cost_growth": self.growth,
            "cost_growth_per_round": list(self.growths),
            "torch": self.torch,
            "exact": self.exact,
            "cores": self.cores,
            "devices": list(self.devices),
        }

    def text(self) -> str:
        """A heading, the per-length table, the growth, the exact-loss timings."""
        rows = [
            [
                n,
                f"{r['steps_per_second']:.1f} ({r['min_steps_per_second']:.1f}–"
                f"{r['max_steps_per_second']:.1f})",
                "-"
                if r["torch_steps_per_second"] is None
                else f"{r['torch_steps_per_second']:.1f}",
                "-" if r["ratio"] is None else f"{r['ratio']:.2f}×",
            ]
            for n, r in self.lengths.items()
        ]
        baseline = "" if self.torch else "\n  PyTorch is not installed: no reference step was timed"
        exact = self.exact
        return "\n".join(
            [
                f"full Markov transformer training, d = {D}, batch {BATCH}, float32, AdamW, "
                f"p = {P}, q = {Q}, {self.cores} cores",
                format_table(
                    ["N", "gradflow steps/s (range)", "PyTorch steps/s", "gradflow / PyTorch"],
                    rows,
                ),
                f"  cost growth from N = {min(self.config.lengths)} to N = {max(self.config.lengths)}: "
                f"{self.growth:.1f}× (median of {len(self.growths)} rounds, "
                f"{min(self.growths):.1f}–{max(self.growths):.1f}×){baseline}",
                f"\nexact population loss, N = {EXACT_LENGTH} ({exact['sequences']:,} sequences), "
                f"float64, best of {self.config.repeats}:",
                f"  loss            {exact['loss_ms']:.2f} ms   (compile {exact['compile_loss_s']:.1f} s)",
                f"  loss + gradient {exact['loss_and_grad_ms']:.2f} ms   "
                f"(compile {exact['compile_loss_and_grad_s']:.1f} s)",
            ]
        )


def _timed(fn: Callable[[], Any]) -> float:
    """Wall time (s) of ``fn()`` with its result ready."""
    import jax

    begin = time.perf_counter()
    jax.block_until_ready(fn())
    return time.perf_counter() - begin


def _exact(repeats: int) -> dict[str, float]:
    import jax
    import jax.numpy as jnp

    from gradflow.systems.markov.transformer import exact_loss, standard_init

    model = jax.tree.map(
        lambda x: x.astype(jnp.float64), standard_init(jax.random.key(2), D, EXACT_LENGTH)
    )
    p, q = jnp.asarray(P), jnp.asarray(Q)
    loss = jax.jit(lambda m: exact_loss(m, p, q))
    value_and_grad = jax.jit(jax.value_and_grad(lambda m: exact_loss(m, p, q)))
    compile_loss = _timed(lambda: loss(model))
    compile_grad = _timed(lambda: value_and_grad(model))
    loss_s = min(_timed(lambda: loss(model)) for _ in range(repeats))
    grad_s = min(_timed(lambda: value_and_grad(model)) for _ in range(repeats))
    return {
        "sequences": 2**EXACT_LENGTH,
        "loss_ms": 1e3 * loss_s,
        "loss_and_grad_ms": 1e3 * grad_s,
        "compile_loss_s": compile_loss,
        "compile_loss_and_grad_s": compile_grad,
    }


def bench(config: Config) -> Report:
    """Time training at every length (gradflow, and PyTorch when installed) and the exact loss."""
    import jax

    from gradflow.systems.markov.torch_reference import torch_available, torch_steps_per_second
    from gradflow.systems.markov.training import training_rates

    has_torch = torch_available()
    rounds = -(-config.steps // config.chunk)
    rates = training_rates(
        config.lengths, rounds, chunk=config.chunk, d=D, batch=BATCH, p=P, q=Q, progress=True
    )
    lengths: dict[str, dict[str, float | None]] = {}
    with progress_bar(total=len(config.lengths), unit="length", enabled=has_torch) as bar:
        for n in config.lengths:
            ours = statistics.median(rates[n])
            theirs = (
                torch_steps_per_second(
                    n, config.torch_steps, d=D, batch=BATCH, p=P, q=Q, threads=config.torch_threads
                )
                if has_torch
                else None
            )
            lengths[str(n)] = {
                "steps_per_second": ours,
                "min_steps_per_second": min(rates[n]),
                "max_steps_per_second": max(rates[n]),
                "torch_steps_per_second": theirs,
                "ratio": None if theirs is None else ours / theirs,
            }
            bar.update(1)
    short, long = rates[min(config.lengths)], rates[max(config.lengths)]
    return Report(
        config=config,
        lengths=lengths,
        growths=tuple(a / b for a, b in zip(short, long)),
        exact=_exact(config.repeats),
        torch=has_torch,
        cores=os.cpu_count() or 1,
        devices=tuple(str(d) for d in jax.devices()),
    )
