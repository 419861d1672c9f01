"""Gradient flow ``dθ/dt = -∇L(θ; h)`` of a reduced model, integrated with diffrax.

One trajectory (:func:`flow`) keeps its whole path.  Many trajectories (:func:`flow_endpoints`)
keep only where each one stopped; they are integrated in rounds of a bounded number of steps on
fixed-size chunks, and the members still running after a round are re-batched for the next, so
no member waits for the slowest one of the grid.

Each trajectory stops at a steady state (``‖∇L‖₂ ≤ gtol``), on divergence (``‖θ‖₂ >
divergence_radius`` or a non-finite value), when its loss falls below an optional decision level,
or when its budget (``t_max`` flow time, ``max_steps`` solver steps) runs out.  Every stop is
labelled by a :class:`Status`; no trajectory is dropped.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from ._compiled import CompiledModel
from ._errors import GradflowError
from ._progress import progress_bar

if TYPE_CHECKING:
    from ._bound import BoundModel

__all__ = [
    "descend",
    "gradient_descent",
    "FlowEndpoints",
    "FlowOptions",
    "GradientField",
    "Status",
    "Trajectory",
    "flow",
    "flow_endpoints",
    "gradient_flow",
    "integrate",
]


class Status(enum.IntEnum):
    """Why a trajectory stopped."""

    CONVERGED = 0
    """``‖∇L‖₂ ≤ gtol``: at a critical point."""
    DECIDED = 1
    """The loss fell below the decision level, so the trajectory must end at a global minimum."""
    DIVERGED = 2
    """``‖θ‖₂`` exceeded ``divergence_radius`` or became non-finite."""
    NOT_CONVERGED = 3
    """The budget (``t_max`` or ``max_steps``) ran out first."""


@dataclass(frozen=True)
class FlowOptions:
    """How the flow is integrated and when a trajectory stops.

    Attributes:
        solver: a diffrax solver.  The default, the implicit ``Kvaerno5``, is what the canonical
            flow needs: near the global-minimum curve its Hessian eigenvalues reach -30 and an
            explicit solver stalls at its stability limit.
        rtol, atol: tolerances of the PID step-size controller.
        gtol: steady-state test ``‖∇L‖₂ ≤ gtol`` (loss units per parameter unit).
        t_max: flow-time budget (time units of the flow).
        max_steps: solver-step budget per trajectory.
        divergence_radius: ``‖θ‖₂`` above which a trajectory is labelled diverged.
    """

    solver: diffrax.AbstractSolver = field(default_factory=diffrax.Kvaerno5)
    rtol: float = 1e-7
    atol: float = 1e-9
    gtol: float = 1e-8
    t_max: float = 1e5
    max_steps: int = 20_000
    divergence_radius: float = 1e4

    def __post_init__(self) -> None:
        for name in ("rtol", "atol", "gtol", "t_max", "divergence_radius"):
            value = getattr(self, name)
            if not value > 0:
                raise GradflowError(f"{name} = {value!r} must be > 0")
        if self.max_steps < 1:
            raise GradflowError(f"max_steps = {self.max_steps!r} must be ≥ 1")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description: the solver's class name and every tolerance and budget."""
        return {
            "solver": type(self.solver).__name__,
            "rtol": self.rtol,
            "atol": self.atol,
            "gtol": self.gtol,
            "t_max": self.t_max,
            "max_steps": self.max_steps,
            "divergence_radius": self.divergence_radius,
        }


@dataclass(frozen=True)
class Trajectory:
    """One integrated trajectory.

    Attributes:
        ts: flow times of the accepted steps, shape ``(n,)``, starting at 0.
        thetas: the path, shape ``(n, dim)``.
        losses: ``L`` along the path, shape ``(n,)``, nats.
        status: why it stopped.
    """

    ts: np.ndarray
    thetas: np.ndarray
    losses: np.ndarray
    status: Status

    @property
    def endpoint(self) -> np.ndarray:
        """Where the trajectory stopped, shape ``(dim,)``."""
        return self.thetas[-1]

    @property
    def time(self) -> float:
        """Flow time at which it stopped."""
        return float(self.ts[-1])

    @property
    def converged(self) -> bool:
        """Whether it stopped at a steady state."""
        return self.status is Status.CONVERGED


