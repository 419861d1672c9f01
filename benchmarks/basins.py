"""``gradflow bench basins``: the batched basin map against per-trajectory scipy integration.

Times a ``grid × grid`` basin map of the canonical ``(e, w)`` flow (p = 0.7, q = 0.6, box
[-3, 3]²) twice in one process, the first with JAX's persistent compilation cache and
gradflow's store of compiled executables off: the first call includes compilation, the second
does not.  A warm ``100 × 100`` map, timed in the same run,
shows whether the cost per trajectory stays flat as the grid grows.  Baselines, measured in the
same run on a random subsample of the same grid and extrapolated to the full grid:
``scipy.integrate.solve_ivp``, one initial condition at a time, with RK45 (scipy's default) and
with LSODA, each with the same vector field (the model's symbolic ``∇L`` lambdified to NumPy,
the fastest per-point path from Python; the jitted JAX Hessian as Jacobian for LSODA), the
tolerances of the map's float64 stages and the map's stop rule in the map's units
(docs/api.md, the loss's scales): the flow of ``L/g`` (``g`` the loss's gradient scale,
:func:`gradflow.loss_scales`) stops at a steady state ``‖∇L‖₂/g ≤ gtol``, at the flow-time
budget ``t_max·ℓ`` (``ℓ`` the length scale), or once the loss is below the map's decision
level (:func:`gradflow.shortcut_level`).  Each baseline trajectory is also
stopped after ``cap`` seconds of wall time; a baseline with capped trajectories counts each at
its cap, so its time is a lower bound and the speed-up is printed with "≥".
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gradflow import GradflowError, format_table, progress_bar

if TYPE_CHECKING:
    from gradflow import BoundModel

__all__ = ["Baseline", "Config", "Report", "bench"]

P, Q = 0.7, 0.6
SMALL_GRID = 100
"""The grid of the small map whose cost per trajectory is compared with the full grid's."""
BASELINES = {"scipy_rk45": "RK45", "scipy_lsoda": "LSODA"}
"""Report name → ``solve_ivp`` method of each baseline."""


@dataclass(frozen=True)
class Config:
    """Sizes of the benchmark.

    Raises:
        GradflowError: ``grid`` below 2, a sample count below 1 or a cap that is not positive.
    """

    grid: int = field(default=400, metadata={"help": "grid points per axis"})
    lsoda_samples: int = field(default=300, metadata={"help": "trajectories timed with LSODA"})
    rk45_samples: int = field(
        default=20,
        metadata={"help": "trajectories timed with RK45 (its stiff members take seconds each)"},
    )
    repeats: int = field(
        default=3,
        metadata={
            "help": "warm maps timed with and without the evidence, alternating; the least of"
            " each is reported (the other processes of a shared machine only add time)"
        },
    )
    cap: float = field(
        default=2.0,
        metadata={
            "help": "wall-clock seconds after which a baseline trajectory is stopped and counted"
            " at its cap (a lower bound)"
        },
    )

    def __post_init__(self) -> None:
        if self.grid < 2 or self.lsoda_samples < 1 or self.rk45_samples < 1:
            raise GradflowError("--grid must be ≥ 2 and the sample counts ≥ 1")
        if self.repeats < 1:
            raise GradflowError(f"--repeats {self.repeats} must be ≥ 1")
        if not self.cap > 0:
            raise GradflowError(f"--cap {self.cap!r} must be > 0 seconds")


@dataclass(frozen=True)
class Baseline:
    """One baseline's timing.

    Attributes:
        ms_per_trajectory: mean wall time per trajectory (ms), a capped one counted at its cap.
        samples: trajectories timed.
        capped: how many of them reached the wall-clock cap; where any did, the mean is a lower
            bound of the baseline's cost.
    """

    ms_per_trajectory: float
    samples: int
    capped: int


