"""The full Markov transformer as a :class:`gradflow.Landscape` over its flat weights
(``ravel_pytree`` order), and the batched programs a fate map runs on it: the loss, the
embedding of reduced points, the projection back, the relative distance from the reduced
family and the full Hessian."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from gradflow import GradflowError, GradientField, Kinks, Landscape, padded_call

from .full_model import MarkovFullModel
from .transformer import exact_loss_at, prefix_preactivations


@dataclass(frozen=True, eq=False)
class FullLandscape(Landscape):
    """The full model's exact loss over its flat weights (``ravel_pytree`` order), as a landscape.

    The field is built once per full model, so runs at other ``(p, q)`` reuse the compiled
    integrator (``h`` is the field's argument).
    """

    full: MarkovFullModel
    h: jax.Array

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(f"W{i}" for i in range(_size(self.full)))

    @property
    def field(self) -> GradientField:
        return full_field(self.full)

    @property
    def kinks(self) -> Kinks:
        """The FFN's ReLUs: a kink where its input at some prefix is 0
        (:func:`~gradflow.systems.markov.transformer.prefix_preactivations`), slopes ``[0, 1]``."""
        return _full_kinks(self.full)

    @property
    def declared_scales(self) -> tuple[float, float]:
        """Absolute units: ``gtol`` in nats per weight unit, ``t_max`` in time units of the
        flow, the time of the reduced flow it is compared with."""
        return (1.0, 1.0)

    @property
    def args(self) -> jax.Array:
        return self.h

    @property
    def name(self) -> str:
        return f"full model of {self.full.reduced.name}"

    def loss(self, theta: Any) -> np.ndarray:
        return batched_loss(self.full)(theta, self.h)

    def grad(self, theta: Any) -> np.ndarray:
        return batched_grad(self.full)(theta, self.h)

    def hessian(self, theta: Any) -> np.ndarray:
        raise GradflowError("the full landscape does not form Hessians of its weights")


@functools.cache
def _unravel(full: MarkovFullModel) -> Callable[[jax.Array], Any]:
    theta = jnp.zeros(full.reduced.dim).at[0].set(1.0)
    return ravel_pytree(full.embed(theta, jnp.asarray([0.5, 0.5])))[1]


@functools.cache
def _size(full: MarkovFullModel) -> int:
    theta = jnp.zeros(full.reduced.dim).at[0].set(1.0)
    return int(ravel_pytree(full.embed(theta, jnp.asarray([0.5, 0.5])))[0].size)


@functools.cache
def full_field(full: MarkovFullModel) -> GradientField:
    unravel = _unravel(full)
    return GradientField.from_loss(lambda flat, h: full.loss(unravel(flat), h))


@functools.cache
def _full_kinks(full: MarkovFullModel) -> Kinks:
    unravel = _unravel(full)
    units = 4 * full.d
    count = (2 ** (full.length + 1) - 2) * units
    return Kinks(
        surfaces=lambda flat, h: prefix_preactivations(unravel(flat)).ravel(),
        loss_at=lambda flat, s, h: exact_loss_at(unravel(flat), h[0], h[1], s.reshape(-1, units)),
        lo=np.zeros(count),
        hi=np.ones(count),
    )


FULL_CALL_SIZES = (16, 64, 256, 1024)
"""The batch sizes the full model's batched programs pad to (:func:`gradflow.padded_call`).  A
fate map evaluates recorded paths of every length, and each length would otherwise be a program
of its own, a tenth of a second or more to compile for the full transformer; a member of a batch
costs about 0.2 ms, so a factor of 4 between sizes wastes at most three quarters of a call."""


def _padded(
    batched: Callable[[jax.Array, Any], jax.Array], width: int, tail: tuple[int, ...]
) -> Callable[..., np.ndarray]:
    """``batched`` (rows of ``width`` values, and ``h``) applied to points of shape
    ``(..., width)`` at the sizes of :data:`FULL_CALL_SIZES`; returns shape ``(...) + tail``."""
    return lambda x, h=None: padded_call(batched, x, width, tail, h, sizes=FULL_CALL_SIZES)


@functools.cache
def batched_loss(full: MarkovFullModel) -> Callable[..., np.ndarray]:
    """``L(W, h)`` of flat weights ``(..., P)``, shape ``(...)``."""
    loss = jax.jit(jax.vmap(full_field(full).loss, in_axes=(0, None)))
    return _padded(loss, _size(full), ())


@functools.cache
def batched_grad(full: MarkovFullModel) -> Callable[..., np.ndarray]:
    """``∇L(W, h)`` of flat weights ``(..., P)``, shape ``(..., P)``."""
    grad = jax.jit(jax.vmap(full_field(full).grad, in_axes=(0, None)))
    return _padded(grad, _size(full), (_size(full),))


@functools.cache
def embed_batch(full: MarkovFullModel) -> Callable[..., np.ndarray]:
    """``embed(θ, h)`` of reduced points ``(..., dim)`` as flat weights, shape ``(..., P)``."""
    embed = jax.jit(jax.vmap(lambda t, h: ravel_pytree(full.embed(t, h))[0], in_axes=(0, None)))
    return _padded(embed, full.reduced.dim, (_size(full),))


@functools.cache
def project_batch(full: MarkovFullModel) -> Callable[..., np.ndarray]:
    """``project(W)`` of flat weights ``(..., P)``, shape ``(..., dim)``."""
    unravel = _unravel(full)
    project = jax.jit(jax.vmap(lambda f: full.project(unravel(f))))
    return _padded(lambda x, _: project(x), _size(full), (full.reduced.dim,))


@functools.cache
def off_family(full: MarkovFullModel) -> Callable[..., np.ndarray]:
    """``‖W - embed(project(W))‖ / ‖W‖`` of flat weights ``(..., P)``, shape ``(...)``: the
    relative distance of full weights from the reduced family (0 on it: ``project`` is a left
    inverse of ``embed``)."""
    unravel = _unravel(full)

    def off(flat: jax.Array, h: jax.Array) -> jax.Array:
        back = ravel_pytree(full.embed(full.project(unravel(flat)), h))[0]
        return jnp.linalg.norm(flat - back) / jnp.linalg.norm(flat)

    return _padded(jax.jit(jax.vmap(off, in_axes=(0, None))), _size(full), ())


HESSIAN_COLUMNS = 64
"""Columns of the full Hessian formed together (Hessian-vector products of unit vectors, one
compiled program)."""


@functools.cache
def _hessian_columns(full: MarkovFullModel) -> Callable[..., jax.Array]:
    """Jitted: ``∇²L(x, h) v`` for a batch of vectors ``v`` (rows), forward over reverse."""
    field = full_field(full)

    def hvp(x: jax.Array, v: jax.Array, h: jax.Array) -> jax.Array:
        return jax.jvp(lambda y: field.grad(y, h), (x,), (v,))[1]

    return jax.jit(jax.vmap(hvp, in_axes=(None, 0, None)))


def full_hessian(full: MarkovFullModel, x: np.ndarray, h: np.ndarray) -> np.ndarray:
    """The full Hessian ``∇²L`` at flat weights ``x`` (shape ``(P,)``), shape ``(P, P)``,
    symmetrized, from Hessian-vector products of the unit vectors in blocks of
    :data:`HESSIAN_COLUMNS` (the last block padded with zero vectors)."""
    n = x.size
    columns = _hessian_columns(full)
    xj, hj = jnp.asarray(x), jnp.asarray(h)
    blocks = []
    for first in range(0, n, HESSIAN_COLUMNS):
        units = np.zeros((HESSIAN_COLUMNS, n))
        count = min(HESSIAN_COLUMNS, n - first)
        units[np.arange(count), first + np.arange(count)] = 1.0
        blocks.append(np.asarray(columns(xj, jnp.asarray(units), hj))[:count])
    hessian = np.concatenate(blocks)
    return 0.5 * (hessian + hessian.T)
