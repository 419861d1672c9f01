"""The unstable forms of the stable functions (``log(1 + exp(u))``, ``exp(u)/(1 + exp(u))``, …)
rewritten into them (:func:`stabilize`), before a loss is differentiated.
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy as sp

from .functions import LogAddExp, LogSigmoid, Sigmoid, Softplus

__all__ = ["stabilize"]


def stabilize(expr: sp.Expr) -> sp.Expr:
    """Rewrite the numerically unstable forms in ``expr`` into equal, stable functions.

    Bottom-up, wherever they occur (terms and factors in any order, ``u`` any expression):

    - ``log(1 + e^u)`` → ``Softplus(u)``; ``log(e^a + e^b + …)`` → ``LogAddExp(a, b, …)`` (folded
      pairwise); positive constant factors of the terms become summands of the exponents
      (``log(2 + e^u)`` → ``LogAddExp(log 2, u)``);
    - ``e^a / (e^a + e^c)`` → ``Sigmoid(a - c)`` and ``1 / (1 + e^u)`` → ``Sigmoid(-u)`` (so
      ``e^u/(1 + e^u)``, ``e^u/(e^u + 1)`` and ``1/(1 + e^{-u})`` all become ``Sigmoid(u)``);
      with more terms in the denominator, ``e^{a - LogAddExp(a, c, …)}``;
    - ``log σ(u)`` → ``LogSigmoid(u)``, ``log(1 - σ(u))`` → ``LogSigmoid(-u)``;
    - the log of a product or power of such factors (and of ``e^u`` and of factors SymPy proves
      positive) → the sum of their logs: ``log(e^u / (1 + e^v)^2)`` → ``u - 2 Softplus(v)``.

    - a square root ``√b`` (or a power ``b^{k/2}``) of a sum that is a ratio ``N/D`` whose
      numerator factors with a square, ``√(N/D)`` → ``|s|·√(N/s²)/√D``: the cancellation in
      ``1 - (p/q)²`` near ``p/q = ±1`` is done in algebra, ``1 - x²/(x² + y²)`` →
      ``y²/(x² + y²)`` and ``√(…)`` → ``|y|/√(x² + y²)``; then ``acos(u)`` →
      ``atan2(√(1 - u²), u)`` and ``asin(u)`` → ``atan2(u, √(1 - u²))`` where that root
      simplifies so (the angle between two vectors, ``acos(a·b/(‖a‖‖b‖))``, whose derivative
      is infinite at ``u = ±1`` while a loss built from it may be smooth there).

    The parameters of a loss are real, so the rewrites are identities.  Applied to a loss before
    it is differentiated, they make the symbolic gradient stable too (``d softplus(u)/du = σ(u)``,
    ``d|y|/dy = sign(y)``, which is right at ``y = 0`` wherever the loss is differentiable
    there, the loss being even in ``y`` near it: ``sign(0) = 0``).

    Args:
        expr: a SymPy expression.

    Returns:
        An expression equal to ``expr``; unchanged where no form matches.  ``stabilize`` is
        idempotent.
    """
    return _stabilize(sp.sympify(expr), {})


def _stabilize(expr: sp.Basic, done: dict[sp.Basic, sp.Basic]) -> sp.Basic:
    """:func:`stabilize` with a memo of the subexpressions already rewritten.

    A factor ``1/(…)`` of a product is rewritten together with its numerator (with the product),
    not on its own first.
    """
    if expr.is_Atom or not expr.args:
        return expr
    if expr not in done:
        args = tuple(
            arg.func(*(_stabilize(a, done) for a in arg.args))
            if expr.is_Mul and arg.is_Pow
            else _stabilize(arg, done)
            for arg in expr.args
        )
        node = expr.func(*args) if args != expr.args else expr
        done[expr] = _rewrite(node)
    return done[expr]


def _rewrite(node: sp.Basic) -> sp.Basic:
    """One node with stable children, rewritten where it is an unstable log, ratio, root or
    inverse cosine or sine."""
    if isinstance(node, sp.log):
        stable = _stable_log(node.args[0])
        return node if stable is None else stable
    if isinstance(node, (sp.acos, sp.asin)):
        (u,) = node.args
        root = _stable_root(1 - u**2)
        if root is None:
            return node
        return sp.atan2(root, u) if isinstance(node, sp.acos) else sp.atan2(u, root)
    if node.is_Pow and node.exp.is_Rational and node.exp.q == 2:
        root = _stable_root(node.base)
        if root is not None:
            return root ** (2 * node.exp)
    if isinstance(node, (sp.Mul, sp.Pow)):
        while (ratio := _stable_ratio(node)) is not None:
            node = ratio
    return node


def _stable_root(base: sp.Expr) -> sp.Expr | None:
    """``√base`` with the cancellation in ``base`` done in algebra, or ``None``: ``base`` a sum
    that is a ratio ``N/D`` of expressions in the parameters whose factored numerator yields a
    factor out of the root (``√(y²) = |y|`` for real ``y``), ``√base = √N/√D``.  A sum that is
    no ratio, or whose numerator has no square factor, keeps its root (nothing cancels, or
    nothing would be gained)."""
    if not base.is_Add:
        return None
    numerator, denominator = sp.fraction(sp.together(base))
    if not denominator.free_symbols:
        return None
    root = sp.sqrt(sp.factor(numerator))
    pulled = [
        f
        for f in sp.Mul.make_args(root)
        if f.free_symbols and not (f.is_Pow and f.exp == sp.Rational(1, 2))
    ]
    return root / sp.sqrt(sp.factor(denominator)) if pulled else None


def _exponent(term: sp.Expr) -> sp.Expr | None:
    """``a`` with ``term = e^a`` (``c·e^b`` with ``c > 0`` gives ``b + log c``), or ``None``."""
    coeff, rest = term.as_coeff_Mul()
    if not coeff.is_positive:
        return None
    exponent = sp.log(coeff)
    for factor in sp.Mul.make_args(rest):
        if isinstance(factor, sp.exp):
            exponent += factor.args[0]
        elif factor.is_positive:
            exponent += sp.log(factor)
        else:
            return None
    return exponent


def _exponents(total: sp.Expr) -> list[sp.Expr] | None:
    """The exponents ``a_i`` with ``total = Σ e^{a_i}``, or ``None`` if ``total`` is not such a
    sum with an exponential in it."""
    if not total.has(sp.exp):
        return None
    exponents = [_exponent(term) for term in sp.Add.make_args(total)]
    return None if any(a is None for a in exponents) else exponents


def _log_sum_exp(exponents: Sequence[sp.Expr]) -> sp.Expr:
    """``log Σ e^{a_i}`` as ``Softplus`` / nested ``LogAddExp`` (a zero exponent first)."""
    first, *rest = sorted(exponents, key=lambda a: a != 0)
    for a in rest:
        first = Softplus(a) if first == 0 else LogAddExp(first, a)
    return first


def _stable_log(arg: sp.Expr) -> sp.Expr | None:
    """``log(arg)`` as the sum of the logs of its factors, or ``None`` unless every factor has a
    stable log and one of them needed rewriting (an exponential or a sigmoid)."""
    logs = [_factor_log(factor) for factor in sp.Mul.make_args(arg)]
    if any(log is None for log in logs) or all(isinstance(log, sp.log) for log in logs):
        return None
    return sp.Add(*logs)


def _factor_log(factor: sp.Expr) -> sp.Expr | None:
    """The stable log of one factor ``base**power``, or ``None`` if it has none."""
    if isinstance(factor, sp.exp):
        return factor.args[0]
    base, power = factor.as_base_exp()
    exponents = _exponents(base)
    if exponents is not None:
        return power * _log_sum_exp(exponents)
    if isinstance(base, Sigmoid):
        return power * LogSigmoid(base.args[0])
    if isinstance(1 - base, Sigmoid):
        return power * LogSigmoid(-(1 - base).args[0])
    return sp.log(factor) if factor.is_positive else None


def _stable_ratio(node: sp.Expr) -> sp.Expr | None:
    """``node`` with one factor ``1 / Σ_i e^{a_i}`` and its numerator ``e^{a_j}`` (or 1, where
    some ``a_j = 0``) replaced by ``σ(a_j - a_k)`` for two terms, ``e^{a_j - logΣ_i e^{a_i}}``
    for more; ``None`` if it has no such factor."""
    factors = sp.Mul.make_args(node)
    exps = [f for f in factors if isinstance(f, sp.exp)]
    numerators = [(sp.Add(*(f.args[0] for f in exps)), exps)] if exps else []
    for factor in factors:
        exponents = _exponents(factor.base) if factor.is_Pow and factor.exp == -1 else None
        if exponents is None:
            continue
        rest = [f for f in factors if f is not factor]
        for b, used in [*numerators, (sp.S.Zero, [])]:
            for j, a in enumerate(exponents):
                if sp.expand(b - a) != 0:
                    continue
                others = exponents[:j] + exponents[j + 1 :]
                if len(others) == 1:
                    stable = Sigmoid(a - others[0])
                else:
                    stable = sp.exp(a - _log_sum_exp(exponents))
                return sp.Mul(*(f for f in rest if f not in used)) * stable
    return None
