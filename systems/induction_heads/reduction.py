"""The reduction of the minimal induction-head model to ``(a, b, v)``, derived in SymPy.

Source: Edelman et al., "The Evolution of Statistical Induction Heads" (2024), §4 (the minimal
model and its symmetric reduction); the derivations below are this project's, written out in
``docs/systems/induction-heads.md``.

The minimal model's logits are ``f(E) = mask(E W (M E)ᵀ) E`` (:mod:`gradflow.systems.induction_heads.minimal`).
Relabelling the states by a permutation ``Π`` maps ``E → EΠ`` and leaves every prior here
invariant; the logits obey ``f(EΠ; ΠᵀWΠ) = f(E; W)Π``, so the population loss satisfies
``L(ΠᵀWΠ, v) = L(W, v)`` and its gradient at a ``W`` that commutes with every permutation again
commutes with every permutation.  Those matrices are exactly ``W = a I + b 11ᵀ``: the family is
invariant under the gradient flow, and on it

    f_t(j) = a U_t(j) + b C_t(j),
    U_t(j) = (1/t) Σ_{s≤t} (M E)_s[x_t] [x_s = j],     C_t(j) = (1/t) Σ_{s≤t} ρ_s [x_s = j],

with ``ρ_s = Σ_r M_{s,r}`` the row sums of ``M`` (``a`` multiplies the induction/bigram feature,
``b`` a unigram feature).  For softmax mixing ``ρ_s = 1`` for ``s ≥ 2``, so ``C`` does not depend
on ``v`` and ``∂f/∂v = a ∂U/∂v``: at ``a = 0`` the positional vector gets no gradient.

The flow of ``W`` restricted to the family is not the plain gradient flow of ``L(a, b)``: the
Frobenius metric pulled back by ``(a, b) ↦ aI + b11ᵀ`` is ``G = [[k, k], [k, k²]]``, so
``d(a, b)/dt = -G⁻¹ ∇_{(a,b)} L`` (:func:`frobenius_metric`).

For ``k = 2`` with Dirichlet(1) rows, ``P = [[1-p, p], [q, 1-q]]`` with ``p, q`` uniform, the
second eigenvalue is ``λ = 1 - p - q`` and ``E λ^n = (1 + (-1)^n) / ((n+1)(n+2))``
(:func:`lambda_moment`): ``2/((n+1)(n+2))`` for even ``n``, 0 for odd ``n``.  ``λ^m`` is the
lag-``m`` factor of the chain, ``P^m = 1πᵀ + λ^m (I - 1πᵀ)``: averaged over the prior, odd lags
carry no sign-definite dependence between ``x_s`` and ``x_{s+m}`` and even lags a positive one.

**The first push on** ``(a, b)`` (:func:`leading_drive`).  At ``θ = 0`` the prediction is
uniform and, for softmax mixing, ``v = 0`` averages the whole prefix: ``(M E)_s = n_{<s} /
(s - 1)``, the in-context unigram frequencies before ``s``.  So
``U_t(j) = (1/t) Σ_{s=2}^{t} [x_s = j] n_{<s}(x_t)/(s - 1)`` and
``C_t(j) = (1/t) Σ_{s=2}^{t} [x_s = j]``, and along a long sequence of the chain ``P`` (ergodic,
stationary law ``π``) ``U_t(j) → π_{x_t} π_j``, ``C_t(j) → π_j``.  With
``-∂L/∂a = E (1/T) Σ_t Σ_j (P_{x_t j} - 1/k) U_t(j)`` (and ``C`` for ``b``) the limits are

    D_a = Σ_i π_i² ((Pπ)_i - 1/k),        D_b = πᵀPπ - 1/k = ‖π‖² - 1/k.

Both vanish for every doubly-stochastic ``P`` (``π = 1/k``, ``Pπ = 1/k``): what pushes the
induction coordinate ``a`` off 0 at leading order is the unigram signal, not the bigram one;
the bigram signal enters ``U`` only through the lag-1 pair among the ``s - 1`` equally
weighted ones, a correction that vanishes as ``T`` grows.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
import sympy as sp

__all__ = [
    "a",
    "b",
    "k",
    "n",
    "lam_p",
    "lam_q",
    "family",
    "frobenius_metric",
    "metric_inverse",
    "lambda_moment",
    "lambda_moment_closed_form",
    "leading_drive",
    "symbolic_minimal_logits",
    "symbolic_reduced_logits",
    "v_symbols",
]

a, b = sp.symbols("a b", real=True)
k = sp.Symbol("k", integer=True, positive=True)
n = sp.Symbol("n", integer=True, nonnegative=True)
lam_p, lam_q = sp.symbols("p q", nonnegative=True)


def family(kk: int) -> sp.Matrix:
    """``W = a I + b 11ᵀ`` for ``kk`` states."""
    return a * sp.eye(kk) + b * sp.ones(kk, kk)


def frobenius_metric(kk: int | sp.Symbol = k) -> sp.Matrix:
    """The metric ``G_{αβ} = ⟨∂W/∂α, ∂W/∂β⟩_F`` on ``(a, b)`` for ``W = aI + b11ᵀ``.

    For a symbolic ``k`` it is built from ``tr(I) = k``, ``tr(11ᵀ) = k``, ``tr(11ᵀ11ᵀ) = k²``;
    for a concrete ``k`` from the Jacobian of ``vec(W)``.  Both give ``[[k, k], [k, k²]]``.
    """
    if isinstance(kk, sp.Symbol):
        return sp.Matrix([[kk, kk], [kk, kk**2]])
    W = family(kk).reshape(kk * kk, 1)
    J = W.jacobian([a, b])
    return J.T * J


@functools.cache
def metric_inverse(kk: int) -> np.ndarray:
    """``G⁻¹`` for ``kk`` states as a float array ``(2, 2)``:
    ``[[1/(k-1), -1/(k(k-1))], [-1/(k(k-1)), 1/(k(k-1))]]``."""
    return np.asarray(frobenius_metric(k).inv().subs(k, kk), dtype=np.float64)


def leading_drive(P: np.ndarray) -> np.ndarray:
    """``(D_a, D_b)``, the ``T → ∞`` limit of ``-∇_{(a,b)} L`` at ``θ = 0`` (softmax mixing) on
    sequences of the chain ``P`` (module docstring), nats per unit of ``a`` and ``b``.

    ``D_a = Σ_i π_i² ((Pπ)_i - 1/k)`` and ``D_b = ‖π‖² - 1/k`` with ``π`` the stationary law
    (``(Pᵀ - I)π = 0``, ``Σπ = 1``); both are 0 for a doubly-stochastic ``P``.

    Args:
        P: transition matrices, shape ``(..., k, k)``, rows summing to 1, irreducible.

    Returns:
        Shape ``(..., 2)``.
    """
    P = np.asarray(P, dtype=np.float64)
    kk = P.shape[-1]
    A = np.swapaxes(P, -1, -2) - np.eye(kk)
    A[..., -1, :] = 1.0
    rhs = np.zeros(P.shape[:-1])
    rhs[..., -1] = 1.0
    pi = np.linalg.solve(A, rhs[..., None])[..., 0]
    P_pi = np.einsum("...ij,...j->...i", P, pi)
    D_a = np.sum(pi**2 * (P_pi - 1.0 / kk), axis=-1)
    D_b = np.sum(pi**2, axis=-1) - 1.0 / kk
    return np.stack([D_a, D_b], axis=-1)


def lambda_moment_closed_form() -> sp.Expr:
    """``E λ^n`` for ``λ = 1 - p - q``, ``p, q ~ U(0, 1)``, integrated by SymPy for symbolic ``n``."""
    inner = sp.integrate((1 - lam_p - lam_q) ** n, (lam_q, 0, 1))
    return sp.simplify(sp.integrate(inner, (lam_p, 0, 1)))


def lambda_moment(m: int) -> sp.Rational:
    """``E λ^m`` for a concrete ``m``: ``2/((m+1)(m+2))`` for even ``m``, 0 for odd ``m``."""
    return sp.Rational(1 + (-1) ** m, (m + 1) * (m + 2))


def v_symbols(T: int) -> list[sp.Symbol]:
    """The lag symbols ``v_1 … v_{T-1}``."""
    return [sp.Symbol(f"v_{m}", real=True) for m in range(1, T)]


def _mixing(T: int, mixing: str) -> sp.Matrix:
    """``M`` with ``M_{s, s-m}`` from ``v_m``: ``v_m`` (linear) or a softmax over ``m < s``."""
    v = v_symbols(T)
    M = sp.zeros(T, T)
    for s in range(1, T):
        lags = range(1, s + 1)
        if mixing == "linear":
            weights = [v[m - 1] for m in lags]
        else:
            z = sum(sp.exp(v[m - 1]) for m in lags)
            weights = [sp.exp(v[m - 1]) / z for m in lags]
        for m, w in zip(lags, weights):
            M[s, s - m] = w
    return M


def _one_hot(x: list[int], kk: int) -> sp.Matrix:
    return sp.Matrix(len(x), kk, lambda t, j: int(x[t] == j))


def symbolic_minimal_logits(x: list[int], kk: int, W: sp.Matrix, mixing: str) -> sp.Matrix:
    """``f(E) = mask(E W (M E)ᵀ) E`` for the tokens ``x``, shape ``(T, kk)``.

    ``mask`` keeps ``s ≤ t`` and divides row ``t`` (1-based) by ``t``.
    """
    T = len(x)
    E = _one_hot(x, kk)
    A = E * W * (_mixing(T, mixing) * E).T
    masked = sp.Matrix(T, T, lambda t, s: A[t, s] / (t + 1) if s <= t else 0)
    return masked * E


def symbolic_reduced_logits(x: list[int], kk: int, mixing: str) -> sp.Matrix:
    """``a U_t(j) + b C_t(j)`` for the tokens ``x`` (module docstring), shape ``(T, kk)``."""
    T = len(x)
    ME = _mixing(T, mixing) * _one_hot(x, kk)
    rho = [sum(ME.row(s)) for s in range(T)]
    out = sp.zeros(T, kk)
    for t, j in itertools.product(range(T), range(kk)):
        U = sum(ME[s, x[t]] for s in range(t + 1) if x[s] == j) / (t + 1)
        C = sum(rho[s] for s in range(t + 1) if x[s] == j) / (t + 1)
        out[t, j] = a * U + b * C
    return out
