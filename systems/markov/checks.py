"""Reduced-vs-full checks of the canonical Markov models: value, gradient, dynamics.

The oracle is the full transformer's exact population loss (:func:`exact_loss`, all ``2^N``
input sequences enumerated, float64).

- Value: ``L_full(embed(θ)) = L_reduced(θ)``.
- Gradient: the full gradient ``g = ∇L_full`` at ``embed(θ)`` pulled back, ``Jᵀ g`` with
  ``J = ∂embed/∂θ``, equals ``∇L_reduced(θ)``; the rest of ``g``, ``(I - P) g`` with
  ``P = J (JᵀJ)⁻¹ Jᵀ`` the orthogonal projector onto the tangent space of the rank-one manifold, is
  reported per parameter group: it is zero everywhere exactly when the manifold is invariant
  under the full gradient flow.
- Dynamics: full-batch gradient descent on the exact loss from ``embed(θ0)``, projected back with
  :func:`canonical_coordinates`, against the reduced flow in the metric the embedding induces,
  ``dθ/dt = -G⁻¹ ∇L_reduced`` with ``G = JᵀJ`` (what the full flow would be if the manifold were
  invariant).  The first-order prediction of the deviation is ``t ‖Dπ (I - P) g‖`` (``π`` the
  projection).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from gradflow import PID, BoundModel, FlowOptions, GradflowError, GradientField, StopRule, flow

from .data import check_length
from .embedding import canonical_coordinates, default_direction
from .ranges import FULL_LENGTH
from .transformer import check_attention, check_width, exact_loss

__all__ = [
    "DynamicsCheck",
    "EmbeddingChecks",
    "GROUPS",
    "dynamics_check",
    "embedding_checks",
    "family_residual",
    "random_points",
]

GROUPS = {
    "embedding": ("e", "positions", "unembed"),
    "attention": ("W_Q", "W_K", "W_V", "W_O"),
    "ffn": ("W_1", "W_2"),
    "bias": ("b",),
}
"""Parameter groups over which the off-manifold gradient is reported."""

POINT_BOX = {"e": (-1.5, 1.5), "w": (-1.5, 1.5), "a": (-1.5, 1.5), "b": (-2.0, 2.0)}
"""Where :func:`random_points` draws reduced points (uniform)."""


def random_points(bound: BoundModel, count: int, seed: int = 0) -> np.ndarray:
    """``count`` reduced points uniform in :data:`POINT_BOX`, shape ``(count, dim)``, seeded."""
    if isinstance(count, bool) or int(count) != count or count < 1:
        raise GradflowError(f"count = {count!r} must be an integer ≥ 1")
    lo, hi = np.array([POINT_BOX[n] for n in bound.model.param_names]).T
    return np.random.default_rng(seed).uniform(lo, hi, size=(int(count), bound.model.dim))


def _group_masks(model: Any) -> dict[str, np.ndarray]:
    """Boolean masks over the flat parameter vector (``ravel_pytree`` order), one per group."""
    sizes, names = [], []
    for path, leaf in jax.tree_util.tree_leaves_with_path(model):
        names.append(path[0].name)
        sizes.append(int(np.size(leaf)))
    owner = np.repeat(np.arange(len(names)), sizes)
    return {
        group: np.isin(owner, [i for i, n in enumerate(names) if n in fields])
        for group, fields in GROUPS.items()
    }


@dataclass(frozen=True)
class EmbeddingChecks:
    """Value and gradient checks at reduced points.

    Attributes:
        model: the reduced model's name; hyperparameters in ``values``.
        thetas: the reduced points, shape ``(K, dim)``.
        reduced_loss, full_loss: shape ``(K,)``, nats.
        reduced_grad, pulled_grad: ``∇L_reduced`` and ``Jᵀ ∇L_full``, shape ``(K, dim)``.
        off_manifold: ``‖(I - P) g‖ / ‖g‖`` at each point, shape ``(K,)``.
        off_groups: per group, the share ``‖(I - P) g‖²_group / ‖(I - P) g‖²`` (sums to 1).
        outside_family: :func:`family_residual` of ``g`` at each point, shape ``(K,)``.
        length, d, attention: the full model's settings.
    """

    model: str
    values: dict[str, float]
    thetas: np.ndarray
    reduced_loss: np.ndarray
    full_loss: np.ndarray
    reduced_grad: np.ndarray
    pulled_grad: np.ndarray
    off_manifold: np.ndarray
    off_groups: dict[str, np.ndarray]
    outside_family: np.ndarray
    length: int
    d: int
    attention: str

    @property
    def value_error(self) -> float:
        """``max |L_full(embed θ) - L_reduced(θ)|`` over the points, nats."""
        return float(np.max(np.abs(self.full_loss - self.reduced_loss)))

    @property
    def gradient_error(self) -> float:
        """``max |Jᵀ ∇L_full - ∇L_reduced|`` over points and coordinates."""
        return float(np.max(np.abs(self.pulled_grad - self.reduced_grad)))


def family_residual(grads: Any, alpha: jax.Array) -> jax.Array:
    """Relative size of the part of a full gradient outside the rank-one family along ``α``.

    The family: ``e``, ``p_n`` (and ``unembed``) multiples of ``α``; ``W_Q, W_K, W_V, W_1`` of the
    form ``x αᵀ``; ``W_O, W_2`` of the form ``α xᵀ``; ``W_1`` with equal rows and ``W_2`` with
    equal columns.  The loss is invariant under the orthogonal maps of the residual stream that
    fix ``α`` and under permutations of the hidden units; the family is their fixed-point set, so
    the gradient flow cannot leave it.  Returns ``‖outside part‖ / ‖grads‖`` (0 when it holds).
    """
    off = jnp.eye(alpha.shape[0]) - jnp.outer(alpha, alpha)
    parts = [grads.e @ off, grads.positions @ off]
    parts += [getattr(grads, n) @ off for n in ("W_Q", "W_K", "W_V", "W_1")]
    parts += [off @ getattr(grads, n) for n in ("W_O", "W_2")]
    parts += [grads.W_1 - grads.W_1.mean(axis=0), grads.W_2 - grads.W_2.mean(axis=1, keepdims=True)]
    if grads.unembed is not None:
        parts.append(grads.unembed @ off)
    outside = jnp.sqrt(sum(jnp.sum(x**2) for x in parts))
    return outside / jnp.sqrt(sum(jnp.sum(x**2) for x in jax.tree.leaves(grads)))


def _point_check(theta, h, alpha, *, embed, length, attention):
    """Full loss, pulled-back gradient, off-manifold gradient, ``‖g‖`` and the part of ``g``
    outside the rank-one family, at one reduced point."""

    def flat_embed(t):
        return ravel_pytree(embed(t, h, length=length, direction=alpha, attention=attention))[0]

    full = embed(theta, h, length=length, direction=alpha, attention=attention)
    flat, unravel = ravel_pytree(full)
    loss, g = jax.value_and_grad(lambda f: exact_loss(unravel(f), h[0], h[1]))(flat)
    jac = jax.jacfwd(flat_embed)(theta)
    pulled = jac.T @ g
    residual = g - jac @ jnp.linalg.solve(jac.T @ jac, pulled)
    return loss, pulled, residual, jnp.linalg.norm(g), family_residual(unravel(g), alpha)


@functools.partial(jax.jit, static_argnames=("embed", "length", "attention"))
def _batch_check(thetas, h, alpha, *, embed, length, attention):
    """:func:`_point_check` at every row of ``thetas``."""
    return jax.vmap(
        lambda t: _point_check(t, h, alpha, embed=embed, length=length, attention=attention)
    )(thetas)


def embedding_checks(
    bound: BoundModel,
    thetas: np.ndarray,
    *,
    length: int = 10,
    d: int = 8,
    direction: np.ndarray | None = None,
    attention: str = "linear",
) -> EmbeddingChecks:
    """Value and gradient checks of a reduced Markov model against the full transformer.

    Args:
        bound: a reduced model with a full model (canonical, canonical-bias, canonical-attention,
            canonical-attention-bias) at fixed ``p, q``.
        thetas: reduced points, shape ``(K, dim)``.
        length: positions ``N`` of the full model (exact enumeration: ``N ≤ 14``).
        d: width (ignored when ``direction`` is given).
        direction: the unit vector ``α`` of the embedding (default ``1/√d``).
        attention: attention kind of the full model.

    Raises:
        GradflowError: a model without a full model, ``N > 14``, a bad width or attention kind.
    """
    if bound.model.full is None:
        raise GradflowError(f"model {bound.model.name!r} has no embedding into a full model")
    embed = bound.model.full.embed
    check_length(length, exact=True)
    check_attention(attention)
    alpha = (
        default_direction(check_width(d))
        if direction is None
        else jnp.asarray(direction, jnp.float64)
    )
    thetas = np.atleast_2d(np.asarray(thetas, np.float64))
    if thetas.shape[1] != bound.model.dim or not len(thetas):
        raise GradflowError(
            f"points must have shape (K, {bound.model.dim}) for ({', '.join(bound.model.param_names)}), got {thetas.shape}"
        )
    h = bound.h
    count = len(thetas)
    padded = np.zeros((max(32, 1 << (count - 1).bit_length()), thetas.shape[1]))
    padded[:count] = thetas
    padded[count:] = thetas[0]
    full_loss, pulled, residuals, gnorm, outside = (
        np.asarray(v)[:count]
        for v in _batch_check(
            jnp.asarray(padded), h, alpha, embed=embed, length=length, attention=attention
        )
    )
    masks = _group_masks(
        embed(jnp.asarray(thetas[0]), h, length=length, direction=alpha, attention=attention)
    )
    total = np.sum(residuals**2, axis=1)
    safe = np.where(total > 0, total, 1.0)
    return EmbeddingChecks(
        model=bound.model.name,
        values=dict(bound.values),
        thetas=thetas,
        reduced_loss=bound.loss(thetas),
        full_loss=full_loss,
        reduced_grad=bound.grad(thetas),
        pulled_grad=pulled,
        off_manifold=np.sqrt(total) / np.where(gnorm > 0, gnorm, 1.0),
        off_groups={k: np.sum(residuals[:, m] ** 2, axis=1) / safe for k, m in masks.items()},
        outside_family=outside,
        length=length,
        d=int(alpha.shape[0]),
        attention=attention,
    )


@dataclass(frozen=True)
class DynamicsCheck:
    """Full gradient descent from ``embed(θ0)`` against the reduced flow in the induced metric.

    Attributes:
        times: flow times ``η k`` of the recorded steps, shape ``(m,)``.
        full: projected full iterates ``(e, w, a, b)``, shape ``(m, 4)``.
        reduced: the reduced flow at the same times, shape ``(m, 4)``.
        full_loss, reduced_loss: exact full loss and reduced loss, shape ``(m,)``, nats.
        metric: ``G = JᵀJ`` at ``θ0``, shape ``(4, 4)``.
        first_order_rate: ``‖Dπ (I - P) g‖`` at ``θ0``: the predicted initial growth rate of the
            deviation (parameter units per flow-time unit).
        lr, length: the step ``η`` and positions ``N``.
    """

    times: np.ndarray
    full: np.ndarray
    reduced: np.ndarray
    full_loss: np.ndarray
    reduced_loss: np.ndarray
    metric: np.ndarray
    first_order_rate: float
    lr: float
    length: int

    @property
    def deviation(self) -> np.ndarray:
        """``‖π(Θ(t)) - θ(t)‖₂`` at each recorded time, shape ``(m,)``."""
        return np.linalg.norm(self.full - self.reduced, axis=1)

    @property
    def max_deviation(self) -> float:
        """Maximum of :attr:`deviation` over the run (parameter units)."""
        return float(self.deviation.max())


@functools.partial(jax.jit, static_argnames=("steps", "every"))
def _full_descent(model0, h, alpha, lr, *, steps, every):
    """GD on the exact loss; returns the projected coordinates and losses every ``every`` steps."""

    def loss(m):
        return exact_loss(m, h[0], h[1])

    def step(_, m):
        return jax.tree.map(lambda x, g: x - lr * g, m, jax.grad(loss)(m))

    def block(m, _):
        m = jax.lax.fori_loop(0, every, step, m)
        return m, (canonical_coordinates(m, alpha), loss(m))

    first = (canonical_coordinates(model0, alpha), loss(model0))
    _, (coords, losses) = jax.lax.scan(block, model0, None, length=steps // every)
    return jnp.concatenate([first[0][None], coords]), jnp.concatenate([first[1][None], losses])


@functools.partial(jax.jit, static_argnames=("embed", "length"))
def _geometry(theta0, h, alpha, *, embed, length):
    """``G = JᵀJ`` and the first-order deviation rate ``‖Dπ (I - P) g‖`` at ``θ0``."""
    full0 = embed(theta0, h, length=length, direction=alpha)
    flat0, unravel = ravel_pytree(full0)
    jac = jax.jacfwd(lambda t: ravel_pytree(embed(t, h, length=length, direction=alpha))[0])(theta0)
    _, _, residual, _, _ = _point_check(
        theta0, h, alpha, embed=embed, length=length, attention="linear"
    )
    d_proj = jax.jacfwd(lambda f: canonical_coordinates(unravel(f), alpha))(flat0)
    return jac.T @ jac, jnp.linalg.norm(d_proj @ residual)


@functools.cache
def _metric_field(compiled: Any) -> GradientField:
    """``-G⁻¹ ∇L`` of a compiled reduced model, with ``args = (h, G⁻¹)``."""
    return GradientField(
        loss=lambda t, args: compiled.loss(t, args[0]),
        grad=lambda t, args: args[1] @ compiled.grad(t, args[0]),
    )


def dynamics_check(
    bound: BoundModel,
    theta0: np.ndarray,
    *,
    length: int = FULL_LENGTH,
    d: int = 8,
    lr: float = 0.05,
    steps: int = 2000,
    every: int = 20,
    direction: np.ndarray | None = None,
) -> DynamicsCheck:
    """Full-batch GD on the exact loss from ``embed(θ0)`` against the reduced flow (see module).

    Args:
        bound: the canonical-attention-bias model ``L(e, w, a, b)`` (its coordinates are the
            projection's) at fixed ``p, q``.
        theta0: initial reduced point ``(e, w, a, b)``.
        length: sequence length ``N`` of the full model (linear attention).
        d: its embedding width.
        direction: the unit vector ``α`` of the embedding, shape ``(d,)``.
        lr: GD step ``η`` (flow time per step).
        steps: number of steps.
        every: recording interval, in steps.

    Raises:
        GradflowError: a model whose coordinates are not ``(e, w, a, b)``, bad ``lr``/``steps``.
    """
    if bound.model.param_names != ("e", "w", "a", "b"):
        raise GradflowError(
            f"the dynamics check needs coordinates (e, w, a, b), got {bound.model.param_names}"
        )
    if not lr > 0:
        raise GradflowError(f"lr = {lr!r} must be > 0")
    if steps < every or every < 1:
        raise GradflowError(f"steps = {steps!r} must be ≥ every = {every!r} ≥ 1")
    check_length(length, exact=True)
    embed, h = bound.model.full.embed, bound.h
    alpha = (
        default_direction(check_width(d))
        if direction is None
        else jnp.asarray(direction, jnp.float64)
    )
    theta0 = jnp.asarray(theta0, jnp.float64)
    full0 = embed(theta0, h, length=length, direction=alpha)
    coords, losses = _full_descent(
        full0, h, alpha, jnp.asarray(lr, jnp.float64), steps=steps, every=every
    )
    metric, rate = (np.asarray(v) for v in _geometry(theta0, h, alpha, embed=embed, length=length))
    times = lr * every * np.arange(steps // every + 1)
    args = (h, jnp.asarray(np.linalg.inv(metric)))
    options = FlowOptions(
        solver=diffrax.Tsit5(), controller=PID(rtol=1e-10, atol=1e-12), stop=StopRule(gtol=1e-12)
    )
    path = flow(_metric_field(bound.compiled), np.asarray(theta0), options, args=args, ts=times)
    reduced = _hold_last(path.thetas, len(times))
    return DynamicsCheck(
        times=times,
        full=np.asarray(coords),
        reduced=reduced,
        full_loss=np.asarray(losses),
        reduced_loss=bound.loss(reduced),
        metric=metric,
        first_order_rate=float(rate),
        lr=float(lr),
        length=length,
    )


def _hold_last(thetas: np.ndarray, count: int) -> np.ndarray:
    """Pad a path that stopped early (at a steady state) with its endpoint to ``count`` rows."""
    if len(thetas) >= count:
        return thetas[:count]
    return np.concatenate([thetas, np.repeat(thetas[-1:], count - len(thetas), axis=0)])
