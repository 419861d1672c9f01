"""Closed forms of a binary first-order Markov chain, in SymPy.

Kernel ``P = [[1 - p, p], [q, 1 - q]]`` with ``p = P(1|0)``, ``q = P(0|1)``; stationary law
``π = (q, p) / (p + q)``.  All entropies in nats.  Source: Makkuva et al., "Attention with Markov"
and "Local to Global" (NeurIPS 2024), §2.
"""

from __future__ import annotations

import sympy as sp

__all__ = [
    "p",
    "q",
    "pi0",
    "pi1",
    "binary_entropy",
    "entropy_rate",
    "unigram_loss",
    "c_star",
    "phi_prime_at_zero",
    "memoryless",
]

p, q = sp.symbols("p q", positive=True)
pi0 = q / (p + q)
pi1 = p / (p + q)


def binary_entropy(x: sp.Expr) -> sp.Expr:
    """``h(x) = -x ln x - (1 - x) ln(1 - x)`` in nats."""
    return -x * sp.log(x) - (1 - x) * sp.log(1 - x)


entropy_rate = pi0 * binary_entropy(p) + pi1 * binary_entropy(q)
"""``H(x_{n+1} | x_n) = π0 h(p) + π1 h(q)``: the loss of the bigram predictor (global minimum)."""

unigram_loss = binary_entropy(pi1)
"""``H(π) = h(p / (p + q))``: the loss of the stationary (unigram) predictor (bad local minimum)."""

c_star = sp.log((1 - p) * (1 - q) / (p * q))
"""``c* = ln((1-p)(1-q)/(pq))``: the logit gap of the bigram predictor; sign(c*) = sign(1 - p - q)."""

phi_prime_at_zero = pi0 * pi1 * (p + q - 1)
"""``Φ'(0) = π0 π1 (p + q - 1)``: slope of the bias-optimized loss at ``c = 0``."""

memoryless = sp.Eq(1 - p - q, 0)
"""``p + q = 1``: the rows of the kernel are equal, the chain is i.i.d., ``c* = 0`` and every
``c = 0`` point is a global minimum.  Written as ``1 - p - q = 0``, the same expression whose sign
is that of ``c*``, so that the two tests never disagree in floating point."""