@dataclass(frozen=True)
class FlowEndpoints:
    """Where each trajectory of a batch stopped.

    Attributes:
        endpoints: shape ``(B, dim)``.
        times: flow time at the stop, shape ``(B,)``.
        steps: accepted solver steps, shape ``(B,)``.
        status: :class:`Status` codes, shape ``(B,)``.
    """

    endpoints: np.ndarray
    times: np.ndarray
    steps: np.ndarray
    status: np.ndarray


@dataclass(frozen=True, eq=False)
class GradientField:
    """A loss on flat parameter vectors and its gradient, both called as ``f(θ, args)``.

    ``θ`` has shape ``(dim,)``; ``loss`` returns a scalar (nats), ``grad`` shape ``(dim,)``.
    A :class:`CompiledModel` provides one with ``args = h``; :meth:`from_loss` builds one from
    any JAX loss by automatic differentiation.
    """

    loss: Callable[[jax.Array, Any], jax.Array]
    grad: Callable[[jax.Array, Any], jax.Array]

    @classmethod
    def from_loss(cls, loss: Callable[[jax.Array, Any], jax.Array]) -> GradientField:
        """The field of ``loss(θ, args)`` with ``grad = jax.grad(loss)``."""
        return cls(loss=loss, grad=jax.grad(loss))


def _model_field(model: BoundModel) -> GradientField:
    return _compiled_field(model.compiled)


@functools.cache
def _compiled_field(compiled: CompiledModel) -> GradientField:
    return GradientField(loss=compiled.loss, grad=compiled.grad)


def _diverged(y: jax.Array, options: FlowOptions) -> jax.Array:
    return ~jnp.all(jnp.isfinite(y), axis=-1) | (
        jnp.linalg.norm(y, axis=-1) > options.divergence_radius
    )


def _status(
    field: GradientField, options: FlowOptions, y: jax.Array, args: Any, level: jax.Array
) -> jax.Array:
    """Status code of a final state ``y`` of shape ``(dim,)``.

    A state that meets no stopping condition can only have stopped because its budget ran out.
    """
    return jnp.select(
        [
            _diverged(y, options),
            jnp.linalg.norm(field.grad(y, args)) <= options.gtol,
            field.loss(y, args) < level,
        ],
        [int(Status.DIVERGED), int(Status.CONVERGED), int(Status.DECIDED)],
        int(Status.NOT_CONVERGED),
    )


def _solve(
    field: GradientField,
    options: FlowOptions,
    y0: jax.Array,
    t0: jax.Array,
    args: Any,
    level: jax.Array,
    max_steps: int,
    saveat: diffrax.SaveAt,
) -> diffrax.Solution:
    """diffrax solve of ``dθ/dt = -∇L`` from ``(t0, y0)`` with the stopping rule as an event."""

    def vector_field(t: jax.Array, y: jax.Array, a: tuple[Any, jax.Array]) -> jax.Array:
        return -field.grad(y, a[0])

    def stop(t: jax.Array, y: jax.Array, a: tuple[Any, jax.Array], **kwargs: Any) -> jax.Array:
        return _status(field, options, y, a[0], a[1]) != int(Status.NOT_CONVERGED)

    return diffrax.diffeqsolve(
        diffrax.ODETerm(vector_field),
        options.solver,
        t0=t0,
        t1=options.t_max,
        dt0=None,
        y0=y0,
        args=(args, level),
        saveat=saveat,
        stepsize_controller=diffrax.PIDController(rtol=options.rtol, atol=options.atol),
        event=diffrax.Event(stop),
        max_steps=max_steps,
        throw=False,
    )


