"""The three-scalar canonical model ``L(e, w, a)``: the canonical model with linear attention.

Derived in SymPy (:func:`gradflow.systems.markov.ansatz.ansatz_logit`) from the rank-one ansatz
applied to the linear-attention full model, whose attention is the mean over the ``n`` visible
positions.  The residual stream before the FFN is ``y_n = s (x_n - ½) α`` with
``s = e(1 + a e²/4)`` (the ``¼`` is ``(x_i - ½)²``, the same for both symbols, so the attention
output depends on ``x_n`` alone), and the logit gap is

    c = e²(1 + a e²/4)(1 + 2w|w|).

Every position has the same ``(x_n, x_{n+1})`` law ``π(x_n)P(x_{n+1}|x_n)`` and the same logits, so
the population loss is the same closed form as the canonical model's,
``L = π0 ℓ_p(f0) + π1 ℓ_{1-q}(f0 + c)``:

- :func:`canonical_attention_model`: ``L(e, w, a) = Φ(c)``, the bias optimized out;
- :func:`canonical_attention_bias_model`: ``L(e, w, a, b)`` with ``f0 = b - e s/2``, the
  convention of the canonical model (the embedding moves the full bias onto the other FFN branch
  where ``s < 0``).

At ``a = 0`` both reduce to the canonical models of :mod:`gradflow.systems.markov.reduced`.  The flow of
``L(e, w, a)`` conserves ``E = e² - 2a² - w² - sgn(w) ln|w|``.  Source: Makkuva et al., "Local to
Global" (NeurIPS 2024), §3 (ansatz and canonical model); the attention part is derived here, see
``docs/systems/markov.md``.
"""

from __future__ import annotations

import functools

import sympy as sp

from gradflow import BoundModel, CriticalSetSpec, ReducedModel

from .ansatz import a, ansatz_logit, b, e, w
from .chain import c_star, p, q
from .reduced import W_SADDLE, gain, markov_model, memoryless_spec, optimal_logit0

__all__ = [
    "attention_energy",
    "canonical_attention",
    "canonical_attention_bias",
    "canonical_attention_bias_model",
    "canonical_attention_model",
]

attention_energy = e**2 - 2 * a**2 - w**2 - sp.sign(w) * sp.log(sp.Abs(w))
"""``E(e, w, a) = e² - 2a² - w² - sgn(w) ln|w|``, conserved by the flow of ``L(e, w, a)``."""

BOUNDS = {"e": (-3.0, 3.0), "w": (-3.0, 3.0), "a": (-3.0, 3.0), "b": (-6.0, 6.0)}
SOURCE = "Makkuva et al., Local to Global (NeurIPS 2024), §3 ansatz; linear attention (1/n mean) derived here"


def _gap() -> sp.Expr:
    return ansatz_logit().gap


def _critical_specs(
    extra: dict[sp.Symbol, sp.Expr],
    b_on_gamma: sp.Expr | None,
    b_on_saddle_plane: sp.Expr | None,
) -> tuple[CriticalSetSpec, ...]:
    """Closed-form critical sets of ``Φ(c(e, w, a))``: ``Φ'(c) = 0`` or ``∇c = 0``.

    ``∇c = 0`` on the plane ``e = 0`` (split at the saddle line ``w = -1/√2``) and on the curve
    ``w = -1/√2, a e² = -4`` (where ``c = 0`` with ``e ≠ 0``); ``Φ'(c) = 0`` on the surface
    ``c = c*``, written as a graph ``a(e, w)``.  For p + q = 1, ``c* = 0`` and the whole plane
    ``w = -1/√2`` (where ``c = 0``) is critical as well.
    """
    a_gamma = 4 * c_star / (e**4 * gain) - 4 / e**2
    gamma_extra = {} if b_on_gamma is None else {b: b_on_gamma}
    return (
        memoryless_spec(b_on_saddle_plane),
        CriticalSetSpec(
            "Γ*",
            {a: a_gamma, **gamma_extra},
            condition=sp.And(sp.Ne(e, 0), sp.Ne(gain, 0)),
            equation="e²(1 + a e²/4)(1 + 2w|w|) = c*",
        ),
        CriticalSetSpec(
            "e = 0", {e: sp.S.Zero, **extra}, condition=w > W_SADDLE, equation="e = 0, w > -1/√2"
        ),
        CriticalSetSpec(
            "e = 0", {e: sp.S.Zero, **extra}, condition=w < W_SADDLE, equation="e = 0, w < -1/√2"
        ),
        CriticalSetSpec(
            "w = -1/√2, a e² = -4",
            {w: W_SADDLE, a: -4 / e**2, **extra},
            condition=sp.Ne(e, 0),
            equation="w = -1/√2, a e² = -4",
        ),
        CriticalSetSpec(
            "e = 0, w = -1/√2", {e: sp.S.Zero, w: W_SADDLE, **extra}, equation="e = 0, w = -1/√2"
        ),
    )


@functools.cache
def canonical_attention_model() -> ReducedModel:
    """``L(e, w, a) = Φ(e²(1 + a e²/4)(1 + 2w|w|))``, the bias optimized out.

    Conserved ``E = e² - 2a² - w² - sgn(w) ln|w|``.  Critical sets: the surface ``c = c*`` (global
    minima), the plane ``e = 0`` and the curve ``w = -1/√2, a e² = -4`` (loss ``H(π)``).
    """
    c = _gap()
    return markov_model(
        "canonical-attention",
        (e, w, a),
        optimal_logit0(c),
        c,
        invariants={"E": attention_energy},
        critical_sets=_critical_specs({}, None, None),
        bounds={k: BOUNDS[k] for k in ("e", "w", "a")},
        source=SOURCE,
    )


@functools.cache
def canonical_attention_bias_model() -> ReducedModel:
    """``L(e, w, a, b)`` with ``f0 = b - e s/2``, ``s = e(1 + a e²/4)``: the bias trained.

    Critical sets: those of :func:`canonical_attention_model` lifted with ``b = ln(p/q)`` where
    ``c = 0`` (the unigram bias), and ``b = e s/2 + logit(p)`` on ``c = c*``.
    """
    c = _gap()
    s = ansatz_logit().scale
    f0 = b - e * s / 2
    b_gamma = (e * s / 2).subs(a, 4 * c_star / (e**4 * gain) - 4 / e**2) + sp.log(p / (1 - p))
    return markov_model(
        "canonical-attention-bias",
        (e, w, a, b),
        f0,
        c,
        critical_sets=_critical_specs(
            {b: sp.log(p / q)}, sp.simplify(b_gamma), e * s / 2 + sp.log(p / (1 - p))
        ),
        bounds=dict(BOUNDS),
        source=SOURCE + ", bias trained",
    )


def canonical_attention(p: float, q: float) -> BoundModel:
    """``L(e, w, a)`` at switching probabilities ``p, q ∈ (0, 1)``.

    Raises:
        GradflowError: ``p`` or ``q`` outside ``(0, 1)``.
    """
    return canonical_attention_model().bind(p=p, q=q)


def canonical_attention_bias(p: float, q: float) -> BoundModel:
    """``L(e, w, a, b)`` at switching probabilities ``p, q ∈ (0, 1)``.

    Raises:
        GradflowError: ``p`` or ``q`` outside ``(0, 1)``.
    """
    return canonical_attention_bias_model().bind(p=p, q=q)
