"""How a fate map integrates its full runs: the options of the sliding integrator, and for runs
with noise gradient descent with handovers to it.

A run without noise starts on the reduced family, where the kinks of a prefix coincide, and
:func:`gradflow.slide` slides on them as one (:func:`full_options`).  Noise splits each such kink
into many close ones, which the sliding integrator locates one by one, so a run with noise is
trained by gradient descent (:func:`descent_options`), the flow's Euler scheme: on a kink its
iterates chatter across it within ``O(η)`` and their mean follows the sliding motion.  At a small
gradient (:data:`HANDOVERS`) the run is handed to :func:`gradflow.slide`, whose steps grow where
the flow is slow and not stiff (beside a minimum) while descent keeps its step, within a step
budget; a handover that does not decide the run is undone, and descent goes on
(:func:`descended`).

:func:`recorded_paths` gives the paths a fate map reads its evidence off: a run without noise
its own recorded steps; a run with noise whose fate is decided and differs from the reduced
prediction at its ``θ0`` (in either metric) its gradient descent replayed from the same start
with the same step and recorded (:data:`RECORDED` points), to the run's stop: the descent it
ran, and after a handover the Euler scheme of the flow the sliding integrator followed.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator

import jax
import numpy as np

from gradflow import (
    PID,
    FlowEndpoints,
    FlowOptions,
    GradientDescent,
    Outcome,
    SlideResult,
    StopRule,
    flow_endpoints,
    slide,
)

from .config import FateConfig
from .departure import Path
from .full_landscape import FullLandscape, full_field
from .full_model import MarkovFullModel

__all__ = [
    "DESCENT_CHUNK",
    "DESCENT_ROUND",
    "DESCENT_SHARE",
    "FULL_ATOL",
    "FULL_RTOL",
    "HANDOVERS",
    "RECORDED",
    "UNFINISHED",
    "descended",
    "descent_options",
    "full_options",
    "recorded_paths",
]

FULL_RTOL = 1e-6
"""Relative local-error tolerance of a full run (:func:`full_options`)."""
FULL_ATOL = 1e-9
"""Absolute local-error tolerance of a full run, weight units (:func:`full_options`)."""


def full_options(config: FateConfig) -> FlowOptions:
    """Tolerances and stop rule of a full run: a steady state at ``gtol``, budgets ``t_max``
    and ``max_steps``.  ``atol`` sits far below ``gtol``/λ_max (``1e-6/23`` at the default
    ``gtol`` and the largest full Hessian eigenvalue met on the default box): an explicit solver
    at its stability limit keeps a residual of about ``atol`` in the state, ``λ_max·atol`` in the
    gradient."""
    return FlowOptions(
        solver="Tsit5",
        controller=PID(rtol=FULL_RTOL, atol=FULL_ATOL),
        stop=StopRule(
            gtol=config.gtol, t_max=config.t_max, max_steps=config.max_steps, divergence_radius=1e3
        ),
    )


DESCENT_SHARE = 0.5
"""Share of the flow-time budget a run with noise spends in gradient descent before
:func:`gradflow.slide` continues it, if still undecided."""
DESCENT_CHUNK = 1
"""Runs descended together.  A full gradient costs the same per run in a batch of 1 as of 8
(0.18–0.21 ms warm), and a batch pays for each of its slots until its slowest member stops, so
the runs are descended one at a time, the rest of the grid queued behind (the σ = 0.1 grid at
p = 0.5, q = 0.8: 29 s warm one at a time, 42 s eight at a time)."""
DESCENT_ROUND = 256
"""Descent steps of a run between two returns to the host: a run leaves its round at its stop,
so a longer round only saves trips."""
HANDOVERS = ((3e-3, 30), (1e-3, 200))
"""``(gradient norm, step budget)`` of each handover of a run with noise from gradient descent
to :func:`gradflow.slide`, in turn.  Beside the reduced local set the flow is slow and not
stiff, so Tsit5's steps grow to several time units while descent keeps its step ``η``: at
p = 0.5, q = 0.8, σ = 0.01 a run goes from ``‖∇L‖ = 10⁻³`` (nats per weight unit) to ``10⁻⁶``
in 13 steps of the sliding integrator, against about 2,500 of descent.  A run the sliding
integrator does not decide within the budget (the flow is still stiff there, or it met the
many close kinks that noise makes, each located on its own) goes back to its state at the
handover and descends on to the next handover.  A run decided after a handover stops at the end
of the step that met the test, so its stopping time is known to within that step: the run from
``(e0, w0) = (0.1, 0.36)`` (σ = 0.01, seed 0) stops at ``t = 75.2``, descent alone at ``t = 67.4``
(3,368 steps)."""


def descent_options(config: FateConfig, gtol: float | None = None) -> FlowOptions:
    """Gradient descent of a run with noise: step ``config.lr`` (flow time per step), the
    steady-state test ``‖∇L‖ ≤ gtol`` (default the full runs' ``config.gtol``), their
    divergence radius, :data:`DESCENT_SHARE` of ``t_max``."""
    t_max = DESCENT_SHARE * config.t_max
    return FlowOptions(
        solver=GradientDescent(config.lr),
        stop=StopRule(
            gtol=config.gtol if gtol is None else gtol,
            t_max=t_max,
            max_steps=int(t_max / config.lr) + 1,
            divergence_radius=1e3,
        ),
    )


def _descend(
    land: FullLandscape, starts: np.ndarray, options: FlowOptions, level: float, t0: np.ndarray
) -> FlowEndpoints:
    """Gradient descent of a batch of runs (``options``) from flow times ``t0``, each stopped
    at the first iterate that meets the stop rule or is below ``level``; stops on a kink left
    to the caller."""
    return flow_endpoints(
        land,
        starts,
        options,
        decide_below=level,
        t0=t0,
        chunk_size=DESCENT_CHUNK,
        steps_per_round=DESCENT_ROUND,
        escape_check=False,
        slide_on_kinks=False,
        progress=False,
    )


def _continued(
    land: FullLandscape, options: FlowOptions, y: np.ndarray, t: float, code: int, level: float
) -> SlideResult:
    """A descended run at ``y``, flow time ``t``: decided (its stop as a result with no
    sliding-integrator step), or still running and continued by :func:`gradflow.slide` with
    ``options``."""
    if code == Outcome.NOT_CONVERGED:
        return slide(land.kinks, y, land.h, options, decide_below=level, t0=t)
    return SlideResult(y, t, 0, Outcome(int(code)), np.zeros(0), np.zeros((0, y.size)))


def descended(
    land: FullLandscape, starts: np.ndarray, config: FateConfig, level: float
) -> tuple[list[SlideResult], np.ndarray]:
    """The runs with noise from ``starts`` (shape ``(runs, dim)``): gradient descent until
    decided or at the first of :data:`HANDOVERS`' gradient norms, then :func:`gradflow.slide`
    within that handover's step budget; a run it leaves undecided descends again from its
    handover state to the next handover, and after the last to the full ``gtol``.  A run still
    undecided after :data:`DESCENT_SHARE` of the time budget is continued by the sliding
    integrator.  Returns the results and the descent steps per run; a result's steps include
    those of the handovers that were undone."""
    descent = np.zeros(len(starts), dtype=np.int64)
    wasted = np.zeros(len(starts), dtype=np.int64)
    runs: list[SlideResult | None] = [None] * len(starts)
    active, ys, ts = np.arange(len(starts)), starts, np.zeros(len(starts))
    options = full_options(config)
    ladder: list[tuple[float, FlowOptions | None]] = [
        (g, options.with_stop(max_steps=steps)) for g, steps in HANDOVERS if g > config.gtol
    ]
    ladder.append((config.gtol, None))
    for gtol, handover in ladder:
        stop = _descend(land, ys, descent_options(config, gtol), level, ts)
        descent[active] += stop.steps
        undone = []
        for k, i in enumerate(active):
            y, t, code = stop.endpoints[k], float(stop.times[k]), int(stop.status[k])
            if code == Outcome.CONVERGED and handover is not None:
                run = slide(land.kinks, y, land.h, handover, decide_below=level, t0=t)
                if run.steps >= handover.max_steps:
                    wasted[i] += run.steps
                    undone.append(k)
                    continue
            else:
                run = _continued(land, options, y, t, code, level)
            runs[i] = dataclasses.replace(run, steps=run.steps + wasted[i])
        active, ys, ts = active[undone], stop.endpoints[undone], stop.times[undone]
        if not active.size:
            break
    return runs, descent


UNFINISHED = ("undecided", "kink")
"""Fates of a run whose outcome is not known (reason ``slow-corner``): not replayed."""
RECORDED = 400
"""Most recorded points of a replayed descent (:func:`recorded_paths`): one every
``⌈steps/400⌉`` steps, so the path's cubic interpolation spans a few dozen steps of ``η``."""


@functools.cache
def _descent_chunk(full: MarkovFullModel, lr: float, stride: int) -> Callable[..., jax.Array]:
    """``stride`` gradient-descent steps of step ``lr`` for a batch of weight vectors."""
    grad = jax.grad(full_field(full).loss)

    def chunk(w: jax.Array, h: jax.Array) -> jax.Array:
        return jax.lax.scan(lambda v, _: (v - lr * grad(v, h), None), w, None, length=stride)[0]

    return jax.jit(jax.vmap(chunk, in_axes=(0, None)))


def recorded_paths(
    land: FullLandscape,
    runs: list[SlideResult],
    starts: np.ndarray,
    clean: np.ndarray,
    fates: list[str],
    labels: dict[str, Callable[[np.ndarray], np.ndarray]],
    config: FateConfig,
) -> Iterator[tuple[int, Path]]:
    """``(index, path)`` of the runs whose evidence a fate map reads (module docstring).

    Args:
        land: the full landscape.
        runs: the runs, from ``starts`` (shape ``(runs, P)``); without noise recorded by
            :func:`gradflow.slide` (``starts`` equal to ``clean``).
        clean: the embedded ``θ0`` of each run, shape ``(runs, P)``.
        fates: each run's fate name.
        labels: per metric, the reduced prediction of a batch of full states read at their
            projection (at most :data:`~gradflow.systems.markov.departure.LABELLED` at once).
        config: the map's settings (its descent step ``lr``).
    """
    if np.array_equal(starts, clean):
        for i, run in enumerate(runs):
            yield i, Path(run.ts, run.thetas, -land.grad(run.thetas))
        return
    chunks = range(0, len(clean), 32)
    predicted = [np.concatenate([f(clean[k : k + 32]) for k in chunks]) for f in labels.values()]
    unlike = np.any([np.asarray(fates) != p for p in predicted], axis=0)
    wanted = np.flatnonzero(unlike & ~np.isin(fates, UNFINISHED))
    for group in np.array_split(wanted, -(-len(wanted) // DESCENT_CHUNK_RECORDED) or 1):
        if not group.size:
            continue
        steps = int(np.ceil(max(runs[i].time for i in group) / config.lr))
        stride = -(-steps // RECORDED)
        step = _descent_chunk(land.full, config.lr, stride)
        ys, w = [starts[group]], jax.numpy.asarray(starts[group])
        for _ in range(-(-steps // stride)):
            w = step(w, land.h)
            ys.append(np.asarray(w))
        ts = stride * config.lr * np.arange(len(ys))
        for n, i in enumerate(group):
            keep = int(np.searchsorted(ts, runs[i].time, side="left")) + 1
            path = np.stack([y[n] for y in ys[:keep]])
            yield int(i), Path(ts[:keep], path, -land.grad(path))


DESCENT_CHUNK_RECORDED = 8
"""Runs replayed together by :func:`recorded_paths` (a full gradient costs the same per run in
a batch of 1 as of 8; the batch steps to its slowest member's stop)."""
