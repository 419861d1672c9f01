"""SymPy → JAX: the compiled loss, gradient, Hessian and invariants of a symbolic loss.

Compiled once per loss (cached) and shared by every hyperparameter value: hyperparameters are
array arguments, so a sweep over ``(p, q)`` does not recompile.  The loss, gradient, Hessian and
invariants keep their compiled executables between processes, keyed by the loss's SymPy
expression (:func:`gradflow._compiled.store.stored`), and the field is labelled with the same
key, so the integrators' programs built on it are kept too.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import sympy as sp

from .._compiled.store import Key, label, stored
from .._landscape.base import GradientField
from .kept import written
from .lowering import check_lowering, lambdify_jax
from .stabilize import stabilize

__all__ = ["CompiledLoss", "compile_loss"]

Fn = Callable[[jax.Array, jax.Array], jax.Array]


@dataclass(frozen=True, eq=False)
class CompiledLoss:
    """Jitted JAX callables of a symbolic loss; every one takes ``(θ, h)``.

    ``θ`` has shape ``(..., dim)`` (any leading batch axes), ``h`` shape ``(n_hyper,)``.

    Attributes:
        loss: ``L(θ; h)``, shape ``(...)``.
        grad: ``∇L``, shape ``(..., dim)``; differentiated symbolically, then lambdified.
        hessian: ``∇²L``, shape ``(..., dim, dim)``; forward-mode derivative of ``grad``, NaN
            where an absolute value that :func:`stabilize` brought in vanishes (a removable
            singularity of the written loss: see :func:`compile_loss`).
        invariants: conserved quantities by name, each shape ``(...)``.
        field: ``loss`` and ``grad`` as a :class:`GradientField` (one object, so integrators
            compile once per loss).
        symbols: the arguments of the lambdified functions, ``(θ_1, …, θ_dim, h_1, …)``.
        symbolic_grad: the SymPy gradient, one expression per parameter.
    """

    loss: Fn
    grad: Fn
    hessian: Fn
    invariants: dict[str, Fn]
    field: GradientField
    symbols: tuple[sp.Symbol, ...]
    lowered: _Lowered

    @property
    def symbolic_grad(self) -> tuple[sp.Expr, ...]:
        return self.lowered.symbolic_grad


class _Lowered:
    """A loss's stable form (:func:`stabilize`), its symbolic gradient and their JAX lowerings.

    The stable form is made and checked at once; the gradient and the lowerings on first use:
    the jitted functions of :func:`compile_loss` call them only while JAX traces, so a run whose
    programs all come from the store (:mod:`gradflow._compiled.store`) never differentiates or
    lambdifies (a fifth of a warm portrait's time above its imports).

    Raises:
        GradflowError: the loss uses a function that has no JAX lowering.
    """

    def __init__(
        self, params: tuple[sp.Symbol, ...], symbols: tuple[sp.Symbol, ...], loss: sp.Expr
    ) -> None:
        self.params, self.symbols, self.loss = params, symbols, loss
        self.stable = stabilize(loss)
        check_lowering([self.stable], "JAX")

    @functools.cached_property
    def symbolic_grad(self) -> tuple[sp.Expr, ...]:
        return tuple(sp.diff(self.stable, s) for s in self.params)

    @functools.cached_property
    def loss_fn(self) -> Fn:
        return _unpack(lambdify_jax(self.symbols, self.stable), len(self.params), vector=False)

    @functools.cached_property
    def grad_fn(self) -> Fn:
        grad = lambdify_jax(self.symbols, list(self.symbolic_grad))
        return _unpack(grad, len(self.params), vector=True)

    @functools.cached_property
    def kinks(self) -> Callable[..., Any] | None:
        """The removable singularities' arguments ``s`` (of each ``|s|`` the rewrite brought
        in), as one function of the symbols, or ``None``."""
        removable = self.stable.atoms(sp.Abs) - self.loss.atoms(sp.Abs)
        ordered = sorted((a.args[0] for a in removable), key=str)
        return lambdify_jax(self.symbols, ordered) if ordered else None


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


def _jitted(lowered: _Lowered) -> Fn:
    """The jitted scalar function of ``lowered``'s expression (a loss or an invariant)."""
    return jax.jit(lambda theta, h: lowered.loss_fn(theta, h))


@functools.cache
def compile_loss(
    params: tuple[sp.Symbol, ...],
    hyperparams: tuple[sp.Symbol, ...],
    loss: sp.Expr,
    invariants: tuple[tuple[str, sp.Expr], ...] = (),
) -> CompiledLoss:
    """Lambdify ``loss``, its symbolic gradient and the invariants to jitted JAX functions.

    ``loss`` and the invariants are first rewritten by :func:`stabilize` (``log(1 + e^u)`` →
    ``Softplus(u)``, ``acos(x/√(x² + y²))`` → ``atan2(|y|/√(x² + y²), x/√(x² + y²))``, …),
    so the gradient is differentiated from the stable form.  Where an absolute value ``|s|``
    that the rewrite brought in has ``s = 0`` (the written loss's removable singularity, as
    ``acos`` at 1), ``jacfwd`` of the gradient drops the second derivative that ``|s|`` carries
    there (its ``sign(s)`` has derivative 0 in JAX, ``2δ(s)`` in fact): the Hessian is NaN
    there, and the classifier takes it by finite differences of ``∇L`` instead and says so
    (:func:`gradflow.classify_points`).

    Nothing is differentiated or lambdified here: each function does it when it is first traced
    (:class:`_Lowered`), so programs loaded from the store need none of it.

    Raises:
        GradflowError: the loss or an invariant uses a function that has no JAX lowering.
    """
    symbols = (*params, *hyperparams)
    dim = len(params)
    lowered = _Lowered(params, symbols, loss)
    loss_fn = _jitted(lowered)
    grad_fn = jax.jit(lambda theta, h: lowered.grad_fn(theta, h))

    def hessian(theta: jax.Array, h: jax.Array) -> jax.Array:
        point_hessian = jax.jacfwd(lambda t: grad_fn(t, h))
        flat = theta.reshape(-1, dim)
        out = jax.vmap(point_hessian)(flat)
        kinks = lowered.kinks
        if kinks is not None:
            at = kinks(*(flat[:, i] for i in range(dim)), *(h[j] for j in range(h.shape[0])))
            out = jnp.where(jnp.any(at == 0, axis=-1)[:, None, None], jnp.nan, out)
        return out.reshape(theta.shape + (dim,))

    def key(part: str, expr: Any = loss) -> Key:
        """The key of a program of this loss: the symbols and the written ``expr`` (the
        stable form, the gradient and the removable singularities follow from it)."""
        return lambda: f"compile_loss {part}\n{sp.srepr(symbols)}\n{written(expr)}"

    field = label(GradientField(loss=loss_fn, grad=grad_fn), key("field"))
    return CompiledLoss(
        loss=stored(loss_fn, key("loss")),
        grad=stored(grad_fn, key("grad")),
        hessian=stored(jax.jit(hessian), key("hessian")),
        invariants={
            name: stored(_jitted(_Lowered(params, symbols, expr)), key(f"invariant {name}", expr))
            for name, expr in invariants
        },
        field=field,
        symbols=symbols,
        lowered=lowered,
    )
