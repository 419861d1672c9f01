"""Refusing sizes that cannot fit in memory, before anything is allocated.

Every size option (a basin grid, a sequence length, a width, a batch) has an estimate of the
memory it needs; a command refuses a size whose estimate exceeds half of the memory available
now, in one line naming the option, the size and the estimate.
"""

from __future__ import annotations

import os

__all__ = ["available_memory", "check_config", "check_grid", "refuse_beyond_memory"]

SHARE = 0.5
"""The share of the available memory a command may plan to use."""


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


def _gib(n: float) -> str:
    return f"{n / 2**30:.3g} GiB"


def refuse_beyond_memory(option: str, value: object, needed: float) -> None:
    """Raise when ``needed`` bytes exceed :data:`SHARE` of the memory available.

    Raises:
        GradflowError: one line naming the option, its value, the estimate and what is free.
    """
    from gradflow import GradflowError

    free = available_memory()
    if needed > SHARE * free:
        what = f"{option} {value}".strip()
        raise GradflowError(
            f"{what} needs about {_gib(needed)} of memory, more than half of the "
            f"{_gib(free)} available; choose smaller sizes"
        )


def check_grid(grid: int, dim: int, option: str) -> None:
    """Refuse a ``grid × grid`` basin map of a ``dim``-parameter model that cannot fit.

    Raises:
        GradflowError: a grid below 2, or one beyond the memory available.
    """
    from gradflow import GradflowError, basin_memory

    if grid < 2:
        raise GradflowError(f"{option} {grid} must be an integer ≥ 2")
    refuse_beyond_memory(option, grid, basin_memory(grid, dim))


def check_config(config: object, flags: dict[str, str]) -> None:
    """Refuse a configuration whose ``memory_bytes()`` estimate cannot fit; the message names
    its size options (``config.SIZES``, written as the options ``flags`` maps them to).

    Raises:
        GradflowError: the estimate exceeds the memory available.
    """
    estimate = getattr(config, "memory_bytes", None)
    if estimate is None:
        return
    sizes = " ".join(
        f"{flags.get(name, '--' + name)} {_shown(getattr(config, name))}"
        for name in getattr(config, "SIZES", ())
        if getattr(config, name) is not None
    )
    refuse_beyond_memory(sizes, "", estimate())


def _shown(value: object) -> str:
    return ",".join(map(str, value)) if isinstance(value, tuple) else str(value)
