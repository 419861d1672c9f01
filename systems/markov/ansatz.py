"""The rank-one ansatz of the single-layer Markov transformer, evaluated symbolically.

The full model (``systems/markov/transformer.py``; the ansatz is written out in ``docs/systems/markov.md``) with every vector a multiple of one
unit direction ``α`` and every matrix a multiple of ``ααᵀ`` (the FFN's ``W_1 = |w|κ 1 αᵀ``,
``W_2 = wκ α 1ᵀ``) acts on scalars: a vector ``v = v̂ α`` is its coefficient ``v̂``, a matrix
``M = M̂ ααᵀ`` multiplies by ``M̂``, and ``⟨u, v⟩ = û v̂``.  This module runs the forward pass of
the full model on those coefficients in SymPy and returns the logit of the next symbol as a
function of the current symbol ``x_n ∈ {0, 1}``:

- token vector ``t(x) = x·e + p`` with the ansatz ``p_n = -e/2`` for every position, so
  ``t(x) = e (x - ½)``;
- linear causal attention with the mean over the ``n`` visible positions,
  ``att(n) = (1/n) Σ_{i≤n} (κ_Q κ_K t(x_n) t(x_i) / √d) · κ_O κ_V t(x_i)``.  Because
  ``t(0)² = t(1)² = e²/4`` (checked here, not assumed), the mean over ``i`` is the same for every
  history: the attention output depends on ``x_n`` alone and not on the position ``n``;
- residual ReLU FFN with ``r`` identical hidden units, ``ReLU(y) = (y + |y|)/2``;
- weight-tied logit ``⟨e, z⟩ + b``.

The attention scalar is ``a = κ_Q κ_K κ_V κ_O / √d`` (query, key, value and output scales
together); the FFN scale satisfies ``r κ² = 4``.  Source of the ansatz: Makkuva et al., "Local to
Global" (NeurIPS 2024), §3; the attention part is derived here (the published formula is not
public), see ``docs/systems/markov.md``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import sympy as sp

__all__ = ["AnsatzLogit", "ansatz_logit", "e", "w", "a", "b"]

e, w, a, b = sp.symbols("e w a b", real=True)
x = sp.Symbol("x", real=True)
"""The current symbol ``x_n ∈ {0, 1}``."""


@dataclass(frozen=True)
class AnsatzLogit:
    """The logit of the next symbol under the rank-one ansatz, derived symbolically.

    Attributes:
        logit: ``logit(x)`` as a SymPy expression of ``x, e, w, a, b`` (valid at ``x ∈ {0, 1}``).
        gap: ``c = logit(1) - logit(0)``, the logit gap (nats per unit of log-odds).
        logit0: ``logit(0)``, the logit after a ``0``.
        scale: ``s``, the coefficient of the residual stream before the FFN, ``y = s (x - ½)``.
    """

    logit: sp.Expr
    gap: sp.Expr
    logit0: sp.Expr
    scale: sp.Expr


def _relu(y: sp.Expr) -> sp.Expr:
    """``ReLU(y) = (y + |y|)/2``, exact for real ``y``."""
    return (y + sp.Abs(y)) / 2


@functools.cache
def ansatz_logit() -> AnsatzLogit:
    """Run the full model's forward pass on the ansatz coefficients (see the module docstring).

    Raises:
        AssertionError: the attention mean depends on the history (``t(0)² ≠ t(1)²``); this
            cannot happen for ``p_n = -e/2`` and guards the derivation.
    """
    d, r = sp.symbols("d r", positive=True)
    k_q, k_k, k_v, k_o = sp.symbols("kappa_Q kappa_K kappa_V kappa_O", real=True)
    kappa = sp.Symbol("kappa", positive=True)
    p_n = -e / 2
    token = x * e + p_n

    def t(value: int) -> sp.Expr:
        return token.subs(x, value)

    if sp.simplify(t(0) ** 2 - t(1) ** 2) != 0:
        raise AssertionError("t(0)² ≠ t(1)²: the attention mean would depend on the history")
    mean_square = t(0) ** 2
    attention = (k_q * k_k * token / sp.sqrt(d)) * (k_o * k_v) * mean_square
    y = sp.expand(token + attention)
    ffn = (w * kappa) * r * (sp.Abs(w) * kappa) * _relu(y)
    z = y + ffn
    logit = e * z + b
    embedding = {
        k_q: d ** sp.Rational(1, 4),
        k_k: d ** sp.Rational(1, 4),
        k_v: 1,
        k_o: a,
        r: 4 / kappa**2,
    }
    logit = logit.subs(embedding)
    y = y.subs(embedding)
    scale = sp.factor(sp.simplify(y.subs(x, 1) - y.subs(x, 0)))
    gap = sp.factor(sp.simplify(logit.subs(x, 1) - logit.subs(x, 0)))
    return AnsatzLogit(
        logit=logit,
        gap=gap,
        logit0=sp.simplify(logit.subs(x, 0)),
        scale=scale,
    )
