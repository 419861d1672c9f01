"""SymPy → JAX: the compiled loss, gradient, Hessian and invariants of a reduced model.

Compiled once per :class:`ReducedModel` (cached) and shared by every hyperparameter value:
hyperparameters are array arguments, so a sweep over ``(p, q)`` does not recompile.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import sympy as sp

from ._model import ReducedModel
from ._sym import lambdify_jax, lambdify_numpy

__all__ = ["CompiledModel", "compile_model", "numpy_gradient"]

Fn = Callable[[jax.Array, jax.Array], jax.Array]


@dataclass(frozen=True, eq=False)
class CompiledModel:
    """Jitted JAX callables of a reduced model; every one takes ``(θ, h)``.

    ``θ`` has shape ``(..., dim)`` (any leading batch axes), ``h`` shape ``(n_hyper,)``.

    Attributes:
        loss: ``L(θ; h)``, shape ``(...)``, nats.
        grad: ``∇L``, shape ``(..., dim)``; differentiated symbolically, then lambdified.
        hessian: ``∇²L``, shape ``(..., dim, dim)``; forward-mode derivative of ``grad``.
        invariants: conserved quantities by name, each shape ``(...)``.
        symbolic_grad: the SymPy gradient, one expression per parameter.
    """

    loss: Fn
    grad: Fn
    hessian: Fn
    invariants: dict[str, Fn]
    symbolic_grad: tuple[sp.Expr, ...]


def _unpack(fn: Callable[..., jax.Array], dim: int, *, vector: bool) -> Fn:
    """Adapt ``fn(θ_1, …, θ_dim, h_1, …)`` to ``fn(θ, h)`` with batched ``θ``.

    The output is broadcast to ``θ.shape`` for a vector-valued ``fn`` (one value per parameter),
    and to ``θ.shape[:-1]`` for a scalar one.
    """

    def wrapped(theta: jax.Array, h: jax.Array) -> jax.Array:
        theta, h = jnp.asarray(theta), jnp.asarray(h)
        out = fn(*(theta[..., i] for i in range(dim)), *(h[j] for j in range(h.shape[0])))
        return jnp.broadcast_to(out, theta.shape if vector else theta.shape[:-1])

    return wrapped


@functools.cache
def compile_model(model: ReducedModel) -> CompiledModel:
    """Lambdify the model's loss, symbolic gradient and invariants to jitted JAX functions."""
    symbols = (*model.params, *model.hyperparams)
    dim = model.dim
    symbolic_grad = tuple(sp.diff(model.loss, s) for s in model.params)
    loss = _unpack(lambdify_jax(symbols, model.loss), dim, vector=False)
    grad = _unpack(lambdify_jax(symbols, symbolic_grad), dim, vector=True)

    def hessian(theta: jax.Array, h: jax.Array) -> jax.Array:
        point_hessian = jax.jacfwd(lambda t: grad(t, h))
        flat = theta.reshape(-1, dim)
        return jax.vmap(point_hessian)(flat).reshape(theta.shape + (dim,))

    invariants = {
        name: jax.jit(_unpack(lambdify_jax(symbols, expr), dim, vector=False))
        for name, expr in model.invariants.items()
    }
    return CompiledModel(
        loss=jax.jit(loss),
        grad=jax.jit(grad),
        hessian=jax.jit(hessian),
        invariants=invariants,
        symbolic_grad=symbolic_grad,
    )


@functools.cache
def numpy_gradient(model: ReducedModel) -> Callable[..., Any]:
    """The symbolic ``∇L`` lambdified to NumPy, a function of scalars ``(θ_1, …, θ_dim, h_1, …)``.

    For per-point calls from Python (e.g. ``scipy.optimize.root`` from many starts), where it
    costs about 16 µs against about 60 µs for a jitted JAX call.  (The symbolic Hessian is not
    offered this way: even with common-subexpression elimination it is slower than JAX's.)
    """
    symbols = (*model.params, *model.hyperparams)
    return lambdify_numpy(symbols, list(compile_model(model).symbolic_grad))
