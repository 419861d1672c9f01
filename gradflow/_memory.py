"""Memory estimates of the engine's batched computations (bytes), importable without JAX."""

from __future__ import annotations

__all__ = ["BYTES_PER_TRAJECTORY", "basin_memory"]

BYTES_PER_TRAJECTORY = 512
"""Memory per grid point and per parameter of a basin map: float64 states, endpoints, statuses,
labels and their copies, with room for the solver's chunk buffers (bytes)."""


def basin_memory(grid: int, dim: int) -> float:
    """Estimated peak memory (bytes) of a ``grid × grid`` basin map of a ``dim``-parameter
    landscape (the solver works in bounded chunks; what grows is the per-point state)."""
    return float(grid) ** 2 * (dim + 2) * BYTES_PER_TRAJECTORY