@dataclass(frozen=True)
class Report:
    """What :func:`bench` measured.

    Attributes:
        seconds, seconds_without_compile: the basin map's wall time with and without compiling
            (warm: the least of :attr:`Config.repeats` runs).
        seconds_without_evidence: the warm map's wall time without judging its labels proven
            or numerical (``gradflow.basins(evidence=False)``), the least of as many runs,
            alternating with the runs with it.
        evidence_seconds: the wall time the fastest warm map spent judging its labels
            (:attr:`gradflow.BasinMap.evidence_seconds`): the evidence's own cost, which a
            loaded machine does not blur as it blurs the difference of two maps' times.
        small_seconds: a warm :data:`SMALL_GRID` ² map's wall time.
        mean_steps, max_steps: solver steps per trajectory.
        cores: CPU cores of the machine; devices: JAX's devices.
        baselines: each baseline's timing (:class:`Baseline`), by report name.
    """

    config: Config
    seconds: float
    seconds_without_compile: float
    seconds_without_evidence: float
    evidence_seconds: float
    small_seconds: float
    mean_steps: float
    max_steps: int
    cores: int
    devices: tuple[str, ...]
    baselines: dict[str, Baseline]

    @property
    def trajectories(self) -> int:
        """Grid points, ``grid²``."""
        return self.config.grid**2

    def metadata(self) -> dict[str, Any]:
        """Timings, steps, devices, and per baseline its time, extrapolation and our speed-up
        (``lower_bound``: some of its trajectories were capped, so its time and the speed-ups
        are at least these)."""
        n = self.trajectories
        return {
            "grid": self.config.grid,
            "model": f"canonical p={P} q={Q}, box [-3, 3]^2",
            "seconds": self.seconds,
            "seconds_without_compile": self.seconds_without_compile,
            "seconds_without_evidence": self.seconds_without_evidence,
            "evidence_cost": self.seconds_without_compile / self.seconds_without_evidence,
            "evidence_seconds": self.evidence_seconds,
            "evidence_share": self.evidence_seconds / self.seconds_without_compile,
            "trajectories_per_second": n / self.seconds_without_compile,
            "us_per_trajectory": 1e6 * self.seconds_without_compile / n,
            "us_per_trajectory_small_grid": {
                "grid": SMALL_GRID,
                "us": 1e6 * self.small_seconds / SMALL_GRID**2,
            },
            "mean_steps": self.mean_steps,
            "max_steps": self.max_steps,
            "cores": self.cores,
            "devices": list(self.devices),
            "cap_seconds": self.config.cap,
            "baselines": {
                name: {
                    "ms_per_trajectory": b.ms_per_trajectory,
                    "samples": b.samples,
                    "capped": b.capped,
                    "lower_bound": b.capped > 0,
                    "extrapolated_seconds": b.ms_per_trajectory * n / 1e3,
                    "speedup": b.ms_per_trajectory * n / 1e3 / self.seconds,
                    "speedup_without_compile": (
                        b.ms_per_trajectory * n / 1e3 / self.seconds_without_compile
                    ),
                }
                for name, b in self.baselines.items()
            },
        }

    def text(self) -> str:
        """Two lines on the basin map, then one table row per baseline ("≥" where capped)."""
        record, n, grid = self.metadata(), self.trajectories, self.config.grid
        rows = []
        for name, b in record["baselines"].items():
            at_least = "≥ " if b["lower_bound"] else ""
            rows.append(
                [
                    name,
                    f"{at_least}{b['ms_per_trajectory']:.2f}",
                    f"{b['capped']} of {b['samples']}",
                    f"{at_least}{b['extrapolated_seconds']:.0f}",
                    f"{at_least}{b['speedup']:.0f}×",
                    f"{at_least}{b['speedup_without_compile']:.0f}×",
                ]
            )
        header = [
            "baseline",
            "ms/trajectory",
            f"capped at {self.config.cap:g} s",
            "full grid (s, extrapolated)",
            "speedup",
            "speedup (warm)",
        ]
        return "\n".join(
            [
                f"basin map of the canonical flow, {grid} × {grid} = {n} trajectories"
                f" (p = {P}, q = {Q}), {self.cores} cores",
                f"  gradflow: {self.seconds:.1f} s with compilation,"
                f" {self.seconds_without_compile:.1f} s without;"
                f" {record['trajectories_per_second']:,.0f} trajectories/s;"
                f" mean {self.mean_steps:.1f} steps, max {self.max_steps}",
                f"  the labels' evidence (proven or numerical): judging them took"
                f" {self.evidence_seconds:.3f} s of the warm map"
                f" ({100 * record['evidence_share']:.1f} %); the map end to end"
                f" {self.seconds_without_compile:.2f} s with, {self.seconds_without_evidence:.2f} s"
                f" without ({record['evidence_cost']:.3f}×, least of {self.config.repeats} each)",
                f"  cost per trajectory (warm): {record['us_per_trajectory']:.1f} µs at {grid}²,"
                f" {record['us_per_trajectory_small_grid']['us']:.1f} µs at {SMALL_GRID}²",
                "  baselines: the map's stop rule in its units (‖∇L‖/g ≤ gtol, the flow-time"
                " budget t_max·ℓ/g, its decision level), each trajectory capped in wall time",
                format_table(header, rows),
            ]
        )


class _Capped(Exception):
    """A baseline trajectory ran past its wall-clock cap."""


