"""``gradflow bench train``: speed of the full Markov transformer.

Training: AdamW steps per second at d = 8, N = 256, batch 16, float32, one seed, p = 0.5,
q = 0.8, with batches sampled on the fly.  The steps run in compiled chunks (``lax.scan`` over
``--chunk`` steps, the way :func:`gradflow.analysis.markov_training.train` runs them); the
baseline, measured in the same run, is a Python loop calling one jitted step at a time.

Exact enumeration: one evaluation of the exact population loss over all 2^12 input sequences,
and of the loss with its gradient, float64 (what the reduced-vs-full checks call).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp

from gradflow import GradflowError, format_table
from gradflow.models.markov_data import sample_chains
from gradflow.models.markov_transformer import exact_loss, sample_loss, standard_init

from .markov_training import optimizer as adamw

__all__ = ["Config", "Report", "bench"]

P, Q = 0.5, 0.8
D, LENGTH, BATCH = 8, 256, 16
EXACT_LENGTH = 12


@dataclass(frozen=True)
class Config:
    """Sizes of the benchmark.

    Raises:
        GradflowError: a count below 1.
    """

    steps: int = field(default=400, metadata={"help": "timed training steps"})
    chunk: int = field(default=100, metadata={"help": "steps per compiled chunk"})
    repeats: int = field(default=20, metadata={"help": "timed exact-loss evaluations"})

    def __post_init__(self) -> None:
        for name in ("steps", "chunk", "repeats"):
            if getattr(self, name) < 1:
                raise GradflowError(f"--{name} {getattr(self, name)} must be ≥ 1")


@dataclass(frozen=True)
class Report:
    """What :func:`bench` measured.

    Attributes:
        training: steps timed, steps/s of ``lax.scan`` chunks and of the per-call loop, their
            ratio, compile times (s).
        exact: sequences enumerated, ms per loss and per loss with gradient, compile times (s).
    """

    config: Config
    training: dict[str, float]
    exact: dict[str, float]
    devices: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """Settings, the training and exact-loss timings, devices."""
        return {
            "settings": {
                "d": D,
                "N": LENGTH,
                "batch": BATCH,
                "dtype": "float32",
                "exact_N": EXACT_LENGTH,
            },
            "training": self.training,
            "exact": self.exact,
            "devices": list(self.devices),
        }

    def text(self) -> str:
        """A heading, the training table and ratio, the exact-loss timings."""
        train, exact, c = self.training, self.exact, self.config
        table = format_table(
            ["training", "steps/s", "compile (s)"],
            [
                [
                    f"lax.scan chunks of {c.chunk}",
                    f"{train['scan_steps_per_s']:.1f}",
                    f"{train['compile_scan_s']:.1f}",
                ],
                [
                    "one jitted step per Python call (baseline)",
                    f"{train['loop_steps_per_s']:.1f}",
                    f"{train['compile_step_s']:.1f}",
                ],
            ],
        )
        return "\n".join(
            [
                f"full Markov transformer, d = {D}, N = {LENGTH}, batch {BATCH}, float32, AdamW, p = {P}, q = {Q}",
                table,
                f"  ratio scan / loop: {train['scan_over_loop']:.2f}",
                f"\nexact population loss, N = {EXACT_LENGTH} ({exact['sequences']:,} sequences), float64, best of {c.repeats}:",
                f"  loss            {exact['loss_ms']:.2f} ms   (compile {exact['compile_loss_s']:.1f} s)",
                f"  loss + gradient {exact['loss_and_grad_ms']:.2f} ms   (compile {exact['compile_loss_and_grad_s']:.1f} s)",
            ]
        )


def _timed(fn: Callable[[], Any]) -> float:
    """Wall time (s) of ``fn()`` with its result ready."""
    begin = time.perf_counter()
    jax.block_until_ready(fn())
    return time.perf_counter() - begin


def _training(steps: int, chunk: int) -> dict[str, float]:
    optimizer = adamw(steps, 2e-3, 1e-3)
    model = standard_init(jax.random.key(0), D, LENGTH, attention="softmax")
    state = optimizer.init(model)

    def one_step(carry: tuple[Any, Any], key: jax.Array) -> tuple[tuple[Any, Any], jax.Array]:
        m, s = carry
        batch = sample_chains(key, P, Q, BATCH, LENGTH + 1)
        loss, grads = jax.value_and_grad(sample_loss)(m, batch)
        updates, s = optimizer.update(grads, s, m)
        return (eqx.apply_updates(m, updates), s), loss

    step = eqx.filter_jit(one_step)
    scan = eqx.filter_jit(lambda c, k: jax.lax.scan(one_step, c, jax.random.split(k, chunk)))
    carry = (model, state)
    compile_scan = _timed(lambda: scan(carry, jax.random.key(1)))
    compile_step = _timed(lambda: step(carry, jax.random.key(1)))
    chunks = max(1, steps // chunk)
    begin = time.perf_counter()
    for i in range(chunks):
        carry, losses = scan(carry, jax.random.key(10 + i))
    jax.block_until_ready(losses)
    scan_rate = chunks * chunk / (time.perf_counter() - begin)
    carry = (model, state)
    begin = time.perf_counter()
    for i in range(chunks * chunk):
        carry, loss = step(carry, jax.random.key(10_000 + i))
    jax.block_until_ready(loss)
    loop_rate = chunks * chunk / (time.perf_counter() - begin)
    return {
        "steps_timed": chunks * chunk,
        "scan_steps_per_s": scan_rate,
        "loop_steps_per_s": loop_rate,
        "scan_over_loop": scan_rate / loop_rate,
        "compile_scan_s": compile_scan,
        "compile_step_s": compile_step,
    }


def _exact(repeats: int) -> dict[str, float]:
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
    """Time training (scan chunks against a per-call loop) and the exact loss (module docstring)."""
    return Report(
        config=config,
        training=_training(config.steps, config.chunk),
        exact=_exact(config.repeats),
        devices=tuple(str(d) for d in jax.devices()),
    )
