"""SymPy building blocks for reduced losses and their translation to JAX.

The losses of the reduced models are cross-entropies of logistic or softmax outputs.  Written
naively, ``log(1 + exp(x))`` overflows for large logits and its gradient becomes NaN.  This module
provides SymPy functions whose derivatives are known symbolically and which are printed as the
numerically stable JAX primitives (``jax.nn.log_sigmoid``, ``jax.nn.sigmoid``), and
:func:`lambdify_jax`, which turns SymPy expressions into JAX callables with common-subexpression
elimination.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import sympy as sp
from scipy.special import expit

__all__ = ["LogSigmoid", "Sigmoid", "binary_cross_entropy", "lambdify_jax", "lambdify_numpy"]


class Sigmoid(sp.Function):
    """The logistic function ``σ(x) = 1 / (1 + e^{-x})``; printed as ``jax.nn.sigmoid``."""

    nargs = 1

    def fdiff(self, argindex: int = 1) -> sp.Expr:
        x = self.args[0]
        return Sigmoid(x) * Sigmoid(-x)

    def _eval_rewrite_as_exp(self, x: sp.Expr, **kwargs: object) -> sp.Expr:
        return 1 / (1 + sp.exp(-x))

    def _eval_evalf(self, prec: int) -> sp.Expr:
        return self.rewrite(sp.exp)._eval_evalf(prec)

    def _eval_is_real(self) -> bool | None:
        return self.args[0].is_real


class LogSigmoid(sp.Function):
    """``log σ(x) = -softplus(-x)``; printed as ``jax.nn.log_sigmoid`` (stable for any ``x``)."""

    nargs = 1

    def fdiff(self, argindex: int = 1) -> sp.Expr:
        return Sigmoid(-self.args[0])

    def _eval_rewrite_as_exp(self, x: sp.Expr, **kwargs: object) -> sp.Expr:
        return -sp.log(1 + sp.exp(-x))

    def _eval_evalf(self, prec: int) -> sp.Expr:
        return self.rewrite(sp.exp)._eval_evalf(prec)

    def _eval_is_real(self) -> bool | None:
        return self.args[0].is_real


def binary_cross_entropy(y: sp.Expr, logit: sp.Expr) -> sp.Expr:
    """Expected cross-entropy ``ℓ_y(f) = -y ln σ(f) - (1 - y) ln σ(-f)`` in nats.

    ``y`` is the probability that the target is 1 and ``f`` the logit of the prediction.  At
    ``σ(f) = y`` the value is the binary entropy ``h(y)``.
    """
    return -y * LogSigmoid(logit) - (1 - y) * LogSigmoid(-logit)


_JAX_FUNCTIONS = {"LogSigmoid": jax.nn.log_sigmoid, "Sigmoid": jax.nn.sigmoid}
_NUMPY_FUNCTIONS = {
    "LogSigmoid": lambda x: -np.logaddexp(0.0, -x),
    "Sigmoid": expit,
    "DiracDelta": np.zeros_like,
}


def lambdify_jax(
    args: Sequence[sp.Symbol | Sequence[sp.Symbol]], expr: sp.Expr | Sequence[sp.Expr]
) -> Callable[..., jax.Array]:
    """Translate SymPy expression(s) into a JAX function of ``args``.

    Uses SymPy's JAX printer with ``cse=True``; :class:`LogSigmoid` and :class:`Sigmoid` become the
    stable ``jax.nn`` primitives.  A sequence of expressions returns a stacked array along the
    last axis, so the function broadcasts over leading axes of its arguments.
    """
    if isinstance(expr, sp.Expr):
        return sp.lambdify(args, expr, modules=[_JAX_FUNCTIONS, "jax"], cse=True)
    components = sp.lambdify(args, list(expr), modules=[_JAX_FUNCTIONS, "jax"], cse=True)

    def stacked(*values: jax.Array) -> jax.Array:
        parts = components(*values)
        shape = jnp.broadcast_shapes(*(jnp.shape(v) for v in parts))
        return jnp.stack([jnp.broadcast_to(v, shape) for v in parts], axis=-1)

    return stacked


def lambdify_numpy(
    args: Sequence[sp.Symbol], expr: sp.Expr | Sequence[sp.Expr] | Sequence[Sequence[sp.Expr]]
) -> Callable[..., np.ndarray]:
    """Translate SymPy expression(s) into a NumPy function of scalar ``args`` (``cse=True``).

    For per-point calls from Python (scipy root finding and ODE baselines), where a NumPy call
    costs microseconds and a JAX dispatch tens of them.  ``DiracDelta`` (from differentiating
    ``sign``) evaluates to 0, its value away from the origin.
    """
    return sp.lambdify(args, expr, modules=[_NUMPY_FUNCTIONS, "numpy"], cse=True)