def _scipy_baseline(
    model: BoundModel, starts: np.ndarray, method: str, level: float | None, cap: float
) -> Baseline:
    """``solve_ivp`` from each of ``starts`` with the map's float64 stop rule in the map's units
    (the flow of ``L/g`` in the time ``τ = g·t``, stopping at ``‖∇L‖₂/g ≤ gtol``, at
    ``τ = t_max·ℓ``, or at a loss below ``level``), each trajectory stopped after ``cap``
    seconds (counted at ``cap``)."""
    import sympy as sp
    from scipy.integrate import solve_ivp

    from gradflow import default_basin_options, lambdify_numpy, loss_scales

    h = [float(x) for x in np.asarray(model.h)]
    m = model.model
    symbols = (*m.params, *m.hyperparams)
    loss = lambdify_numpy(symbols, m.loss)
    grad = lambdify_numpy(symbols, [sp.diff(m.loss, s) for s in m.params])
    hessian, h_array = model.compiled.hessian, model.h
    options = default_basin_options()[-1]
    scales = loss_scales(model)
    g = scales.gradient
    deadline = [0.0]

    def rhs(t: float, y: np.ndarray) -> np.ndarray:
        if time.perf_counter() > deadline[0]:
            raise _Capped
        return -np.asarray(grad(*y, *h)) / g

    def steady(t: float, y: np.ndarray) -> float:
        return float(np.linalg.norm(grad(*y, *h))) / g - options.gtol

    def decided(t: float, y: np.ndarray) -> float:
        return float(loss(*y, *h)) - (-np.inf if level is None else level)

    steady.terminal = decided.terminal = True
    extra = {"jac": lambda t, y: -np.asarray(hessian(y, h_array)) / g} if method == "LSODA" else {}
    total, capped = 0.0, 0
    with progress_bar(
        total=len(starts), unit="trajectory", enabled=True, desc=f"scipy {method}"
    ) as bar:
        for y0 in starts:
            begin = time.perf_counter()
            deadline[0] = begin + cap
            try:
                solve_ivp(
                    rhs,
                    (0.0, options.t_max * scales.length),
                    y0,
                    method=method,
                    rtol=options.rtol,
                    atol=options.atol,
                    events=(steady, decided),
                    **extra,
                )
                total += time.perf_counter() - begin
            except _Capped:
                total, capped = total + cap, capped + 1
            bar.update(1)
    return Baseline(1e3 * total / len(starts), len(starts), capped)


@contextlib.contextmanager
def _nothing_kept() -> Iterator[None]:
    """Within the block, JAX's persistent compilation cache and gradflow's store of compiled
    executables are off (``GRADFLOW_CACHE_DIR=""``), so that the first map compiles; both are
    restored after it."""
    import jax

    enabled = jax.config.jax_enable_compilation_cache
    folder = os.environ.get("GRADFLOW_CACHE_DIR")
    jax.config.update("jax_enable_compilation_cache", False)
    os.environ["GRADFLOW_CACHE_DIR"] = ""
    try:
        yield
    finally:
        jax.config.update("jax_enable_compilation_cache", enabled)
        if folder is None:
            os.environ.pop("GRADFLOW_CACHE_DIR")
        else:
            os.environ["GRADFLOW_CACHE_DIR"] = folder


def bench(config: Config) -> Report:
    """Time the basin map (cold, then warm) and the scipy baselines on subsamples of its grid."""
    import jax

    from gradflow import Region, basins, critical_sets, loss_scales, shortcut_level
    from gradflow.systems import markov

    with _nothing_kept():
        model = markov.canonical(P, Q)
        begin = time.perf_counter()
        basins(model, region=Region.of(model, grid=config.grid))
        cold = time.perf_counter() - begin
    with_evidence, without, maps = [], [], []
    for _ in range(config.repeats):
        begin = time.perf_counter()
        maps.append(basins(model, region=Region.of(model, grid=config.grid)))
        with_evidence.append(time.perf_counter() - begin)
        begin = time.perf_counter()
        basins(model, region=Region.of(model, grid=config.grid), evidence=False)
        without.append(time.perf_counter() - begin)
    warm, plain = min(with_evidence), min(without)
    result = maps[int(np.argmin(with_evidence))]
    del maps
    basins(model, region=Region.of(model, grid=SMALL_GRID), progress=False)
    begin = time.perf_counter()
    basins(model, region=Region.of(model, grid=SMALL_GRID), progress=False)
    small = time.perf_counter() - begin
    region = Region.of(model, config.grid)
    thetas = region.points()
    critical = critical_sets(model, box=region.search_box(model))
    level = shortcut_level(critical, loss_scales(model).loss) if model.sublevel_shortcut else None
    rng = np.random.default_rng(0)
    flat = thetas.reshape(-1, model.model.dim)
    samples = {"LSODA": config.lsoda_samples, "RK45": config.rk45_samples}
    timed = {
        method: _scipy_baseline(
            model,
            flat[rng.choice(len(flat), min(samples[method], len(flat)), replace=False)],
            method,
            level,
            config.cap,
        )
        for method in ("LSODA", "RK45")
    }
    return Report(
        config=config,
        seconds=cold,
        seconds_without_compile=warm,
        seconds_without_evidence=plain,
        evidence_seconds=result.evidence_seconds,
        small_seconds=small,
        mean_steps=float(result.steps.mean()),
        max_steps=int(result.steps.max()),
        cores=os.cpu_count() or 1,
        devices=tuple(str(d) for d in jax.devices()),
        baselines={name: timed[method] for name, method in BASELINES.items()},
    )
