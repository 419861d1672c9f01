"""The two entry points of the gradient flow: one trajectory (:func:`flow`) and a batch of
endpoints (:func:`flow_endpoints`).

Both take one :class:`~gradflow.FlowOptions`, whose solver (a diffrax ODE solver or
:class:`~gradflow.GradientDescent`), step-size controller and stop rule are values; they wrap
the private integrators (:func:`gradflow._flow.integrate.integrate`,
:func:`gradflow._flow.descent.descend`, :func:`gradflow._flow.batched.integrate_batch`) with a
landscape's own field in units of its scales, check the initial points, and say what each
trajectory reached.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from .._critical.search import critical_sets
from .._critical.sets import CriticalSets
from .._errors import GradflowError
from .._landscape.base import DEFAULT_BOUND, GradientField, Landscape
from .._landscape.metric import Metric, in_metric
from .._landscape.region import REACH
from .._landscape.scales import loss_scales, unit_field
from .._outcome import Outcome
from .batched import FlowEndpoints, integrate_batch
from .descent import descend
from .integrate import (
    ESCAPE_FULL_DIM,
    Trajectory,
    escape_test,
    integrate,
    pytree_field,
)
from .options import ConstantStep, FlowOptions, GradientDescent
from .overshoot import crossed, tightened
from .reached import kink_status, reached
from .sliding import slide, sliding_options, unit_kinks

__all__ = [
    "check_initial",
    "flow",
    "flow_endpoints",
    "batch_flow",
    "unit_flow",
]


def check_initial(landscape: Landscape, thetas: Any, what: str = "initial points") -> np.ndarray:
    """Initial points as a float64 array of shape ``(B, dim)``.

    Raises:
        GradflowError: wrong shape, no points, or a NaN or infinite coordinate; the message
            names the coordinates in order.
    """
    names = ", ".join(landscape.param_names)
    try:
        arr = np.atleast_2d(np.asarray(thetas, dtype=np.float64))
    except (TypeError, ValueError):
        raise GradflowError(f"{what} must be numbers ({names}), got {thetas!r}") from None
    dim = landscape.dim
    if arr.ndim != 2 or arr.shape[1] != dim:
        raise GradflowError(
            f"{what} must have {dim} coordinates ({names}), got shape {np.shape(thetas)}"
        )
    if arr.shape[0] == 0:
        raise GradflowError(f"no {what} given (empty grid)")
    if not np.all(np.isfinite(arr)):
        raise GradflowError(f"{what} must be finite numbers ({names}), got NaN or inf")
    return arr


def flow(
    loss: Landscape | GradientField | Callable[[Any, Any], jax.Array],
    theta0: Any,
    options: FlowOptions | None = None,
    *,
    args: Any = None,
    ts: np.ndarray | None = None,
    critical: CriticalSets | None = None,
    metric: str | Metric | None = None,
) -> Trajectory:
    """One trajectory of the gradient flow ``dθ/dt = -G⁻¹∇L`` from ``theta0`` to its stop.

    Args:
        loss: what flows, one of
            a :class:`~gradflow.Landscape` (e.g. a model bound to its hyperparameters; it
            carries its arguments; tolerances in units of its scales, see below);
            a :class:`~gradflow.GradientField` on flat vectors, called with ``args``; or
            any JAX loss ``loss(params, args)`` over a pytree of parameters (e.g. a full
            transformer), flattened in ``jax.flatten_util.ravel_pytree`` order: the path's rows
            are flat, and ``ravel_pytree(params0)[1]`` turns one back into the pytree.
            A field or a pytree loss is integrated in its own units; the flow compiles once
            per field object (per loss function and parameter structure for a pytree).
        theta0: initial point, shape ``(dim,)``, in the order of ``landscape.param_names``; a
            pytree for a pytree loss.
        options: solver, step-size controller and stop rule; defaults to
            :class:`FlowOptions()` (Kvaerno5, ``PID(1e-7, 1e-9)``).  On a landscape ``gtol`` is
            in units of its gradient scale and ``t_max`` (and a :class:`~gradflow.ConstantStep`'s
            ``dt``) in units of its time scale (:func:`unit_flow`), so ``c·L`` stops where ``L``
            does; :class:`~gradflow.GradientDescent`'s step ``η`` is in the loss's own time.
        args: the arguments of a field or pytree loss (hyperparameters, data); a landscape
            has its own.
        ts: flow times at which to record the path (ascending, from 0; for gradient descent
            ``0, kη, 2kη, …``); by default every accepted step.  Where a landscape's run
            continues by sliding along a kink, every step of the sliding motion is recorded.
        critical: critical sets to name the attractor reached (its id in their
            :class:`~gradflow.AttractorIndex`); without them only the kind is given, except on
            a landscape that proves a decision level
            (:attr:`~gradflow.Landscape.sublevel_shortcut`: closed forms proven complete, no
            numerical search), which finds its own, in its search box widened as
            ``gradflow flow`` widens it, so that an end below the level is proven as on the
            command line.  Landscapes only.
        metric: the metric ``G`` of the flow: ``"euclidean"`` (``G = I``), ``"induced"`` (the
            metric of the embedding into the full model) or a callable ``G(θ, args)``; default
            the landscape's own (Euclidean unless it comes from :func:`gradflow.in_metric`).
            Landscapes only.

    On a landscape, a trajectory that stops on a kink of the loss with flow time left (a smooth
    solver's steps collapse where the flow slides along the kink) is continued by
    :func:`gradflow.slide`, where the landscape describes its kinks
    (:attr:`~gradflow.Landscape.kinks`) and the metric is the Euclidean one; one still on a kink
    when its budget runs out has status ``NON_SMOOTH``.

    Returns:
        The path, why it stopped and (on a landscape) what it reached.

    Raises:
        GradflowError: ``theta0`` has the wrong shape or is not finite, ``L(θ0)`` is not
            finite (a loss that is complex or undefined there), a bad metric, ``ts`` not of
            gradient descent's form, or ``args``, ``critical`` or ``metric`` given with a loss
            they do not apply to.
    """
    options = options or FlowOptions()
    if not isinstance(loss, Landscape):
        if critical is not None or metric is not None:
            raise GradflowError("critical and metric apply to a Landscape, not to a field or loss")
        return _field_flow(loss, theta0, args, options, ts)
    if args is not None:
        raise GradflowError("a Landscape carries its own args; give args with a field or loss")
    landscape = loss
    y0 = check_initial(landscape, theta0, "the initial point")
    if y0.shape[0] != 1:
        raise GradflowError(f"flow takes one initial point, got {y0.shape[0]}")
    with np.errstate(all="ignore"):
        start = float(landscape.loss(y0[0]))
    if not np.isfinite(start):
        where = ", ".join(f"{n} = {v:g}" for n, v in zip(landscape.param_names, y0[0]))
        raise GradflowError(
            f"the loss is not finite at the initial point ({where}): L = {start}; "
            "start where it is real and finite"
        )
    if critical is None and landscape.sublevel_shortcut and landscape.critical_sets_complete:
        critical = critical_sets(landscape, box=landscape.search_box(widen=REACH))
    flows = in_metric(landscape, metric, at=y0[0])
    options = options.within(landscape.search_box(), y0)
    if options.descent:
        path = descend(flows.field, y0[0], flows.args, _descent_units(flows, options), ts)
        return reached(landscape, path, critical, euclidean_flow=False)
    field, args, scaled = unit_flow(flows, options)
    unit_ts = None if ts is None else np.asarray(ts, dtype=np.float64) * args[1]
    raw = integrate(field, y0[0], args, scaled, ts=unit_ts)
    tight = tightened(scaled)
    if tight is not None and crossed(landscape, y0, raw.endpoint[None])[0]:
        scaled = tight
        raw = integrate(field, y0[0], args, scaled, ts=unit_ts)
    path = _slide_on(flows, raw, args, scaled)
    path = dataclasses.replace(path, ts=path.ts / args[1], losses=path.losses * args[1])
    euclidean = flows.metric_name == "euclidean"
    out = reached(landscape, path, critical, euclidean_flow=euclidean)
    if path.status is Outcome.CONVERGED and out.reached is Outcome.NOT_CONVERGED and ts is None:
        out = reached(
            landscape,
            _continued(field, args, scaled, path),
            critical,
            euclidean_flow=euclidean,
        )
    return out


RUN_ON_GTOL = 1e-300
"""The steady-state test of a trajectory run on past a false stop: none (only its budget, a
divergence or a non-finite state stops it)."""


def _continued(
    field: GradientField, args: Any, options: FlowOptions, path: Trajectory
) -> Trajectory:
    """``path`` (in the loss's own units) run on from its endpoint with the flow time left and
    no steady-state test: it met ``gtol`` beside no critical point (a gradient decaying like
    ``1/t`` toward an infimum at infinity, the ghost of a saddle-node)."""
    scale = args[1]
    left = options.t_max - path.time * scale
    if left <= 0:
        return path
    more = integrate(field, path.endpoint, args, options.with_stop(gtol=RUN_ON_GTOL, t_max=left))
    return Trajectory(
        ts=np.concatenate([path.ts, path.time + more.ts[1:] / scale]),
        thetas=np.concatenate([path.thetas, more.thetas[1:]]),
        losses=np.concatenate([path.losses, more.losses[1:] * scale]),
        status=more.status,
    )


def _field_flow(
    loss: GradientField | Callable[[Any, Any], jax.Array],
    theta0: Any,
    args: Any,
    options: FlowOptions,
    ts: np.ndarray | None,
) -> Trajectory:
    """:func:`flow` of a field, or of a loss over a pytree, in their own units."""
    if isinstance(loss, GradientField):
        field, flat0 = loss, theta0
    else:
        params = jax.tree.map(lambda x: jnp.asarray(x, jnp.float64), theta0)
        flat0, _ = ravel_pytree(params)
        leaves, treedef = jax.tree.flatten(theta0)
        field = pytree_field(loss, treedef, tuple(np.shape(leaf) for leaf in leaves))
    start = np.atleast_2d(np.asarray(flat0, dtype=np.float64))
    options = options.within(np.tile(DEFAULT_BOUND, (start.shape[1], 1)), start)
    if options.descent:
        return descend(field, flat0, args, options, ts)
    return integrate(field, flat0, args, options, ts=ts)


def _descent_units(landscape: Landscape, options: FlowOptions) -> FlowOptions:
    """Gradient descent's options on ``L`` itself: its iterates are those of ``θ ← θ − η∇L``,
    while ``gtol`` (units of the gradient scale ``g``) and ``t_max`` (units of ``ℓ/g``) keep
    the landscape's units of :func:`unit_flow`."""
    scales = loss_scales(landscape)
    return options.with_stop(
        gtol=options.gtol * scales.gradient, t_max=options.t_max * scales.length / scales.gradient
    )


def _slide_on(flows: Landscape, path: Trajectory, args: Any, options: FlowOptions) -> Trajectory:
    """``path`` continued by :func:`gradflow.slide` where it stopped with budget left in flow
    time on a landscape whose kinks it can slide along (a smooth solver stalls on a kink the
    flow slides on); units are those of :func:`unit_flow`."""
    kinks = flows.kinks
    if kinks is None or path.status is not Outcome.NOT_CONVERGED or path.time >= options.t_max:
        return path
    more = slide(
        unit_kinks(kinks), path.endpoint, args, sliding_options(options), t0=path.time, record=True
    )
    thetas = more.thetas[1:]
    losses = flows.loss(thetas) / args[1] if len(thetas) else np.zeros(0)
    return Trajectory(
        ts=np.concatenate([path.ts, more.ts[1:]]),
        thetas=np.concatenate([path.thetas, thetas]),
        losses=np.concatenate([path.losses, losses]),
        status=more.status,
    )


def _slide_endpoints(
    flows: Landscape,
    result: FlowEndpoints,
    args: Any,
    options: FlowOptions,
    level: float | None,
) -> FlowEndpoints:
    """The members of ``result`` that stopped with budget left in flow time continued by
    :func:`gradflow.slide` (see :func:`_slide_on`), one at a time: they are the few that met
    a kink the flow slides along."""
    kinks = flows.kinks
    if kinks is None:
        return result
    stuck = np.flatnonzero(
        (result.status == Outcome.NOT_CONVERGED) & (result.times < options.t_max)
    )
    if not stuck.size:
        return result
    out = {k: np.array(getattr(result, k), copy=True) for k in ("endpoints", "times", "steps")}
    status = np.array(result.status, copy=True)
    unit, sliding = unit_kinks(kinks), sliding_options(options)
    for i in stuck:
        more = slide(
            unit, out["endpoints"][i], args, sliding, decide_below=level, t0=float(out["times"][i])
        )
        out["endpoints"][i], out["times"][i] = more.endpoint, more.time
        out["steps"][i] += more.steps
        status[i] = int(more.status)
    return FlowEndpoints(status=status, **out)


def flow_endpoints(
    landscape: Landscape,
    thetas0: Any,
    options: FlowOptions | Sequence[FlowOptions] | None = None,
    *,
    decide_below: float | None = None,
    chunk_size: int = 4096,
    steps_per_round: int = 32,
    progress: bool | None = None,
    dtype: Any = np.float64,
    metric: str | Metric | None = None,
    escape_check: bool = True,
    desc: str | None = None,
    slide_on_kinks: bool = True,
    t0: Any = 0.0,
) -> FlowEndpoints:
    """Integrate many trajectories and return where each one stopped: the batch counterpart of
    :func:`flow`, with the same options.

    Args:
        landscape: the loss.
        thetas0: initial points, shape ``(B, dim)``.
        options: solver, step-size controller and stop rule (default :class:`FlowOptions()`),
            or a sequence of them tried in turn: members whose step budget runs out in one
            stage continue from where they stopped in the next (e.g. an explicit solver
            first, an implicit one for the stiff remainder).  ``gtol``, ``t_max`` and a
            constant step are in units of the loss's scales, as in :func:`flow`.  Explicit
            pairs (``Tsit5``, ``Dopri5``) under a :class:`~gradflow.PID` controller run as
            one batched program, every other solver through diffrax.  A
            :class:`~gradflow.GradientDescent` stage runs batched too: each member stops at
            the first iterate that meets the stop rule (in :func:`flow` the iterates run to
            the budget), and its step ``η`` is in the loss's own time, as in :func:`flow`.
        decide_below: stop a trajectory as :attr:`Outcome.GLOBAL_MIN` once its loss is below this
            level.  Sound only where the landscape proves it
            (:attr:`~gradflow.Landscape.sublevel_shortcut`).
        chunk_size: members integrated together.
        steps_per_round: solver steps before unfinished members are re-batched.
        progress: show a progress bar (default: only once the batch has run for 1.5 s).
        dtype: the floating type of the integration (see :func:`gradflow._flow.batched.integrate_batch`).
        metric: the metric of the flow (see :func:`flow`).
        escape_check: a member stopped at a small gradient from which the flow escapes along
            an unstable direction of the Hessian (beside a saddle, off its stable manifold:
            :func:`gradflow._flow.integrate.escaping`) is integrated on until it stops where it
            does not (with up to 16 parameters; the Hessian and gradient checked are the
            Euclidean ones in any metric).  ``False`` keeps every small-gradient stop (for a
            pass whose stops at saddles are integrated again).
        desc: what the progress bar is of (a fate map's ``"σ = 0.01, seed 2"``).
        slide_on_kinks: continue members that stop with flow time left on a landscape with
            kinks by :func:`gradflow.slide`, as :func:`flow` does; ``False`` keeps the stops
            of the batch's own stages (for a caller that continues them itself).

    Returns:
        Endpoints, stopping times, step counts and status codes, in the order of ``thetas0``;
        members that stop on a kink with flow time left are continued as in :func:`flow`
        (unless ``slide_on_kinks`` is false), and those still on a kink when their budget runs
        out have status ``NON_SMOOTH``.

    Raises:
        GradflowError: empty batch, wrong shape, non-finite initial points or start times, or
            a bad metric.
    """
    y0, flows, field, args, stages, scaled = batch_flow(landscape, thetas0, options, metric)
    starts = _start_times(t0, len(y0))
    scale = args[1]
    level = None if decide_below is None else decide_below / scale
    audit = (
        _escape_audit(landscape, max(s.t_max for s in stages) * loss_scales(landscape).time)
        if escape_check
        else None
    )

    def run(points: np.ndarray, stages: list[FlowOptions], t0: np.ndarray) -> FlowEndpoints:
        return integrate_batch(
            field,
            args,
            points,
            stages,
            decide_below=level,
            chunk_size=chunk_size,
            steps_per_round=steps_per_round,
            progress=progress,
            dtype=dtype,
            audit=audit,
            desc=desc,
            t0=t0 * scale,
        )

    result = run(y0, scaled, starts)
    tight = [tightened(s) for s in scaled]
    across = np.flatnonzero(crossed(landscape, y0, result.endpoints))
    if across.size and np.dtype(dtype) == np.float64 and all(t is not None for t in tight):
        again = run(y0[across], tight, starts[across])
        out = {k: np.array(getattr(result, k), copy=True) for k in ("endpoints", "times", "steps")}
        status = np.array(result.status, copy=True)
        out["endpoints"][across], out["times"][across] = again.endpoints, again.times
        out["steps"][across] += again.steps
        status[across] = again.status
        result = FlowEndpoints(status=status, **out)
    if slide_on_kinks:
        result = _slide_endpoints(flows, result, args, scaled[-1], level)
    status, _ = kink_status(landscape, result.endpoints, result.status)
    return dataclasses.replace(result, status=status, times=result.times / scale)


def batch_flow(
    landscape: Landscape,
    thetas0: Any,
    options: FlowOptions | Sequence[FlowOptions] | None,
    metric: str | Metric | None,
) -> tuple[np.ndarray, Landscape, GradientField, Any, list[FlowOptions], list[FlowOptions]]:
    """What :func:`flow_endpoints` integrates: the checked starts, the landscape in its metric,
    the field and arguments of its flow in units of its scales, and the stages with their
    divergence radii made absolute for these starts, as given and in those units."""
    stages = [options or FlowOptions()] if not isinstance(options, Sequence) else list(options)
    y0 = check_initial(landscape, thetas0)
    box = landscape.search_box()
    stages = [stage.within(box, y0) for stage in stages]
    flows = in_metric(landscape, metric, at=y0[0])
    field, args, _ = unit_flow(flows, stages[0])
    return y0, flows, field, args, stages, [unit_flow(landscape, s)[2] for s in stages]


def _start_times(t0: Any, n: int) -> np.ndarray:
    """The start times of a batch of ``n`` members, shape ``(n,)``.

    Raises:
        GradflowError: ``t0`` neither a scalar nor of shape ``(n,)``, or not finite and ≥ 0.
    """
    times = np.asarray(t0, dtype=np.float64)
    if times.shape not in ((), (n,)) or not np.all(np.isfinite(times) & (times >= 0)):
        raise GradflowError(
            f"t0 must be a finite flow time ≥ 0, a scalar or one per start ({n}), got "
            f"{np.array2string(times, threshold=4)} of shape {times.shape}"
        )
    return np.broadcast_to(times, (n,)).copy()


def _escape_audit(
    landscape: Landscape, horizon: float
) -> Callable[[np.ndarray], np.ndarray] | None:
    """The escape test within the flow time ``horizon`` of endpoints, from the landscape's
    Hessian and gradient (the programs its classification compiles), or ``None`` above
    :data:`ESCAPE_FULL_DIM` parameters."""
    if landscape.dim > ESCAPE_FULL_DIM:
        return None

    def audit(points: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            h, g = landscape.hessian(points), landscape.grad(points)
            return escape_test(np, h, g, horizon)

    return audit


def unit_flow(landscape: Landscape, options: FlowOptions) -> tuple[GradientField, Any, FlowOptions]:
    """The flow of ``L`` in units of its scales, for the integrators.

    The field is ``L/g`` (its arguments ``(args, g)``, so one compiled program serves every
    scale, as over a sweep of hyperparameters), whose flow is the flow of ``L`` in the time
    ``τ = g·t``: its gradient is ``O(1)`` whatever the scale of ``L``, so the solver takes the
    same steps on ``c·L`` as on ``L`` and the steady-state test ``‖∇L/g‖ ≤ gtol`` is relative.
    The time budget becomes ``τ ≤ t_max·ℓ`` (``t ≤ t_max·ℓ/g``), a constant step ``dt``
    becomes ``dt·ℓ``, and gradient descent's step ``η`` (in the loss's own time) becomes
    ``η·g``, so that its iterates stay those of ``θ ← θ − η∇L``.  ``rtol``, ``atol`` and
    ``divergence_radius`` are in parameter units, which the loss's scale does not change.

    Returns:
        ``(field, args, options)``; a loss level ``v`` of ``L`` is ``v/g`` of the field, and a
        time ``τ`` of its flow is ``τ/g`` of the flow of ``L``.
    """
    scales = loss_scales(landscape)
    scaled = options.with_stop(t_max=options.t_max * scales.length)
    if isinstance(options.controller, ConstantStep):
        step = ConstantStep(options.controller.dt * scales.length)
        scaled = dataclasses.replace(scaled, controller=step)
    if options.descent:
        lr = GradientDescent(options.solver.lr * scales.gradient)
        scaled = dataclasses.replace(scaled, solver=lr)
    return unit_field(landscape.field), (landscape.args, scales.gradient), scaled
