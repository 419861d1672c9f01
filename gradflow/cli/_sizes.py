"""Refusing sizes that cannot fit in memory, before anything is allocated, and long jobs that
were not asked for.

Every size option (a basin grid, a sequence length, a width, a batch) has an estimate of the
memory it needs; a command refuses a size whose estimate exceeds half of the memory available
now (:func:`gradflow._output.memory.check_memory`), in one line naming the option, the size and the
estimate.  A long job (a sweep, a fate map, a training run) also has a
:class:`gradflow.Estimate` of its duration: :func:`announce` refuses it past
:data:`gradflow._output.memory.LONG_S` without ``--allow-long`` and otherwise prints its size and
estimate on stderr before it starts.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = [
    "add_allow_long_argument",
    "announce",
    "check_config",
    "check_grid",
    "refuse_beyond_memory",
]


def add_allow_long_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """``--allow-long``: run ``what`` (``"a sweep"``) even where its estimate passes the limit."""
    from gradflow._output.memory import LONG_S, MACHINE, duration

    parser.add_argument(
        "--allow-long",
        action="store_true",
        help=f"run {what} estimated to take longer than {duration(LONG_S)} on {MACHINE} "
        "(refused otherwise); the size and the estimate are printed before it starts",
    )


def announce(command: str, estimate: Any, allow_long: bool, *, resumable: bool = True) -> None:
    """Refuse ``estimate`` (a :class:`gradflow.Estimate`) that cannot fit or runs past the limit
    without ``--allow-long``; else print ``gradflow COMMAND: <size and estimate>`` on stderr
    (and, for a ``resumable`` job, that Ctrl-C keeps its finished cells).

    Raises:
        GradflowError: one line with the size and the estimate.
    """
    estimate.check(allow_long, "--allow-long")
    resume = "; Ctrl-C keeps the finished cells, the same command resumes" if resumable else ""
    print(f"gradflow {command}: {estimate.line()}{resume}", file=sys.stderr, flush=True)


def refuse_beyond_memory(option: str, value: object, needed: float) -> None:
    """Raise when ``needed`` bytes exceed half of the memory available.

    Raises:
        GradflowError: one line naming the option, its value, the estimate and what is free.
    """
    from gradflow._output.memory import check_memory

    check_memory(f"{option} {value}".strip(), needed)


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
