"""``gradflow bench induction-heads`` (also ``bench icl``): training speed of the ICL-MC transformer.

The full model at k = 3, T = 100, d = 16, batch 64, float32, AdamW, with batches sampled on the
fly inside the step, runs in compiled chunks (``lax.scan`` over ``--chunk`` steps, the code path
of ``gradflow icl``).  Measured in the same run:

- baseline: the same step jitted alone and called once per Python iteration;
- the minimal model's SGD step on the same batches (float64), the cheap model the reduction
  starts from.

Reported as steps per second and as ratios.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gradflow import GradflowError, format_table

if TYPE_CHECKING:
    import jax

__all__ = ["Config", "Report", "bench"]

K, T, D, BATCH = 3, 100, 16, 64


@dataclass(frozen=True)
class Config:
    """Sizes of the benchmark.

    Raises:
        GradflowError: a count below 1.
    """

    steps: int = field(default=200, metadata={"help": "timed steps per measurement"})
    chunk: int = field(default=50, metadata={"help": "steps per compiled chunk"})

    def __post_init__(self) -> None:
        for name in ("steps", "chunk"):
            if getattr(self, name) < 1:
                raise GradflowError(f"--{name} {getattr(self, name)} must be ≥ 1")


@dataclass(frozen=True)
class Report:
    """What :func:`bench` measured.

    Attributes:
        transformer: steps/s of ``lax.scan`` chunks and of the per-call loop, compile times (s).
        minimal: steps/s of the minimal model's ``lax.scan`` chunks, compile time (s).
    """

    config: Config
    transformer: dict[str, float]
    minimal: dict[str, float]
    devices: tuple[str, ...]

    def metadata(self) -> dict[str, Any]:
        """Settings, both models' rates, the two ratios, devices."""
        full, minimal = self.transformer, self.minimal
        return {
            "settings": {
                "k": K,
                "T": T,
                "d": D,
                "batch": BATCH,
                "transformer_dtype": "float32",
                "minimal_dtype": "float64",
            },
            "transformer": full,
            "minimal": minimal,
            "scan_over_loop": full["scan_steps_per_s"] / full["loop_steps_per_s"],
            "minimal_over_transformer": minimal["scan_steps_per_s"] / full["scan_steps_per_s"],
            "devices": list(self.devices),
        }

    def text(self) -> str:
        """A heading, one table row per measurement, the two ratios."""
        record, full, minimal, chunk = (
            self.metadata(),
            self.transformer,
            self.minimal,
            self.config.chunk,
        )
        table = format_table(
            ["training step", "steps/s", "compile (s)"],
            [
                [
                    f"transformer, lax.scan chunks of {chunk}",
                    f"{full['scan_steps_per_s']:.1f}",
                    f"{full['compile_scan_s']:.1f}",
                ],
                [
                    "transformer, one jitted step per Python call (baseline)",
                    f"{full['loop_steps_per_s']:.1f}",
                    f"{full['compile_step_s']:.1f}",
                ],
                [
                    f"minimal model (SGD, float64), lax.scan chunks of {chunk}",
                    f"{minimal['scan_steps_per_s']:.1f}",
                    f"{minimal['compile_scan_s']:.1f}",
                ],
            ],
        )
        return "\n".join(
            [
                f"ICL-MC training speed: k = {K}, T = {T}, batch {BATCH}; transformer d = {D}, float32, AdamW; batches sampled in the step",
                table,
                f"scan / per-call loop: {record['scan_over_loop']:.2f}×; minimal model / transformer: {record['minimal_over_transformer']:.2f}×",
            ]
        )


def _rates(step: Callable, state: tuple, steps: int, chunk: int, loop: bool) -> dict[str, float]:
    """Steps/s of ``lax.scan`` chunks (and of one jitted step per call if ``loop``), compile times."""
    import equinox as eqx
    import jax

    scan = eqx.filter_jit(lambda s: jax.lax.scan(step, s, None, length=chunk)[0])
    begin = time.perf_counter()
    jax.block_until_ready(scan(state))
    out = {"compile_scan_s": time.perf_counter() - begin}
    chunks = max(1, steps // chunk)
    begin = time.perf_counter()
    s = state
    for _ in range(chunks):
        s = scan(s)
    jax.block_until_ready(s)
    out["scan_steps_per_s"] = chunks * chunk / (time.perf_counter() - begin)
    if loop:
        one = eqx.filter_jit(lambda s: step(s, None)[0])
        begin = time.perf_counter()
        jax.block_until_ready(one(state))
        out["compile_step_s"] = time.perf_counter() - begin
        begin = time.perf_counter()
        s = state
        for _ in range(chunks * chunk):
            s = one(s)
        jax.block_until_ready(s)
        out["loop_steps_per_s"] = chunks * chunk / (time.perf_counter() - begin)
    out["steps_timed"] = chunks * chunk
    return out


def _state(params: Any, optimizer: Any, key: jax.Array) -> tuple:
    import equinox as eqx

    return (params, optimizer.init(eqx.filter(params, eqx.is_array)), key)


def bench(config: Config) -> Report:
    """Time the transformer's step (scan chunks and per-call loop) and the minimal model's."""
    import jax

    from gradflow.systems.induction_heads.train import (
        RunSpec,
        minimal_setup,
        training_step,
        transformer_setup,
    )

    spec = RunSpec(model="transformer", k=K, T=T, d=D, batch=BATCH)
    loss, model, optimizer, draw, key = transformer_setup(spec)
    full = _rates(
        training_step(loss, optimizer, draw),
        _state(model, optimizer, key),
        config.steps,
        config.chunk,
        loop=True,
    )
    mspec = RunSpec(model="minimal", k=K, T=T, batch=BATCH)
    mloss, params, moptimizer, mdraw = minimal_setup(mspec)
    minimal = _rates(
        training_step(mloss, moptimizer, mdraw),
        _state(params, moptimizer, key),
        config.steps,
        config.chunk,
        loop=False,
    )
    return Report(
        config=config,
        transformer=full,
        minimal=minimal,
        devices=tuple(str(dev) for dev in jax.devices()),
    )
