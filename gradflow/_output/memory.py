"""Memory estimates of the engine's batched computations (bytes), importable without JAX, and
the one check that refuses a size that cannot fit before anything is allocated."""

from __future__ import annotations

import os
from collections.abc import Sequence

from .._errors import GradflowError

__all__ = [
    "BYTES_PER_CELL",
    "BYTES_PER_SWEEP_POINT",
    "BYTES_PER_TRAJECTORY",
    "MEMORY_SHARE",
    "available_memory",
    "basin_memory",
    "check_memory",
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
