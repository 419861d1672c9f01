"""Memory estimates of the engine's batched computations (bytes), importable without JAX, and
the one check that refuses a size that cannot fit before anything is allocated; a long job's
size, rough duration and memory together (:class:`Estimate`), announced before it starts and
refused past :data:`LONG_S` unless asked for."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from .._errors import GradflowError

__all__ = [
    "BYTES_PER_CELL",
    "LONG_S",
    "Estimate",
    "BYTES_PER_SWEEP_POINT",
    "BYTES_PER_TRAJECTORY",
    "MEMORY_SHARE",
    "available_memory",
    "basin_memory",
    "check_memory",
    "duration",
    "sweep_estimate",
    "sweep_memory",
]

BYTES_PER_TRAJECTORY = 512
"""Memory per grid point and per parameter of a basin map: float64 states, endpoints, statuses,
labels and their copies, with room for the solver's chunk buffers (bytes)."""
BYTES_PER_SWEEP_POINT = 10
"""Memory per grid point of every cell of a sweep that its result keeps: the labels (int8) and
attractor ids (int32) of each cell, and the stacked copy its ``arrays()`` makes (bytes)."""
BYTES_PER_CELL = 64 * 1024
"""Memory per cell of a sweep besides its grid: the model bound to its values, its record of
critical sets and attractors (bytes)."""
MEMORY_SHARE = 0.5
"""The share of the memory available now that a computation may plan to use."""
LONG_S = 30 * 60.0
"""A job estimated to take longer than this (seconds) is refused unless asked for
(``allow_long=True``; ``--allow-long`` on the command line): a typo in a count should not start
hours of work."""
MACHINE = "2 CPU cores"
"""What the rates of every estimate were measured on."""
SWEEP_CELL_S = 0.4
"""The fixed work of one cell of a sweep (critical sets, attractor index), seconds: 0.3–0.6 s
measured for the canonical model on a 2-core machine (docs/performance.md)."""
SWEEP_FLOW_S = 1e-5
"""One trajectory of a sweep's basin map, seconds: 7–12 µs measured for the canonical model's
1000 × 1000 map on a 2-core machine (docs/performance.md)."""
SWEEP_START_S = 15.0
"""Start-up and compilation of a sweep, seconds, paid once per process: the canonical model's
7 × 7 sweep spends about 11 s compiling and tracing and 3 s importing on a quiet 2-core machine
(docs/performance.md), several times that under load; the hyperparameters are arguments of the
compiled programs, so later cells reuse them."""


