"""SymPy functions whose derivatives are known symbolically and which are printed as the
numerically stable primitives: :class:`Sigmoid`, :class:`LogSigmoid`, :class:`Softplus`,
:class:`LogAddExp`; and the binary cross-entropy written with them.

The losses of the reduced models are cross-entropies of logistic or softmax outputs.  Written
naively, ``log(1 + exp(x))`` overflows for large logits and its gradient becomes NaN; written
with these functions, they are lowered to ``expit`` and ``logaddexp`` (:mod:`.lowering`).
"""

from __future__ import annotations

import sympy as sp
from sympy.core.logic import fuzzy_and

__all__ = ["LogAddExp", "LogSigmoid", "Sigmoid", "Softplus", "binary_cross_entropy"]


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


class Softplus(sp.Function):
    """``softplus(x) = log(1 + e^x)``, derivative ``σ(x)``; printed as ``jax.nn.softplus``
    (``x + log(1 + e^{-x})`` for large ``x``: no overflow)."""

    nargs = 1

    def fdiff(self, argindex: int = 1) -> sp.Expr:
        return Sigmoid(self.args[0])

    def _eval_rewrite_as_exp(self, x: sp.Expr, **kwargs: object) -> sp.Expr:
        return sp.log(1 + sp.exp(x))

    def _eval_evalf(self, prec: int) -> sp.Expr:
        return self.rewrite(sp.exp)._eval_evalf(prec)

    def _eval_is_real(self) -> bool | None:
        return self.args[0].is_real


class LogAddExp(sp.Function):
    """``logaddexp(a, b) = log(e^a + e^b)``, ``∂/∂a = σ(a - b)``; printed as ``jnp.logaddexp``
    (``max(a, b) + log(1 + e^{-|a - b|})``: no overflow)."""

    nargs = 2

    def fdiff(self, argindex: int = 1) -> sp.Expr:
        a, b = self.args if argindex == 1 else self.args[::-1]
        return Sigmoid(a - b)

    def _eval_rewrite_as_exp(self, a: sp.Expr, b: sp.Expr, **kwargs: object) -> sp.Expr:
        return sp.log(sp.exp(a) + sp.exp(b))

    def _eval_evalf(self, prec: int) -> sp.Expr:
        return self.rewrite(sp.exp)._eval_evalf(prec)

    def _eval_is_real(self) -> bool | None:
        return fuzzy_and(arg.is_real for arg in self.args)


def binary_cross_entropy(y: sp.Expr, logit: sp.Expr) -> sp.Expr:
    """Expected cross-entropy ``ℓ_y(f) = -y ln σ(f) - (1 - y) ln σ(-f)`` in nats.

    ``y`` is the probability that the target is 1 and ``f`` the logit of the prediction.  At
    ``σ(f) = y`` the value is the binary entropy ``h(y)``.
    """
    return -y * LogSigmoid(logit) - (1 - y) * LogSigmoid(-logit)