def integrate(
    field: GradientField,
    theta0: jax.Array,
    args: Any = None,
    options: FlowOptions | None = None,
    *,
    ts: np.ndarray | None = None,
) -> Trajectory:
    """Integrate one trajectory of ``dθ/dt = -∇L(θ, args)`` from flat ``theta0`` until it stops.

    Args:
        field: the loss and its gradient.
        theta0: initial point, shape ``(dim,)``.
        args: passed to ``field.loss`` and ``field.grad`` (hyperparameters, data).
        options: solver and stopping rule.
        ts: flow times at which to record the path (ascending, from 0); by default every accepted
            solver step is recorded.

    Returns:
        The recorded path (ending where the trajectory stopped) and why it stopped.
    """
    options = options or FlowOptions()
    y0 = jnp.asarray(theta0, dtype=jnp.float64)
    save_ts = None if ts is None else jnp.asarray(ts, dtype=jnp.float64)
    sol = _integrate_path(field, options, y0, args, save_ts)
    times, ys = np.asarray(sol.ts), np.asarray(sol.ys)
    kept = np.isfinite(times)
    times, ys = times[kept], ys[kept]
    if ts is not None and (times.size == 0 or times[-1] < float(sol.stats["t_stop"])):
        times = np.append(times, float(sol.stats["t_stop"]))
        ys = np.concatenate([ys, np.asarray(sol.stats["y_stop"])[None]])
    status = Status(int(_status(field, options, jnp.asarray(ys[-1]), args, -jnp.inf)))
    losses = np.asarray(jax.vmap(field.loss, in_axes=(0, None))(jnp.asarray(ys), args))
    return Trajectory(ts=times, thetas=ys, losses=losses, status=status)


@functools.partial(jax.jit, static_argnums=(0, 1))
def _integrate_path(
    field: GradientField, options: FlowOptions, y0: jax.Array, args: Any, ts: jax.Array | None
) -> diffrax.Solution:
    if ts is None:
        saveat = diffrax.SaveAt(t0=True, steps=True)
    else:
        saveat = diffrax.SaveAt(subs=[diffrax.SubSaveAt(ts=ts), diffrax.SubSaveAt(t1=True)])
    sol = _solve(field, options, y0, jnp.zeros(()), args, -jnp.inf, options.max_steps, saveat)
    if ts is None:
        return sol
    (path_ts, stop_ts), (path_ys, stop_ys) = sol.ts, sol.ys
    stats = dict(sol.stats, t_stop=stop_ts[-1], y_stop=stop_ys[-1])
    path_ts = jnp.where(path_ts <= stop_ts[-1], path_ts, jnp.inf)
    return eqx.tree_at(lambda s: (s.ts, s.ys, s.stats), sol, (path_ts, path_ys, stats))


def flow(model: BoundModel, theta0: Any, options: FlowOptions | None = None) -> Trajectory:
    """One trajectory of the model's gradient flow ``dθ/dt = -∇L`` from ``theta0`` to its stop.

    Args:
        model: the model at fixed hyperparameters.
        theta0: initial point, shape ``(dim,)``, in the order of ``model.model.params``.
        options: solver and stopping rule; defaults to :class:`FlowOptions()` (Kvaerno5).

    Returns:
        The whole path (every accepted step) and why it stopped.

    Raises:
        GradflowError: ``theta0`` has the wrong shape or is not finite.
    """
    y0 = _check_initial(model, theta0)
    if y0.shape[0] != 1:
        raise GradflowError(f"flow takes one initial point, got {y0.shape[0]}")
    return integrate(_model_field(model), y0[0], model.h, options)


def gradient_flow(
    loss: Callable[[Any, Any], jax.Array],
    theta0: Any,
    args: Any = None,
    options: FlowOptions | None = None,
    *,
    ts: np.ndarray | None = None,
) -> tuple[Trajectory, Callable[[np.ndarray], Any]]:
    """Gradient flow of any JAX loss over a pytree of parameters (e.g. a full transformer).

    Args:
        loss: ``loss(params, args)`` returning a scalar.
        theta0: the initial parameters, any pytree of float arrays.
        args: passed through to ``loss``.
        options: solver and stopping rule.
        ts: flow times at which to record the path; default every accepted step.

    Returns:
        ``(trajectory, unravel)``: the path over the flattened parameters and the function that
        turns one flat row ``trajectory.thetas[i]`` back into the pytree.
    """
    flat0, unravel = ravel_pytree(jax.tree.map(lambda x: jnp.asarray(x, jnp.float64), theta0))
    field = GradientField.from_loss(lambda flat, a: loss(unravel(flat), a))
    return integrate(field, flat0, args, options, ts=ts), unravel


