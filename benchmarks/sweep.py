"""``gradflow bench sweep``: a phase-diagram sweep of the canonical model over ``(p, q)``.

Times :func:`gradflow.sweep` over ``cells × cells`` values of ``(p, q)`` evenly spaced in
[0.05, 0.95] (both ends included), each cell a ``grid × grid`` basin map on the default box with
its critical sets, from a cold process (compilation included: the hyperparameters are arguments,
so the sweep compiles once).  The baseline, measured in the same run once the sweep is done (so
warm), is one stand-alone cell — :func:`gradflow.critical_sets` and :func:`gradflow.basins` at
p = 0.7, q = 0.6: the ratio of the sweep to as many warm stand-alone cells is the sweep's
overhead, compilation included (below 1: the sweep's cells are cheaper than that one).  The
branches, bifurcations and attractor tracks (:func:`gradflow.follow`) are timed on their own
after the cells, in the same run: their ratio to the cells is what they add to a sweep.

With ``--workers 1,2`` the same sweep then runs on a local Dask cluster of each number of worker
processes (a fresh cluster each, its start-up timed apart), with the speed-up against the first
number, and the scheduler's own cost per cell is measured on the last cluster: cells that
compute nothing, ``OVERHEAD_CELLS`` of them.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gradflow import GradflowError

__all__ = ["Config", "Report", "bench"]

LOW, HIGH = 0.05, 0.95
"""The range of ``p`` and of ``q``."""
P, Q = 0.7, 0.6
"""The stand-alone cell of the baseline."""
OVERHEAD_CELLS = 400
"""Empty cells timed on a cluster: the scheduler's cost per cell."""


@dataclass(frozen=True)
class Config:
    """Sizes of the benchmark.

    Raises:
        GradflowError: ``cells`` below 1 or ``grid`` below 2.
    """

    cells: int = field(default=19, metadata={"help": "values of p and of q (cells per axis)"})
    grid: int = field(default=101, metadata={"help": "basin grid points per axis in every cell"})
    workers: tuple[int, ...] = field(
        default=(),
        metadata={
            "help": "worker counts (e.g. 1,2): the sweep again on a local Dask cluster of each, "
            "with the speed-up against the first (default: none)"
        },
    )

    def __post_init__(self) -> None:
        if self.cells < 1 or self.grid < 2:
            raise GradflowError("--cells must be ≥ 1 and --grid ≥ 2")
        if any(n < 1 for n in self.workers):
            raise GradflowError(f"--workers {self.workers}: every count must be ≥ 1")


@dataclass(frozen=True)
class Report:
    """What :func:`bench` measured.

    Attributes:
        seconds: the sweep's wall time, compilation included.
        follow_seconds: following its branches, bifurcations and attractors afterwards.
        cell_seconds: one warm stand-alone cell (critical sets and basin map).
        cores: CPU cores of the machine; devices: JAX's devices.
        cluster_seconds: the sweep on a local cluster, by worker count.
        cluster_startup_seconds: starting each cluster, by worker count.
        overhead_seconds: the scheduler's cost per empty cell on the last cluster.
        load: the 1-minute load average before and after.
    """

    config: Config
    seconds: float
    follow_seconds: float
    cell_seconds: float
    cores: int
    devices: tuple[str, ...]
    cluster_seconds: dict[int, float] = field(default_factory=dict)
    cluster_startup_seconds: dict[int, float] = field(default_factory=dict)
    overhead_seconds: float | None = None
    load: tuple[float, float] = (0.0, 0.0)

    @property
    def cells(self) -> int:
        """Cells of the sweep, ``cells²``."""
        return self.config.cells**2

    @property
    def trajectories(self) -> int:
        """Trajectories integrated, ``cells² · grid²``."""
        return self.cells * self.config.grid**2

    def metadata(self) -> dict[str, Any]:
        """Sizes, times, trajectories per second and the ratio to warm stand-alone cells."""
        return {
            "model": "canonical",
            "p": [LOW, HIGH, self.config.cells],
            "q": [LOW, HIGH, self.config.cells],
            "grid": self.config.grid,
            "cells": self.cells,
            "trajectories": self.trajectories,
            "seconds": self.seconds,
            "seconds_per_cell": self.seconds / self.cells,
            "trajectories_per_second": self.trajectories / self.seconds,
            "baseline_cell_seconds": self.cell_seconds,
            "ratio_to_warm_cells": self.seconds / (self.cell_seconds * self.cells),
            "follow_seconds": self.follow_seconds,
            "ratio_with_bifurcations": (self.seconds + self.follow_seconds) / self.seconds,
            "cores": self.cores,
            "devices": list(self.devices),
            "cluster_seconds": self.cluster_seconds,
            "cluster_startup_seconds": self.cluster_startup_seconds,
            "speedup": self.speedup(),
            "scheduler_seconds_per_cell": self.overhead_seconds,
            "load_average": list(self.load),
        }

    def speedup(self) -> dict[int, float]:
        """Each cluster's speed-up against the first worker count's."""
        if not self.cluster_seconds:
            return {}
        first = next(iter(self.cluster_seconds.values()))
        return {n: first / seconds for n, seconds in self.cluster_seconds.items()}

    def text(self) -> str:
        """Three lines: the sweep, its rate, the baseline."""
        r = self.metadata()
        n = self.config.cells
        lines = [
            f"  on {workers} Dask worker{'s' if workers > 1 else ''}: {seconds:.0f} s "
            f"({self.speedup()[workers]:.2f}× the first; the cluster started in "
            f"{self.cluster_startup_seconds[workers]:.1f} s)"
            for workers, seconds in self.cluster_seconds.items()
        ]
        if self.overhead_seconds is not None:
            lines.append(f"  the scheduler's cost per cell: {1e3 * self.overhead_seconds:.1f} ms")
        return "\n".join(
            [
                f"sweep of the canonical model, p, q in [{LOW}, {HIGH}] ({n} × {n} cells),"
                f" grid {self.config.grid}² per cell, {self.cores} cores, load average"
                f" {self.load[0]:.1f} → {self.load[1]:.1f}",
                f"  {self.seconds:.0f} s with compilation ({r['seconds_per_cell']:.2f} s per"
                f" cell, {r['trajectories_per_second']:,.0f} trajectories/s,"
                f" {self.trajectories:,} in all)",
                f"  one stand-alone cell (warm): {self.cell_seconds:.2f} s; the sweep takes"
                f" {r['ratio_to_warm_cells']:.2f}× as long as {self.cells} of them",
                f"  branches, bifurcations and attractor tracks: {self.follow_seconds:.1f} s more"
                f" ({r['ratio_with_bifurcations']:.3f}× the sweep)",
                *lines,
            ]
        )


