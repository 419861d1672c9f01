"""The full model a reduced model comes from: one value, :class:`FullModel`.

A reduced loss ``L(θ; h)`` is the loss of a full model ``L_full(W; h)`` on a family of its
parameters, ``W = embed(θ, h)``, with ``L_full(embed(θ, h); h) = L(θ; h)``.  A model declares the
pair once, as ``ReducedModel(..., full=FullModel(embed=..., loss=...))``; the metric the family
induces, the gradient pulled back and the distance of full parameters from the family all come
from that one value.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

__all__ = ["PROJECTION_STEPS", "PROJECTION_TOL", "FullModel"]

PROJECTION_STEPS = 256
"""Most Levenberg–Marquardt steps of the least-squares projection of a full model without
``project``."""
PROJECTION_TOL = 1e-12
"""Relative and absolute tolerance of that projection (optimistix's ``rtol`` and ``atol``)."""


@dataclass(frozen=True, eq=False)
class FullModel:
    """A reduced model's full model: its loss and the family of its parameters the reduced
    model lives on.

    Args:
        embed: ``embed(θ, h) -> W``, the full parameters (any JAX pytree) at reduced point ``θ``
            (shape ``(dim,)``) and hyperparameters ``h`` (shape ``(k,)``, in the order of the
            model's ``hyperparams``); traceable by JAX.
        loss: ``loss(W, h) -> scalar``, the full model's loss in the reduced model's unit, with
            ``loss(embed(θ, h), h) = L(θ; h)``; traceable by JAX.
        metric: ``metric(θ, h) -> G``, shape ``(dim, dim)``: the induced metric
            ``G = JᵀJ``, ``J = ∂ ravel(embed(θ, h))/∂θ``, in closed form (optional: by
            ``jax.jacfwd`` of ``embed`` otherwise).
        project: ``project(W) -> θ``, a left inverse of ``embed`` (optional: a least-squares
            projection, :meth:`projection`, otherwise).

    The reduced flow in ``G``, ``dθ/dt = -G⁻¹∇L``, is the full gradient flow
    ``dW/dt = -∇L_full`` seen in reduced coordinates wherever the family is invariant (the full
    gradient on it is tangent to it): ``Jᵀ∇L_full(embed θ) = ∇L(θ)`` by the chain rule.
    """

    embed: Callable[[jax.Array, jax.Array], Any]
    loss: Callable[[Any, jax.Array], jax.Array]
    metric: Callable[[jax.Array, jax.Array], jax.Array] | None = None
    project: Callable[[Any], jax.Array] | None = None

    @functools.cached_property
    def induced_metric(self) -> Callable[[jax.Array, jax.Array], jax.Array]:
        """``G(θ, h) = JᵀJ``: :attr:`metric` where given, else from the Jacobian of ``embed``
        (every full weight a row).  One function per full model, so flows in it compile once."""
        if self.metric is not None:
            return self.metric
        embed = self.embed

        def metric(theta: jax.Array, h: jax.Array) -> jax.Array:
            jac = jax.jacfwd(lambda t: ravel_pytree(embed(t, h))[0])(theta)
            return jac.T @ jac

        return metric

    def pulled_gradient(self, theta: jax.Array, h: jax.Array) -> jax.Array:
        """``Jᵀ ∇L_full`` at ``embed(θ, h)``, shape ``(dim,)``: the full gradient pulled back to
        reduced coordinates; ``∇L(θ)`` when the embedding preserves the loss."""
        params, vjp = jax.vjp(lambda t: self.embed(t, h), theta)
        return vjp(jax.grad(self.loss)(params, h))[0]

    def projection(self, params: Any, h: jax.Array, theta: jax.Array) -> jax.Array:
        """Reduced coordinates of full parameters ``params``, shape ``(dim,)``: ``project``
        where given, else the ``θ`` minimizing ``‖ravel(embed(θ, h)) − ravel(W)‖²`` that
        Levenberg–Marquardt (``optimistix.least_squares``) reaches from ``theta`` (a local
        minimum: the nearest point of the family seen from ``theta``); traceable."""
        if self.project is not None:
            return self.project(params)
        import optimistix as optx  # imported here: the main job never projects

        target = ravel_pytree(params)[0]

        def residual(t: jax.Array, _: Any) -> jax.Array:
            return ravel_pytree(self.embed(t, h))[0] - target

        solver = optx.LevenbergMarquardt(rtol=PROJECTION_TOL, atol=PROJECTION_TOL)
        start = jnp.asarray(theta, target.dtype)
        found = optx.least_squares(residual, solver, start, max_steps=PROJECTION_STEPS, throw=False)
        return found.value

    def family_distance(self, params: Any, h: jax.Array, theta: jax.Array) -> jax.Array:
        """``‖W − embed(θ̂, h)‖`` with ``θ̂`` the :meth:`projection` of ``W`` (from ``theta``):
        the distance of full parameters from the embedded family, weight units (0 on it)."""
        back = self.embed(self.projection(params, h, theta), h)
        return jnp.linalg.norm(ravel_pytree(params)[0] - ravel_pytree(back)[0])