def _check_initial(model: BoundModel, thetas: Any) -> np.ndarray:
    """Initial points as a float64 array of shape ``(B, dim)``; reject wrong shapes, NaN, inf."""
    arr = np.atleast_2d(np.asarray(thetas, dtype=np.float64))
    dim = model.model.dim
    if arr.ndim != 2 or arr.shape[1] != dim:
        raise GradflowError(
            f"initial points must have shape (B, {dim}) with coordinates "
            f"({', '.join(model.model.param_names)}), got shape {np.shape(thetas)}"
        )
    if arr.shape[0] == 0:
        raise GradflowError("no initial points given (empty grid)")
    if not np.all(np.isfinite(arr)):
        raise GradflowError("initial points must be finite numbers, got NaN or inf")
    return arr


def flow_endpoints(
    model: BoundModel,
    thetas0: Any,
    options: FlowOptions | Sequence[FlowOptions] | None = None,
    *,
    decide_below: float | None = None,
    chunk_size: int = 16384,
    steps_per_round: int = 32,
    progress: bool | None = None,
) -> FlowEndpoints:
    """Integrate many trajectories and return where each one stopped.

    Args:
        model: the model at fixed hyperparameters.
        thetas0: initial points, shape ``(B, dim)``.
        options: solver and stopping rule, or a sequence of them tried in turn: members whose
            step budget runs out in one stage continue from where they stopped in the next (e.g.
            an explicit solver first, an implicit one for the stiff remainder).
        decide_below: stop a trajectory as :attr:`Status.DECIDED` once its loss is below this
            level (nats).  Sound when the level is below every non-global critical value: the
            loss decreases along the flow, so the trajectory can only end at a global minimum.
        chunk_size: members integrated together.
        steps_per_round: solver steps before unfinished members are re-batched.
        progress: show a progress bar (default: only once the batch has run for 1.5 s).

    Returns:
        Endpoints, stopping times, step counts and status codes, in the order of ``thetas0``.

    Raises:
        GradflowError: empty batch, wrong shape, or non-finite initial points.
    """
    stages = [options or FlowOptions()] if not isinstance(options, Sequence) else list(options)
    if not stages:
        raise GradflowError("options must name at least one FlowOptions stage")
    y = _check_initial(model, thetas0).copy()
    n = y.shape[0]
    state = _BatchState(
        y=y,
        t=np.zeros(n),
        steps=np.zeros(n, dtype=np.int64),
        status=np.full(n, int(Status.NOT_CONVERGED)),
    )
    level = jnp.asarray(-np.inf if decide_below is None else decide_below)
    pending = np.arange(n)
    with progress_bar(total=n, unit="trajectory", enabled=progress) as bar:
        for stage in stages:
            budget = state.steps[pending] + stage.max_steps if pending.size else None
            pending = _run_stage(
                _model_field(model),
                model.h,
                stage,
                level,
                state,
                pending,
                budget,
                min(chunk_size, n),
                steps_per_round,
                bar,
            )
    return FlowEndpoints(endpoints=state.y, times=state.t, steps=state.steps, status=state.status)


@dataclass
class _BatchState:
    """Mutable per-member state of a batched integration."""

    y: np.ndarray
    t: np.ndarray
    steps: np.ndarray
    status: np.ndarray


def _run_stage(
    field: GradientField,
    args: Any,
    options: FlowOptions,
    level: jax.Array,
    state: _BatchState,
    pending: np.ndarray,
    budget: np.ndarray | None,
    chunk: int,
    steps_per_round: int,
    bar: Any,
) -> np.ndarray:
    """Run the members ``pending`` with one solver until each stops or spends its step budget.

    Returns the members whose budget ran out (to be continued by a later stage, if any).
    """
    if not pending.size:
        return pending
    advance = _round_function(field, options, steps_per_round)
    limit = np.zeros(state.y.shape[0], dtype=np.int64)
    limit[pending] = budget
    queue, exhausted = pending, []
    while queue.size:
        take = queue[:chunk]
        idx = np.resize(take, chunk)
        yy, tt, nn, ss = advance(jnp.asarray(state.y[idx]), jnp.asarray(state.t[idx]), args, level)
        m = take.size
        state.y[take], state.t[take] = np.asarray(yy)[:m], np.asarray(tt)[:m]
        state.steps[take] += np.asarray(nn)[:m]
        code = np.asarray(ss)[:m]
        stopped = code >= 0
        out_of_steps = ~stopped & (state.steps[take] >= limit[take])
        state.status[take[stopped]] = code[stopped]
        exhausted.append(take[out_of_steps])
        queue = np.concatenate([queue[chunk:], take[~(stopped | out_of_steps)]])
        bar.update(int(stopped.sum()))
    return np.concatenate(exhausted)


