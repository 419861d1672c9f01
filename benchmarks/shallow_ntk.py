"""``gradflow bench shallow-ntk`` (also ``bench ntk``): time the empirical NTK Gram matrix of the shallow encoder.

The setting: ``N = 64`` samples, ``d_s = 8`` tokens, ``d = 16``, width ``d_m = 1024``
(``P = 3 d d_m + d_m = 50,176`` parameters), LeCun init, ``τ0 = d_m^{-1/2}``, float64.  Each
implementation of :func:`gradflow.systems.shallow_ntk.ntk.empirical_ntk` is timed after one untimed call
that compiles it; the time is the median of ``repeats`` calls.  The Jacobian methods cost the
same with or without the per-block split (the blocks are summed); NTK-vector products are timed
both ways (per block they need one JVP per sample and block).  Ratios are against the baseline
measured in the same run: the plain ``jax.jacobian`` contraction (``"jacobian"``, per block).
Every result is checked against the baseline (largest entry difference relative to the largest
entry).

``neural-tangents`` is compared where it imports; its latest release (0.6.5) does not import with
the JAX this project uses (it imports ``jax.core.Jaxpr``, which JAX 0.10 no longer has), and the
benchmark reports the import error instead.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from gradflow import format_table
from gradflow.systems.shallow_ntk.config import size_field
from gradflow.systems.shallow_ntk.scheme import check_size

__all__ = ["BASELINE", "Config", "Report", "bench"]

BASELINE = ("jacobian", True)
"""The implementation every ratio is taken against: ``jax.jacobian`` contraction, per block."""

VARIANTS = (BASELINE, ("per-sample", True), ("ntvp", True), ("ntvp", False))
"""``(method, per_block)`` of each timed implementation, the baseline first."""


@dataclass(frozen=True)
class Config:
    """Sizes of the benchmark.

    Raises:
        GradflowError: a size that is not a positive integer.
    """

    n_samples: int = size_field(64, "samples N", "N")
    d_s: int = size_field(8, "tokens per sample", "DS")
    d: int = size_field(16, "token dimension", "D")
    width: int = size_field(1024, "width d_m", "D_M")
    repeats: int = size_field(5, "timed calls per implementation")

    def __post_init__(self) -> None:
        for f in fields(self):
            check_size(f.name, getattr(self, f.name))


@dataclass(frozen=True)
class Timing:
    """One implementation: median time (ms), speed-up over the baseline, largest relative
    difference of its ``K`` from the baseline's."""

    method: str
    per_block: bool
    ms: float
    speedup_vs_jacobian: float
    max_rel_difference: float


@dataclass(frozen=True)
class Report:
    """What :func:`bench` measured."""

    config: Config
    parameters: int
    dtype: str
    devices: tuple[str, ...]
    timings: tuple[Timing, ...]
    neural_tangents: str

    def metadata(self) -> dict[str, Any]:
        """Sizes, devices, one record per implementation, the neural-tangents status."""
        c = self.config
        return {
            "N": c.n_samples,
            "d_s": c.d_s,
            "d": c.d,
            "d_m": c.width,
            "parameters": self.parameters,
            "repeats": c.repeats,
            "dtype": self.dtype,
            "devices": list(self.devices),
            "baseline": "jacobian (jax.jacobian of the batched outputs, contracted per block)",
            "implementations": [vars(t) for t in self.timings],
            "neural_tangents": self.neural_tangents,
        }

    def text(self) -> str:
        """A heading, one table row per implementation, the neural-tangents status."""
        c = self.config
        rows = [
            [
                t.method,
                "per block" if t.per_block else "total only",
                f"{t.ms:.1f}",
                f"{t.speedup_vs_jacobian:.2f}×",
                f"{t.max_rel_difference:.1e}",
            ]
            for t in self.timings
        ]
        header = ["method", "blocks", "ms", "speed-up vs jacobian", "max rel. difference"]
        return "\n".join(
            [
                f"empirical NTK Gram matrix: N = {c.n_samples}, d_s = {c.d_s}, d = {c.d}, d_m = {c.width} "
                f"({self.parameters:,} parameters), {self.dtype}, median of {c.repeats}",
                format_table(header, rows),
                f"neural-tangents: {self.neural_tangents}",
            ]
        )


def _neural_tangents_status() -> str:
    """``"importable (version)"`` or the reason neural-tangents cannot be used here."""
    try:
        import neural_tangents  # noqa: PLC0415
    except ModuleNotFoundError:
        return "not installed (its latest release, 0.6.5, does not import with JAX 0.10: see docs/systems/shallow-ntk.md)"
    except Exception as error:  # noqa: BLE001 - any import failure is the answer we report
        return f"not usable: {type(error).__name__}: {error}"
    return f"importable ({getattr(neural_tangents, '__version__', 'unknown version')}), not benchmarked"


def _time(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Median wall time in ms of ``fn()`` over ``repeats`` calls after one compiling call."""
    result = fn()
    times = []
    for _ in range(repeats):
        begin = time.perf_counter()
        fn()
        times.append(time.perf_counter() - begin)
    return 1e3 * float(np.median(times)), result


def bench(config: Config) -> Report:
    """Time every implementation of :func:`empirical_ntk` on one network (module docstring)."""
    import jax

    from gradflow.systems.shallow_ntk.encoder import init_encoder, synthetic_data
    from gradflow.systems.shallow_ntk.ntk import empirical_ntk

    X, _ = synthetic_data(jax.random.PRNGKey(0), config.n_samples, config.d_s, config.d)
    model = init_encoder(
        jax.random.PRNGKey(1), config.d, config.width, init="lecun", scaling="sqrt"
    )
    parameters = sum(getattr(model, a).size for a in ("W_Q", "W_K", "W_V", "w_O"))
    results = {}
    for method, per_block in VARIANTS:
        ms, blocks = _time(
            functools.partial(empirical_ntk, model, X, method, per_block=per_block),
            config.repeats,
        )
        results[(method, per_block)] = (ms, blocks["total"])
    base_ms, base_K = results[BASELINE]
    scale = float(np.abs(base_K).max())
    timings = tuple(
        Timing(
            method=method,
            per_block=per_block,
            ms=ms,
            speedup_vs_jacobian=base_ms / ms,
            max_rel_difference=float(np.abs(K - base_K).max()) / scale,
        )
        for (method, per_block), (ms, K) in results.items()
    )
    return Report(
        config=config,
        parameters=int(parameters),
        dtype=str(X.dtype),
        devices=tuple(str(d) for d in jax.devices()),
        timings=timings,
        neural_tangents=_neural_tangents_status(),
    )
