"""What the Markov transformer's long jobs cost: a fate map's and a training run's size, rough
duration and memory (:class:`gradflow.Estimate`), from their settings alone (no JAX).

The rates were measured on 2 quiet CPU cores with the commands named beside each
(``docs/performance.md`` lists their times); a run's cost varies a hundredfold with where it
starts (a run near a saddle or along a ReLU kink spends its whole step budget), so the estimate of
a map is its number of runs times their mean cost on the default map.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gradflow import Estimate
from gradflow.systems.fate import COMPARISON_BYTES

from .ranges import FULL_LENGTH

if TYPE_CHECKING:
    from .config import FateConfig, TrainConfig

__all__ = [
    "FATE_FIXED_S",
    "KEPT_PER_RUN",
    "NOISE_RUN_S",
    "RECORD_BYTES",
    "SLIDE_RUN_S",
    "cost_line",
    "fate_estimate",
    "fate_memory",
    "run_work",
    "train_estimate",
]

FATE_FIXED_S = 15.0
"""Seconds of start-up, compilation and the two reduced predictions of a fate map: the quick
4 × 4 map (``gradflow fate --quick``) took 18.9 s on 2 quiet cores with an empty compilation
cache and 9.9 s with a filled one, about 2.5 s of it its 16 runs at :data:`SLIDE_RUN_S`."""
SLIDE_RUN_S = 0.31
"""Mean seconds of a run without noise (:func:`gradflow.slide`, recorded, and its evidence read
along its path) at ``N = 6``, ``d = 8``: ``gradflow bench fate``'s 12 × 12 map at σ = 0 took
52 s on 2 quiet cores, less about 8 s to start with a filled compilation cache, over its 144
runs."""
NOISE_RUN_S = 0.17
"""Mean seconds of a run with noise (gradient descent, then :func:`gradflow.slide`) at ``N = 6``,
``d = 8``: ``time gradflow fate --p 0.5 --q 0.8 --grid 12`` took 204 s on 2 quiet cores, less
the 52 s of its start and its 144 runs without noise, over its 864 runs with noise."""
KEPT_PER_RUN = 25
"""float64 a fate map keeps per run besides its projected endpoint (``dim`` more): fate, time,
loss, sliding-integrator steps, descent steps, time sliding, the distance from the family at the
start and at the end, and the 17 values of its evidence."""
RECORD_BYTES = 2 * COMPARISON_BYTES
"""Bytes per run of the map's records: its two comparisons, one per metric."""
COPIES = 3
"""Copies of the per-run arrays alive at once: the finished cells, their concatenation and the
arrays written to the NPZ."""
TRAIN_FIXED_S = 10.0
"""Seconds of start-up and compilation of a training run."""
TRAIN_STEP_S = 3.0e-3
"""Seconds of one AdamW step of one seed at ``N = 256`` positions, batch 16, ``d = 8`` (``gradflow
bench train``: 320–350 steps/s)."""
TRAIN_LENGTH_POWER = 1.45
"""How a step's cost grows with ``N``: ``gradflow bench train``'s step is 7.2–7.9 times slower at
``N = 1024`` than at ``N = 256``, ``4^1.45 = 7.5``."""


def fate_memory(config: FateConfig) -> float:
    """Bytes a fate map keeps at its peak: per run its arrays (:data:`KEPT_PER_RUN` plus the
    projected endpoint, float64, :data:`COPIES` times) and its records (:data:`RECORD_BYTES`),
    per grid point its start and its two reduced predictions."""
    dim = 3 if config.model == "canonical-attention" else 2
    runs = config.grid**2 * len(config.runs())
    return runs * (COPIES * 8.0 * (KEPT_PER_RUN + dim) + RECORD_BYTES) + 8.0 * config.grid**2 * (
        dim + 2
    )


def fate_estimate(config: FateConfig) -> Estimate:
    """The fate map's size, duration (:data:`SLIDE_RUN_S` and :data:`NOISE_RUN_S` per run, times
    ``2^(N - 6)``: the exact loss enumerates all ``2^N`` sequences) and memory."""
    points = config.grid**2
    quiet = points if 0.0 in config.sigma else 0
    noisy = points * (len(config.runs()) - (1 if quiet else 0))
    scale = 2.0 ** (config.length - FULL_LENGTH)
    with_noise = f", {noisy:,} with noise" if noisy else ""
    return Estimate(
        size=f"{quiet + noisy:,} runs of the full model ({config.grid} × {config.grid} starts: "
        f"{quiet:,} without noise{with_noise})",
        seconds=FATE_FIXED_S + scale * (quiet * SLIDE_RUN_S + noisy * NOISE_RUN_S),
        basis=f"{scale * SLIDE_RUN_S:.2g} s a run without noise, {scale * NOISE_RUN_S:.2g} s "
        f"with, the default map's means at N = {config.length}, and {FATE_FIXED_S:g} s to start",
        memory=fate_memory(config),
    )


def train_estimate(config: TrainConfig, memory: float) -> Estimate:
    """A training run's size, duration (:data:`TRAIN_STEP_S` per step and seed, times the batch
    over 16 and ``(N/256)^1.45``) and ``memory`` (bytes, its own estimate)."""
    step = TRAIN_STEP_S * config.batch / 16 * (config.length / 256) ** TRAIN_LENGTH_POWER
    seeds = "seed" if config.seeds == 1 else "seeds"
    return Estimate(
        size=f"{config.steps:,} steps × {config.seeds} {seeds} at N = {config.length}, "
        f"batch {config.batch}",
        seconds=TRAIN_FIXED_S + config.steps * config.seeds * step,
        basis=f"{step * 1e3:.2g} ms a step and seed, and {TRAIN_FIXED_S:g} s to start",
        memory=memory,
    )


def run_work(config: FateConfig, sigma: float, runs: int) -> float:
    """The estimated seconds of a fate map's cell of ``runs`` runs at noise ``sigma``: what its
    progress bar advances by, so that the time left weighs a row of a dozen runs without noise
    against a noise draw of the whole grid (:data:`SLIDE_RUN_S`, :data:`NOISE_RUN_S`)."""
    scale = 2.0 ** (config.length - FULL_LENGTH)
    return scale * runs * (NOISE_RUN_S if sigma > 0 else SLIDE_RUN_S)


def cost_line(cost: dict[str, dict[str, float]]) -> str:
    """One line of a fate map's measured cost (``FateMap.cost()``): the full gradients of each
    fate, their share, the most of one run."""
    return "full gradients: " + ", ".join(
        f"{k} {c['gradients']:,} ({100 * c['share']:.0f} %, at most {c['most']:,} a run)"
        for k, c in cost.items()
    )