@functools.cache
def _round_function(
    field: GradientField, options: FlowOptions, steps: int
) -> Callable[..., tuple[jax.Array, ...]]:
    """Jitted: advance a chunk of members by at most ``steps`` solver steps each.

    Returns ``(y, t, accepted_steps, status)`` per member, with status ``-1`` for members that are
    still running.
    """
    saveat = diffrax.SaveAt(t1=True)

    def one(y0: jax.Array, t0: jax.Array, args: Any, level: jax.Array):
        sol = _solve(field, options, y0, t0, args, level, steps, saveat)
        y, t = sol.ys[-1], sol.ts[-1]
        running = sol.result == diffrax.RESULTS.max_steps_reached
        code = jnp.where(running, -1, _status(field, options, y, args, level))
        return y, t, sol.stats["num_accepted_steps"], code

    return jax.jit(jax.vmap(one, in_axes=(0, 0, None, None)))


def descend(
    field: GradientField,
    theta0: jax.Array,
    args: Any = None,
    *,
    lr: float,
    steps: int,
    every: int = 1,
    options: FlowOptions | None = None,
) -> Trajectory:
    """Plain gradient descent ``θ ← θ - η ∇L(θ, args)``: the discrete map full training uses.

    Args:
        field: the loss and its gradient on flat parameters.
        theta0: initial point, shape ``(dim,)``.
        args: passed to the field.
        lr: the step ``η`` (one step advances flow time by ``η``).
        steps: number of steps.
        every: record every ``every``-th iterate.
        options: only its ``gtol`` and ``divergence_radius`` are used, to label the stop.

    Returns:
        The recorded iterates with ``ts = η · iteration``; status ``CONVERGED`` if the last
        iterate has ``‖∇L‖₂ ≤ gtol``, ``DIVERGED`` if any iterate left the radius or was not
        finite, else ``NOT_CONVERGED``.

    Raises:
        GradflowError: ``lr ≤ 0``, ``steps < 1`` or ``every < 1``.
    """
    if not lr > 0:
        raise GradflowError(f"lr = {lr!r} must be > 0")
    if steps < 1 or every < 1:
        raise GradflowError(f"steps = {steps!r} and every = {every!r} must be ≥ 1")
    options = options or FlowOptions()
    ys = np.asarray(_descend_path(field, jnp.asarray(theta0, jnp.float64), args, lr, steps, every))
    ys = np.concatenate([np.asarray(theta0, np.float64)[None], ys])
    ts = lr * every * np.arange(len(ys))
    bad = np.asarray(_diverged(jnp.asarray(ys), options))
    if bad.any():
        first = int(np.argmax(bad))
        ys, ts, status = ys[: first + 1], ts[: first + 1], Status.DIVERGED
    else:
        status = Status(int(_status(field, options, jnp.asarray(ys[-1]), args, -jnp.inf)))
    losses = np.asarray(jax.vmap(field.loss, in_axes=(0, None))(jnp.asarray(ys), args))
    return Trajectory(ts=ts, thetas=ys, losses=losses, status=status)


@functools.partial(jax.jit, static_argnums=(0, 3, 4, 5))
def _descend_path(
    field: GradientField, y0: jax.Array, args: Any, lr: float, steps: int, every: int
) -> jax.Array:
    def block(y: jax.Array, _: None) -> tuple[jax.Array, jax.Array]:
        y = jax.lax.fori_loop(0, every, lambda _, z: z - lr * field.grad(z, args), y)
        return y, y

    return jax.lax.scan(block, y0, None, length=steps // every)[1]


def gradient_descent(
    model: BoundModel, theta0: Any, *, lr: float, steps: int, every: int = 1
) -> Trajectory:
    """Plain gradient descent on a reduced model; see :func:`descend`.

    Raises:
        GradflowError: bad ``theta0``, ``lr``, ``steps`` or ``every``.
    """
    y0 = _check_initial(model, theta0)
    if y0.shape[0] != 1:
        raise GradflowError(f"gradient_descent takes one initial point, got {y0.shape[0]}")
    return descend(_model_field(model), y0[0], model.h, lr=lr, steps=steps, every=every)