def bench(config: Config) -> Report:
    """Run the sweep from cold, then time one stand-alone warm cell, then the sweep on each
    cluster."""
    import jax

    from gradflow import Region, basins, critical_sets, follow, sweep
    from gradflow.systems import markov

    load = os.getloadavg()[0]
    values = np.linspace(LOW, HIGH, config.cells)
    reduced = markov.canonical_model()
    begin = time.perf_counter()
    cells = sweep(
        reduced,
        {"p": values, "q": values},
        region=Region.of(reduced, grid=config.grid),
        progress=True,
        bifurcations=False,
    )
    seconds = time.perf_counter() - begin
    begin = time.perf_counter()
    follow(reduced, cells)
    follow_seconds = time.perf_counter() - begin
    model = markov.canonical(P, Q)
    region = Region.of(model, config.grid)
    basins(model, region=region, progress=False)
    begin = time.perf_counter()
    basins(model, region=region, critical=critical_sets(model, box=region.search_box(model)))
    cell = time.perf_counter() - begin
    clusters = _on_clusters(config, reduced, {"p": values, "q": values})
    return Report(
        config=config,
        seconds=seconds,
        follow_seconds=follow_seconds,
        cell_seconds=cell,
        cores=os.cpu_count() or 1,
        devices=tuple(str(d) for d in jax.devices()),
        **clusters,
        load=(load, os.getloadavg()[0]),
    )


def _empty(cell: int) -> dict[str, int]:
    """A cell that computes nothing (the scheduler's cost alone)."""
    return {"cell": cell}


def _on_clusters(config: Config, reduced: Any, axes: dict[str, np.ndarray]) -> dict[str, Any]:
    """The sweep on a fresh local cluster of each of ``config.workers`` processes (start-up
    apart), and the scheduler's cost per empty cell on the last."""
    if not config.workers:
        return {}
    from distributed import Client, LocalCluster

    from gradflow import Region, run_cells, sweep

    seconds, startup, overhead = {}, {}, None
    for workers in config.workers:
        begin = time.perf_counter()
        with (
            LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0"
            ) as cluster,
            Client(cluster) as client,
        ):
            client.wait_for_workers(workers)
            startup[workers] = time.perf_counter() - begin
            begin = time.perf_counter()
            sweep(
                reduced,
                axes,
                region=Region.of(reduced, grid=config.grid),
                progress=True,
                bifurcations=False,
                client=client,
            )
            seconds[workers] = time.perf_counter() - begin
            run_cells(_empty, list(range(10)), progress=False, client=client)
            begin = time.perf_counter()
            run_cells(_empty, list(range(OVERHEAD_CELLS)), progress=False, client=client)
            overhead = (time.perf_counter() - begin) / OVERHEAD_CELLS
    return {
        "cluster_seconds": seconds,
        "cluster_startup_seconds": startup,
        "overhead_seconds": overhead,
    }
