"""Plain gradient descent ``θ ← θ - η ∇L(θ, args)``: the discrete map that full training uses."""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._errors import GradflowError
from .._landscape.base import GradientField
from .._outcome import Outcome
from .integrate import FlowOptions, Trajectory, diverged, status_code

__all__ = ["descend"]


def descend(
    field: GradientField,
    theta0: Any,
    args: Any = None,
    *,
    lr: float,
    steps: int,
    every: int = 1,
    options: FlowOptions | None = None,
) -> Trajectory:
    """Plain gradient descent ``θ ← θ - η ∇L(θ, args)`` from flat ``theta0``.

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
    bad = np.asarray(diverged(jnp.asarray(ys), options))
    if bad.any():
        first = int(np.argmax(bad))
        ys, ts, status = ys[: first + 1], ts[: first + 1], Outcome.DIVERGED
    else:
        status = Outcome(int(status_code(field, options, jnp.asarray(ys[-1]), args, -jnp.inf)))
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