def available_memory() -> int:
    """Bytes of memory available now (``MemAvailable`` of ``/proc/meminfo``, else physical)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _points(grid: int | Sequence[int]) -> float:
    """Grid points of ``N`` (``N × N``) or ``(nx, ny)``."""
    return float(grid) ** 2 if isinstance(grid, int) else float(grid[0]) * float(grid[1])


def basin_memory(grid: int | Sequence[int], dim: int) -> float:
    """Estimated peak memory (bytes) of a ``grid × grid`` (or ``(nx, ny)``) basin map of a
    ``dim``-parameter landscape (the solver works in bounded chunks; what grows is the
    per-point state)."""
    return _points(grid) * (dim + 2) * BYTES_PER_TRAJECTORY


def sweep_memory(cells: int, grid: int | Sequence[int], dim: int) -> float:
    """Estimated peak memory (bytes) of a sweep of ``cells`` cells with a ``grid`` basin map
    each: every cell's labels and attractor ids kept, plus one cell's basin map at a time."""
    kept = float(cells) * (_points(grid) * BYTES_PER_SWEEP_POINT + BYTES_PER_CELL)
    return kept + basin_memory(grid, dim)


def _gib(n: float) -> str:
    return f"{n / 2**30:.3g} GiB"


def _number(x: float) -> str:
    """Two significant digits below 100 (``2.5``, ``45``), whole numbers above (``180``,
    ``69,000``)."""
    return f"{x:.2g}" if x < 100 else f"{x:,.0f}"


def _size(n: float) -> str:
    """``12 MiB``, ``3 GiB``, ``69,000 GiB``."""
    return f"{_number(n / 2**20)} MiB" if n < 2**30 else f"{_number(n / 2**30)} GiB"


def check_memory(what: str, needed: float) -> None:
    """Refuse a computation whose estimate ``needed`` (bytes) exceeds :data:`MEMORY_SHARE` of
    the memory available now.

    Args:
        what: the sizes, as the caller names them (``"grid = 200000"``, ``"--grid 200000"``).
        needed: the estimate.

    Raises:
        GradflowError: one line naming the sizes, the estimate and what is available.
    """
    free = available_memory()
    if needed > MEMORY_SHARE * free:
        raise GradflowError(
            f"{what} needs about {_gib(needed)} of memory, more than half of the "
            f"{_gib(free)} available; choose smaller sizes"
        )


def duration(seconds: float) -> str:
    """``40 s``, ``3.2 min``, ``4.5 h``, ``2.1 days``."""
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= 2 * size:
            return f"{_number(seconds / size)} {unit}"
    return f"{_number(seconds)} s"


@dataclass(frozen=True)
class Estimate:
    """A long job's size, rough duration and peak memory, known before anything runs.

    The duration is work counted from the job's sizes (runs, steps, flows) times rates measured
    on :data:`MACHINE` (each system documents the command that measured its rates): an estimate,
    which the machine's load and how fast each run settles can move by a factor of two or three
    either way.

    Attributes:
        size: what will run, in words (``"1,008 runs of the full model (144 without noise, 864
            with)"``).
        seconds: the rough wall time, seconds.
        basis: the rates it is computed from, in words.
        memory: the estimated peak memory, bytes.
    """

    size: str
    seconds: float
    basis: str
    memory: float = 0.0

    def line(self) -> str:
        """One line announcing the job: its size, duration, basis and memory."""
        return (
            f"{self.size}: about {duration(self.seconds)} on {MACHINE} ({self.basis}; "
            f"an estimate), about {_size(self.memory)} of memory"
        )

    def check(self, allow_long: bool = False, allow: str = "allow_long=True") -> None:
        """Refuse a job whose memory cannot fit (:func:`check_memory`), or, unless
        ``allow_long``, whose duration passes :data:`LONG_S`.

        Args:
            allow_long: run a job estimated past :data:`LONG_S`.
            allow: the words that allow it, named in the refusal (``"--allow-long"`` on the
                command line).

        Raises:
            GradflowError: one line with the size and the estimate.
        """
        check_memory(self.size, self.memory)
        if self.seconds > LONG_S and not allow_long:
            raise GradflowError(
                f"{self.size} would take about {duration(self.seconds)} on {MACHINE} "
                f"({self.basis}), past the {duration(LONG_S)} a job runs without {allow}; "
                f"choose smaller sizes, or add {allow}"
            )


def sweep_estimate(cells: int, grid: int | Sequence[int], dim: int) -> Estimate:
    """A sweep's size, rough duration at the canonical model's rates (:data:`SWEEP_CELL_S` a
    cell, :data:`SWEEP_FLOW_S` a flow, :data:`SWEEP_START_S` to start) and its memory
    (:func:`sweep_memory`)."""
    shown = f"{grid}²" if isinstance(grid, int) else f"{grid[0]} × {grid[1]}"
    return Estimate(
        size=f"{cells} cells × {shown} = {cells * _points(grid):.3g} flows",
        seconds=SWEEP_START_S + cells * (SWEEP_CELL_S + _points(grid) * SWEEP_FLOW_S),
        basis=f"the canonical model's rates: {SWEEP_CELL_S:g} s a cell + "
        f"{SWEEP_FLOW_S * 1e6:g} µs a flow, and {SWEEP_START_S:g} s of start-up and compilation",
        memory=sweep_memory(cells, grid, dim),
    )
