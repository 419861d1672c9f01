"""Many trajectories of one gradient flow, keeping only where each one stopped.

Trajectories are integrated in rounds of a bounded number of solver steps on fixed-size chunks;
the members still running after a round are re-batched for the next, so no member waits for the
slowest one of the batch, and each continues with the step size it had reached (the steps of one
long solve).  Each chunk is split over every visible JAX device along the batch
axis (``jax.sharding``), so the same code uses two forced host devices on a 2-core CPU, several
GPUs, or the devices of several hosts under ``jax.distributed``.  Several stages (e.g. an
explicit solver, then an implicit one for the stiff remainder) can be chained: members whose
step budget runs out in one stage continue from where they stopped in the next, except those
stalled beside a nondegenerate minimum, whose endpoint Newton's method gives
(:mod:`gradflow._flow.newton_finish`).
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .._compiled.store import stored_for
from .._errors import GradflowError
from .._landscape.base import GradientField, host_cast
from .._outcome import Outcome
from .._output.progress import progress_bar
from .descent import descent_round
from .integrate import solve, status_code
from .newton_finish import newton_finish
from .options import FlowOptions

__all__ = ["FlowEndpoints", "integrate_batch", "prepare_rounds", "small_tails"]


@dataclass(frozen=True)
class FlowEndpoints:
    """Where each trajectory of a batch stopped.

    Attributes:
        endpoints: shape ``(B, dim)``.
        times: flow time at the stop, shape ``(B,)``.
        steps: solver steps taken, accepted and rejected, shape ``(B,)``.
        status: :class:`Outcome` codes, shape ``(B,)``.
    """

    endpoints: np.ndarray
    times: np.ndarray
    steps: np.ndarray
    status: np.ndarray


@dataclass
class _BatchState:
    """Mutable per-member state of a batched integration: ``dt`` is the step a member tries
    next in its stage (0: none yet)."""

    y: np.ndarray
    t: np.ndarray
    dt: np.ndarray
    steps: np.ndarray
    status: np.ndarray


def integrate_batch(
    field: GradientField,
    args: Any,
    thetas0: np.ndarray,
    stages: Sequence[FlowOptions],
    *,
    decide_below: float | None = None,
    chunk_size: int = 4096,
    steps_per_round: int = 32,
    progress: bool | None = None,
    dtype: Any = np.float64,
    audit: Callable[[np.ndarray], np.ndarray] | None = None,
    desc: str | None = None,
    t0: np.ndarray | None = None,
) -> FlowEndpoints:
    """Integrate the trajectories from ``thetas0`` (shape ``(B, dim)``, finite) to their stops.

    Args:
        field: the loss and gradient.
        args: passed to the field.
        thetas0: initial points.
        stages: solver and stopping rule of each stage, tried in turn.  A member of a stage
            followed by another is tested by :func:`~gradflow._flow.newton_finish.newton_finish` when
            its steps in the stage reach :data:`FINISH_AFTER` times a power of two and when its
            budget runs out: a member beside a nondegenerate minimum stops there, converged
            (its time is the flow time of the test), instead of continuing in the next stage.
        decide_below: stop a trajectory as :attr:`Outcome.GLOBAL_MIN` once its loss is below this
            level.
        chunk_size: at most this many members are integrated together.  Each stage compiles
            one batch size: ``chunk_size``, or for a stage with fewer members the smallest of
            64, 256, 1024 that holds them; later rounds of the stage, with fewer members, are padded
            to it rather than traced and compiled again (a diffrax round takes seconds to
            trace, every process, while a padded round of 4,096 members takes milliseconds),
            except within :func:`small_tails`.
        steps_per_round: solver steps before unfinished members are re-batched.
        progress: show a progress bar (default: only once the batch has run for 1.5 s).
        dtype: the floating type of the integration (``numpy.float32`` for a fast first pass:
            on a CPU, float32 transcendental functions cost about an eighth of float64's); the
            floating arguments are cast to it.
        audit: the escape test of converged endpoints (points ``(m, dim)`` to a boolean
            ``(m,)``, true where the flow leaves: :func:`~gradflow._flow.integrate.escaping`).  The
            rounds stop members at a small gradient alone, which is cheap; the members the
            audit rejects are integrated on through the stages with the escape test in their
            stopping rule (``strict``, :func:`~gradflow._flow.integrate.status_code`), which no
            longer stops them until they have left.  ``None``: no audit (a first pass whose
            endpoints at saddles are integrated again anyway).
        desc: what the progress bar is of (``"σ = 0.01, seed 2"``); it counts finished
            trajectories, without a time left (they finish in rounds, most at the end).
        t0: the flow time of each start, shape ``(B,)`` (default 0): a member resumed at
            ``t0`` has ``t_max - t0`` of its time budget left.

    Returns:
        Endpoints, stopping times, step counts and status codes, in the order of ``thetas0``
        (endpoints and times as float64).

    Raises:
        GradflowError: no stage given.
    """
    if not stages:
        raise GradflowError("options must name at least one FlowOptions stage")
    n = thetas0.shape[0]
    state = _BatchState(
        y=np.array(thetas0, dtype=dtype),
        t=np.zeros(n, dtype=dtype) if t0 is None else np.array(t0, dtype=dtype),
        dt=np.zeros(n, dtype=dtype),
        steps=np.zeros(n, dtype=np.int64),
        status=np.full(n, int(Outcome.NOT_CONVERGED)),
    )
    level = host_cast(-np.inf if decide_below is None else decide_below, dtype)
    args = _cast(args, dtype)
    run = functools.partial(
        _run_stages, field, args, level, state, stages, chunk_size, steps_per_round
    )
    with progress_bar(n, "trajectory", progress, desc, even=False) as bar:
        run(np.arange(n), bar, strict=False)
        done = np.flatnonzero(state.status == Outcome.CONVERGED)
        if audit is not None and done.size:
            leaving = done[np.asarray(audit(state.y[done].astype(np.float64)), dtype=bool)]
            state.status[leaving] = int(Outcome.NOT_CONVERGED)
            if leaving.size:
                bar.total += leaving.size
                run(leaving, bar, strict=True)
    return FlowEndpoints(
        endpoints=state.y.astype(np.float64),
        times=state.t.astype(np.float64),
        steps=state.steps,
        status=state.status,
    )


def _cast(args: Any, dtype: Any) -> Any:
    """The floating leaves of ``args`` cast to ``dtype`` (on the host), the others as they are."""
    return jax.tree.map(
        lambda a: host_cast(a, dtype) if jnp.issubdtype(jnp.result_type(a), jnp.floating) else a,
        args,
    )


def prepare_rounds(
    field: GradientField,
    args: Any,
    shape: tuple[int, int],
    stage: FlowOptions,
    *,
    chunk_size: int = 4096,
    steps_per_round: int = 32,
    dtype: Any = np.float64,
) -> None:
    """Load or compile the program of the first rounds that :func:`integrate_batch` runs for
    starts of ``shape`` ``(B, dim)`` in its first stage ``stage`` with these settings, by
    running one round from the origin: called in a second thread while the caller computes what
    the integration needs first (a basin map's critical sets), the program is ready, or being
    made, when the integration starts (the round function waits for it rather than compiling
    it again, :class:`~gradflow._compiled.store.StoredProgram`).  Nothing is returned; no
    result depends on whether it ran."""
    size = _padded(shape[0], chunk_size)
    advance = _round_function(field, stage, steps_per_round, False)
    zeros = np.zeros(size, dtype=dtype)
    start = _spread(np.zeros((size, shape[1]), dtype=dtype)), _spread(zeros), _spread(zeros)
    jax.block_until_ready(advance(*start, _cast(args, dtype), host_cast(-np.inf, dtype)))


def _run_stages(
    field: GradientField,
    args: Any,
    level: jax.Array,
    state: _BatchState,
    stages: Sequence[FlowOptions],
    chunk_size: int,
    steps_per_round: int,
    pending: np.ndarray,
    bar: Any,
    strict: bool,
) -> None:
    """Run the members ``pending`` through the stages in turn (see :func:`integrate_batch`)."""
    n = len(state.status)
    for i, stage in enumerate(stages):
        if not pending.size:
            break
        limit = np.zeros(n, dtype=np.int64)
        limit[pending] = state.steps[pending] + stage.max_steps
        state.dt[pending] = 0
        advance = _round_function(field, stage, steps_per_round, strict)
        chunk = _padded(pending.size, chunk_size)
        finish = None if i + 1 == len(stages) else _Finish(field, stage, args, level, chunk)
        pending = _run_stage(advance, args, level, state, pending, limit, chunk, bar, finish)


MIN_CHUNK = 64
"""The smallest batch integrated together, unless a smaller ``chunk_size`` is asked for."""


def _padded(n: int, chunk: int) -> int:
    """The compiled batch size for a stage of ``n`` members: the smallest :data:`MIN_CHUNK` ·
    4ᵏ that holds them, at most ``chunk`` rounded down to a power of two and to at least the
    number of devices (so that the batch splits evenly over them).  A ``chunk`` below
    :data:`MIN_CHUNK` is for members whose gradient is costly (a full model's): padding a round
    of a few stiff members to 64 would multiply its cost."""
    chunk = 1 << (max(chunk, jax.device_count()).bit_length() - 1)
    size = MIN_CHUNK
    while size < n:
        size *= LADDER
    return min(chunk, size)


LADDER = 4
"""Ratio between successive compiled batch sizes.  A stage's first round costs its padded size
times its slowest member's steps: a basin map's float64 pass of a few hundred members ran
padded to 2,048 with a ratio of 32.  Each size is one more program only where a process
integrates stages of different sizes with one field (a sweep's cells)."""


def _run_stage(
    advance: Callable[..., tuple[jax.Array, ...]],
    args: Any,
    level: jax.Array,
    state: _BatchState,
    pending: np.ndarray,
    limit: np.ndarray,
    chunk: int,
    bar: Any,
    finish: _Finish | None = None,
) -> np.ndarray:
    """Run the members ``pending`` until each stops or reaches its step ``limit``; members
    ``finish`` accepts stop at their Newton limit.

    Returns the members whose budget ran out (to be continued by a later stage, if any).
    """
    queue, exhausted = _Queue(pending), []
    while queue.size:
        size = _round_size(queue.size, chunk)
        take = queue.take(size)
        idx = np.resize(take, size)
        y0, t0, dt0 = _spread(state.y[idx]), _spread(state.t[idx]), _spread(state.dt[idx])
        yy, tt, dd, nn, ss = advance(y0, t0, dt0, args, level)
        m = take.size
        state.y[take], state.t[take] = np.asarray(yy)[:m], np.asarray(tt)[:m]
        state.dt[take] = np.asarray(dd)[:m]
        taken = np.asarray(nn)[:m]
        state.steps[take] += taken
        code = np.asarray(ss)[:m]
        if finish is not None:
            code = finish(state, take, code, taken, limit[take])
        stopped = code >= 0
        out_of_steps = ~stopped & (state.steps[take] >= limit[take])
        state.status[take[stopped]] = code[stopped]
        exhausted.append(take[out_of_steps])
        queue.put(take[~(stopped | out_of_steps)])
        bar.update(int(stopped.sum()))
    return np.concatenate(exhausted)


class _Queue:
    """The members waiting for a round, first in first out: a round takes them from the
    front, and those still running go to the back.  Kept as the arrays put in, so that a round
    costs its own members' copies, not the whole queue's (a million-point map's float32 pass
    copied its queue once a round, about 120 times)."""

    def __init__(self, members: np.ndarray) -> None:
        self._parts = collections.deque([members])
        self.size = members.size

    def take(self, n: int) -> np.ndarray:
        """The first ``n`` members (all, if fewer), removed from the queue."""
        taken, left = [], n
        while left and self._parts:
            part = self._parts.popleft()
            taken.append(part[:left])
            if part.size > left:
                self._parts.appendleft(part[left:])
            left -= taken[-1].size
        self.size -= n - left
        return taken[0] if len(taken) == 1 else np.concatenate(taken)

    def put(self, members: np.ndarray) -> None:
        """``members`` at the back."""
        if members.size:
            self._parts.append(members)
            self.size += members.size


FINISH_AFTER = 128
"""Steps in a stage after which a member still running is first tested for its Newton limit;
it is tested again after twice, four times … as many.  Most members stop within this many
steps; one stalled at the stability limit beside a minimum is caught after 128 of its 2,000."""


@dataclass(frozen=True)
class _Finish:
    """The Newton test (:func:`~gradflow._flow.newton_finish.newton_finish`) of a stage's members
    that are due: still running, and their steps in the stage have just reached
    :data:`FINISH_AFTER` times a power of two, or their budget."""

    field: GradientField
    stage: FlowOptions
    args: Any
    level: jax.Array
    chunk: int

    def __call__(
        self,
        state: _BatchState,
        take: np.ndarray,
        code: np.ndarray,
        taken: np.ndarray,
        limit: np.ndarray,
    ) -> np.ndarray:
        """The round's status codes of the members ``take``, with those that pass the test
        converged (their endpoints moved to their Newton limits in ``state``)."""
        after = state.steps[take] - (limit - self.stage.max_steps)
        due = (code < 0) & ((after >= self.stage.max_steps) | _doubled(after - taken, after))
        if not due.any():
            return code
        members = take[due]
        idx = np.resize(members, _padded(members.size, self.chunk))
        test = newton_finish(self.field, self.stage.with_stop(gtol=1.0))
        ok, x = test(jnp.asarray(state.y[idx]), self.args, self.level, self.stage.gtol)
        ok = np.asarray(ok)[: members.size]
        state.y[members[ok]] = np.asarray(x)[: members.size][ok]
        code = code.copy()
        code[np.flatnonzero(due)[ok]] = int(Outcome.CONVERGED)
        return code


def _doubled(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """Whether a member's stage steps went past :data:`FINISH_AFTER` times a power of two."""

    def doublings(steps: np.ndarray) -> np.ndarray:
        return np.floor(np.log2(np.maximum(steps, 1) / FINISH_AFTER))

    return (after >= FINISH_AFTER) & (doublings(after) > doublings(before))


_SMALL_TAILS: contextvars.ContextVar[bool] = contextvars.ContextVar("small_tails", default=False)


@contextlib.contextmanager
def small_tails() -> Iterator[None]:
    """Within this block, a round of a stage whose members a smaller size of the ladder holds
    runs on a program of that size instead of being padded to the stage's batch.

    For a sweep: a stage's long tail of a few slow members (two points at the stability limit
    of Tsit5 beside a saddle) repeats in every cell, and a smaller program, compiled once
    (about a second), pays for itself after a few cells, while a single basin map is better off
    padding its tail.  The caller chooses, not the process's history, so one call gives the
    same floating-point results whatever ran before it: programs compiled for two sizes may
    vectorize their arithmetic differently, so endpoints differ by rounding between the two
    (steps and status never)."""
    token = _SMALL_TAILS.set(True)
    try:
        yield
    finally:
        _SMALL_TAILS.reset(token)


def _round_size(n: int, chunk: int) -> int:
    """The batch size of a round of ``n`` members in a stage compiled for ``chunk``: ``chunk``,
    or within :func:`small_tails` the smallest size of the ladder (:func:`_padded`) that holds
    them."""
    size = _padded(n, chunk)
    return size if size < chunk and _SMALL_TAILS.get() else chunk


@functools.cache
def _batch_sharding() -> NamedSharding:
    """Batches split along their first axis over every visible JAX device (one mesh axis)."""
    return NamedSharding(Mesh(np.array(jax.devices()), ("batch",)), PartitionSpec("batch"))


def _spread(values: np.ndarray) -> jax.Array | np.ndarray:
    """Members placed across the devices (each device integrates its share; the compiled
    program is partitioned by XLA along the batch axis).  On one device they are passed as
    they are, which the compiled program takes in a fifth of the time of placing them first
    (0.06 against 0.3 ms a round's three arrays of 16,384 members)."""
    if jax.device_count() == 1:
        return values
    return jax.device_put(values, _batch_sharding())


@functools.cache
def _round_function(
    field: GradientField, options: FlowOptions, steps: int, strict: bool = False
) -> Callable[..., tuple[jax.Array, ...]]:
    """Jitted: advance a chunk of members by at most ``steps`` solver steps each.

    Maps ``(y0, t0, dt0, args, level)`` to ``(y, t, dt, steps, status)`` per member: ``dt`` the
    step the member tries next, which the next round starts from (0 from a diffrax round, which
    restarts its step-size control), ``steps`` counting rejected steps too (a member
    whose steps are all rejected, as at a blow-up, must still spend its budget), with status
    ``-1`` for members that are still running.  A solver gradflow integrates itself
    (:meth:`FlowOptions.batched_integrator`: an explicit pair or ``Rodas4``, with a PID
    controller) runs as one batched program, gradient descent as another
    (:func:`~gradflow._flow.descent.descent_round`), any other solver through diffrax,
    vectorized, its executable kept between processes where the field's programs are
    (:func:`gradflow._compiled.store.stored`: a warm ``gradflow portrait --p 0.2 --q 0.85``
    traced a Kvaerno5 round for 2 s).
    ``strict``: the stopping rule includes the escape test (a program of its own).
    """
    if options.descent:
        return descent_round(field, options, steps, strict)
    if options.batched_integrator() is not None:
        advance = _own_round(field, options.with_stop(gtol=1.0), steps, strict)
        gtol = options.gtol
        return lambda y0, t0, dt0, args, level: advance(y0, t0, dt0, (args, level, gtol))

    import diffrax

    saveat = diffrax.SaveAt(t1=True)

    def one(y0: jax.Array, t0: jax.Array, dt0: jax.Array, args: Any, level: jax.Array):
        sol = solve(field, options, y0, t0, args, level, steps, saveat, strict=strict)
        y, t = sol.ys[-1], sol.ts[-1]
        running = sol.result == diffrax.RESULTS.max_steps_reached
        code = jnp.where(running, -1, status_code(field, options, y, args, level, strict=strict))
        return y, t, jnp.zeros_like(dt0), sol.stats["num_steps"], code

    description = f"diffrax round {options!r} steps={steps} strict={strict}"
    jitted = jax.jit(jax.vmap(one, in_axes=(0, 0, 0, None, None)))
    return stored_for(jitted, field, description, describable=options.by_name)


@functools.cache
def _own_round(
    field: GradientField, options: FlowOptions, steps: int, strict: bool
) -> Callable[..., tuple[jax.Array, ...]]:
    """The round of gradflow's own integrator of ``options``
    (:meth:`FlowOptions.batched_integrator`), with the steady-state tolerance an
    argument (the last of ``(args, level, gtol)``), not a constant: stages that differ only in
    ``gtol`` (a basin map's float64 pass and its loose pass along the basins' edges) share one
    traced and compiled program.  Its compiled executable is kept between processes where
    the field's programs are (:func:`gradflow._compiled.store.stored`), keyed by the options,
    ``steps``, ``strict`` and the field's key."""
    integrator = options.batched_integrator()

    def vector_field(y: jax.Array, a: tuple[Any, jax.Array, jax.Array]) -> jax.Array:
        return -field.grad(y, a[0])

    def stop(y: jax.Array, a: tuple[Any, jax.Array, jax.Array]) -> jax.Array:
        return status_code(field, options, y, a[0], a[1], gtol=a[2], strict=strict)

    description = f"own round {options!r} steps={steps} strict={strict}"
    advance = integrator.advance(vector_field, stop, steps)
    return stored_for(advance, field, description, describable=options.by_name)
