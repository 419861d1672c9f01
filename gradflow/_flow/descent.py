"""Plain gradient descent ``θ ← θ - η ∇L(θ, args)``: the discrete map that full training uses,
one trajectory recorded (:func:`descend`) or a batch advanced in rounds (:func:`descent_round`)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._errors import GradflowError
from .._landscape.base import GradientField, padded_call
from .._outcome import Outcome
from .integrate import PATH_SIZES, Trajectory, _path_losses, diverged, status_code, status_of
from .options import FlowOptions

__all__ = ["descend", "descent_round"]


def descend(
    field: GradientField,
    theta0: Any,
    args: Any,
    options: FlowOptions,
    ts: np.ndarray | None = None,
) -> Trajectory:
    """Plain gradient descent ``θ ← θ - η ∇L(θ, args)`` from flat ``theta0``, with ``η`` the
    ``lr`` of ``options.solver`` (:class:`~gradflow._flow.options.GradientDescent`).

    Args:
        field: the loss and its gradient on flat parameters.
        theta0: initial point, shape ``(dim,)``.
        args: passed to the field.
        options: the solver (its step ``η``) and the stop rule: ``min(max_steps, ⌊t_max/η⌋)``
            steps; ``gtol`` and ``divergence_radius`` label the stop.
        ts: the flow times to record, ``0, kη, 2kη, …`` for a whole ``k ≥ 1`` (every ``k``-th
            iterate; the steps end at the last of them, or earlier at the budget); default
            every iterate.

    Returns:
        The recorded iterates with ``ts = η · iteration``; status ``CONVERGED`` if the last
        iterate has ``‖∇L‖₂ ≤ gtol``, ``DIVERGED`` if any iterate left the radius or was not
        finite (the path ends at the first such), else ``NOT_CONVERGED``.

    Raises:
        GradflowError: ``ts`` not of that form.
    """
    lr = options.solver.lr
    budget = min(options.max_steps, int(np.floor(options.t_max / lr * (1 + 1e-12))))
    every, steps = _recording(ts, lr, budget)
    y0 = np.asarray(theta0, np.float64)
    ys = np.asarray(_descend_path(field, y0, args, lr, steps, every))
    ys = np.concatenate([y0[None], ys])
    times = lr * every * np.arange(len(ys))
    bad = padded_call(_path_diverged(options), ys, ys.shape[-1], (), None, PATH_SIZES)
    if bad.any():
        first = int(np.argmax(bad))
        ys, times, status = ys[: first + 1], times[: first + 1], Outcome.DIVERGED
    else:
        status = Outcome(int(_last_status(field, options, ys[-1], args)))
    losses = padded_call(_path_losses(field), ys, ys.shape[-1], (), args, PATH_SIZES)
    return Trajectory(ts=times, thetas=ys, losses=losses, status=status)


@functools.cache
def _path_diverged(options: FlowOptions) -> Callable[[jax.Array, Any], jax.Array]:
    """:func:`~gradflow._flow.integrate.diverged` at each row of a path, jitted once per
    ``options`` (run op by op it was a program per operation and path length)."""
    return jax.jit(lambda ys, _: diverged(ys, options))


@functools.partial(jax.jit, static_argnums=(0, 1))
def _last_status(field: GradientField, options: FlowOptions, y: jax.Array, args: Any) -> jax.Array:
    """:func:`~gradflow._flow.integrate.status_code` of the last iterate, one compiled program
    per ``(field, options)``."""
    return status_code(field, options, y, args, jnp.asarray(-jnp.inf, y.dtype))


def _recording(ts: np.ndarray | None, lr: float, budget: int) -> tuple[int, int]:
    """``(every, steps)``: record every ``every``-th of ``steps`` iterates, for the recording
    times ``ts`` (default every iterate) within ``budget`` steps.

    Raises:
        GradflowError: ``ts`` not ``0, kη, 2kη, …`` for a whole ``k ≥ 1``.
    """
    if ts is None:
        return 1, budget
    ts = np.asarray(ts, dtype=np.float64)
    k = round(float(ts[1]) / lr) if ts.ndim == 1 and len(ts) >= 2 else 0
    if k < 1 or not np.allclose(ts, lr * k * np.arange(len(ts)), rtol=1e-9, atol=0):
        raise GradflowError(
            f"ts must be 0, kη, 2kη, … for a whole k ≥ 1 (η = {lr:g}, gradient descent), got "
            f"{np.asarray(ts)[:4]!r}…"
        )
    return k, min(k * (len(ts) - 1), budget)


@functools.partial(jax.jit, static_argnums=(0, 3, 4, 5))
def _descend_path(
    field: GradientField, y0: jax.Array, args: Any, lr: float, steps: int, every: int
) -> jax.Array:
    def block(y: jax.Array, _: None) -> tuple[jax.Array, jax.Array]:
        y = jax.lax.fori_loop(0, every, lambda _, z: z - lr * field.grad(z, args), y)
        return y, y

    return jax.lax.scan(block, y0, None, length=steps // every)[1]


@functools.cache
def descent_round(
    field: GradientField, options: FlowOptions, steps: int, strict: bool = False
) -> Callable[..., tuple[jax.Array, ...]]:
    """Jitted: advance a chunk of members by at most ``steps`` gradient-descent steps each, the
    round of a batched integration (:func:`gradflow._flow.batched.integrate_batch`).

    Maps ``(y0, t0, dt0, args, level)`` (shapes ``(B, dim)``, ``(B,)``, ``(B,)``, shared,
    scalar) to ``(y, t, dt0, steps, status)``.  Each member is tested at every iterate, before
    its step, by the stop rule of :func:`~gradflow._flow.integrate.status_code` (diverged,
    ``‖∇L‖₂ ≤ gtol``, loss below ``level``; ``strict`` adds the escape test) from the loss and
    gradient the step uses, so a step costs one gradient and one loss; it stops at the first
    iterate that meets it, and with :attr:`Outcome.NOT_CONVERGED` where one more step would
    pass ``t_max`` (the budget ``⌊t_max/η⌋`` of :func:`descend`).  ``status`` is ``-1`` for a
    member still running.  Iterates are those of :func:`descend` from the same start: one
    member's arithmetic does not depend on the others'."""
    lr = options.solver.lr
    t_end = options.t_max * (1 + 1e-12)
    running = int(Outcome.NOT_CONVERGED)

    def one(y0: jax.Array, t0: jax.Array, dt0: jax.Array, args: Any, level: jax.Array):
        def tested(y: jax.Array, t: jax.Array) -> tuple[jax.Array, jax.Array]:
            loss, grad = field.loss(y, args), field.grad(y, args)
            code = status_of(field, options, y, args, level, loss, grad, strict=strict)
            code = jnp.where((code == running) & (t + lr <= t_end), -1, code)
            return code, grad

        def go_on(c: tuple[jax.Array, ...]) -> jax.Array:
            return (c[3] < 0) & (c[2] < steps)

        def step(c: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
            y, t, n, _, grad = c
            y, t = y - lr * grad, t + lr
            return (y, t, n + 1, *tested(y, t))

        start = (y0, t0, jnp.zeros((), jnp.int32), *tested(y0, t0))
        y, t, n, code, _ = jax.lax.while_loop(go_on, step, start)
        return y, t, dt0, n, code

    return jax.jit(jax.vmap(one, in_axes=(0, 0, 0, None, None)))
