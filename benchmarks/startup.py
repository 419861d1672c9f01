"""``gradflow bench startup``: how long the command line takes to answer.

Each command runs in a fresh interpreter, as a user runs it: ``--help`` of every command, figure
and benchmark (the names read off ``gradflow --help``, ``gradflow figures --help`` and
``gradflow bench --help``), a rejected argument, and the main job ``gradflow portrait --p 0.7
--q 0.6`` twice with an empty persistent compilation cache (``GRADFLOW_CACHE_DIR``), the first
run cold (compiling), the second warm (the cache filled by the first).  Each time is the median
of ``--repeats`` runs (the cold portrait: one run per fresh cache).  The machine's load average
at the start and the end is reported with them, since a shared machine slows every figure.

With the main job comes its floor, timed the same way: a fresh interpreter that only imports the
libraries every run of the main job needs (JAX, SymPy, SciPy's spatial module, matplotlib's
figure and its Agg backend: the portrait is a matplotlib figure) and starts JAX's CPU devices as
the command line does, computing nothing.  No change
to gradflow's own code can bring a run below it.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gradflow import GradflowError, format_table

__all__ = ["Config", "Report", "bench"]

MAIN_JOB = ("portrait", "--p", "0.7", "--q", "0.6")
"""The main job, timed cold and warm."""
REJECTED = ("portrait", "--p", "2", "--q", "0.6")
"""A rejected argument (``p`` outside ``(0, 1)``)."""
LAUNCH = "from gradflow.cli import main; raise SystemExit(main())"
"""What ``gradflow ARGS`` runs, started as ``python -c LAUNCH ARGS``."""
FLOOR = (
    "from gradflow.cli._setup import configure_jax; configure_jax(); "
    "import jax, sympy, scipy.spatial, matplotlib.figure, matplotlib.backends.backend_agg; "
    "jax.devices()"
)
"""The main job's floor: the libraries it cannot run without, imported, and JAX's devices
started (``python -c FLOOR``)."""


@dataclass(frozen=True)
class Config:
    """What to time.

    Raises:
        GradflowError: ``repeats`` below 1.
    """

    repeats: int = field(default=3, metadata={"help": "runs of each command (median reported)"})
    main_job: bool = field(
        default=True,
        metadata={"help": "time the main job, gradflow portrait --p 0.7 --q 0.6, cold and warm"},
    )

    def __post_init__(self) -> None:
        if self.repeats < 1:
            raise GradflowError(f"--repeats {self.repeats} must be ≥ 1")


@dataclass(frozen=True)
class Report:
    """What :func:`bench` measured (seconds, medians).

    Attributes:
        helps: ``{"gradflow train --help": s, …}`` for every command, figure and benchmark.
        rejected: a rejected argument (exit status 2).
        cold, warm: the main job with an empty compilation cache, and again with it filled;
            ``None`` when not timed.
        floor: :data:`FLOOR`, the imports and device start-up every run of the main job pays;
            ``None`` when the main job is not timed.
        load: the 1-minute load average before and after.
        cores: CPU cores of the machine.
    """

    config: Config
    helps: dict[str, float]
    rejected: float
    cold: float | None
    warm: float | None
    floor: float | None
    load: tuple[float, float]
    cores: int

    def metadata(self) -> dict[str, Any]:
        """Every time, the slowest ``--help``, the load and the cores."""
        return {
            "main_job": " ".join(("gradflow", *MAIN_JOB)),
            "cold_seconds": self.cold,
            "warm_seconds": self.warm,
            "floor_seconds": self.floor,
            "help_seconds": self.helps,
            "slowest_help_seconds": max(self.helps.values()),
            "rejected_seconds": self.rejected,
            "repeats": self.config.repeats,
            "load_average": list(self.load),
            "cores": self.cores,
        }

    def text(self) -> str:
        """The main job's times, then one row per ``--help``."""
        lines = [
            f"command-line start-up, {self.cores} cores, load average {self.load[0]:.1f} → "
            f"{self.load[1]:.1f}, median of {self.config.repeats}"
        ]
        if self.cold is not None and self.warm is not None and self.floor is not None:
            job = " ".join(("gradflow", *MAIN_JOB))
            lines.append(f"  {job}: {self.cold:.2f} s cold, {self.warm:.2f} s warm")
            lines.append(
                f"  its floor, importing JAX, SymPy, SciPy and matplotlib and starting JAX: "
                f"{self.floor:.2f} s (warm = {self.warm / self.floor:.1f} × floor)"
            )
        lines.append(f"  a rejected argument ({' '.join(REJECTED)}): {self.rejected:.2f} s")
        rows = [[command, f"{seconds:.2f}"] for command, seconds in self.helps.items()]
        lines.append(format_table(["--help of", "seconds"], rows))
        return "\n".join(lines)


def _run(
    args: tuple[str, ...], env: dict[str, str], cwd: Path, status: int = 0, code: str = LAUNCH
) -> float:
    """Wall time (s) of ``python -c CODE ARGS`` in a fresh interpreter: ``gradflow ARGS`` by
    default.

    Raises:
        GradflowError: the command exits with another status than ``status``.
    """
    begin = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, cwd=cwd, capture_output=True, text=True
    )
    seconds = time.perf_counter() - begin
    if done.returncode != status:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        what = f"gradflow {' '.join(args)}" if code == LAUNCH else f"python -c {code!r}"
        raise GradflowError(f"{what} exited with {done.returncode}: {last}")
    return seconds


def _names(help_text: str) -> list[str]:
    """The subcommands an argparse ``--help`` lists (lines ``    NAME  help``)."""
    return re.findall(r"^    (\S+)(?:\s{2,}|$)", help_text, flags=re.MULTILINE)


def _commands(env: dict[str, str], cwd: Path) -> list[tuple[str, ...]]:
    """Every command, figure and benchmark, read off the command line's own help."""

    def listed(*args: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", LAUNCH, *args, "--help"],
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            check=True,
        )
        return _names(done.stdout)

    commands: list[tuple[str, ...]] = [()]
    for name in listed():
        if name in ("figures", "bench"):
            commands += [(name, entry) for entry in listed(name)]
        else:
            commands.append((name,))
    return commands


def bench(config: Config) -> Report:
    """Time every ``--help``, a rejected argument and the main job (cold, then warm, then its
    floor)."""
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as folder:
        cwd = Path(folder)
        env = dict(os.environ, GRADFLOW_CACHE_DIR="")

        def median(args: tuple[str, ...], status: int = 0) -> float:
            return statistics.median(_run(args, env, cwd, status) for _ in range(config.repeats))

        helps = {
            " ".join(("gradflow", *command, "--help")): median((*command, "--help"))
            for command in _commands(env, cwd)
        }
        rejected = median(REJECTED, status=2)
        cold = warm = floor = None
        if config.main_job:
            colds, warms, floors = [], [], []
            for i in range(config.repeats):
                cache = cwd / f"cache{i}"
                job_env = dict(env, GRADFLOW_CACHE_DIR=str(cache))
                out = ("--out", str(cwd / "portrait.png"))
                colds.append(_run((*MAIN_JOB, *out), job_env, cwd))
                warms.append(_run((*MAIN_JOB, *out), job_env, cwd))
                floors.append(_run((), job_env, cwd, code=FLOOR))
            cold, warm = statistics.median(colds), statistics.median(warms)
            floor = statistics.median(floors)
    return Report(
        config=config,
        helps=helps,
        rejected=rejected,
        cold=cold,
        warm=warm,
        floor=floor,
        load=(load_start, os.getloadavg()[0]),
        cores=os.cpu_count() or 1,
    )
