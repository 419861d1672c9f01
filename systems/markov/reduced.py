"""The canonical reduced models of a single-layer transformer learning a binary Markov chain.

Source: Makkuva et al., "Local to Global: Learning Dynamics and Effect of Initialization for
Transformers" (NeurIPS 2024), §3 (canonical parametrization, gradient flow, Figure 1); the
derivation is written out in ``docs/systems/markov.md``.

Rank-one ansatz ``e = eα``, ``p_n = -(e/2)α``, FFN of one sign pattern: the logit of the next
symbol is ``logit_n = e²(1 + 2w|w|)·x_n - e²/2 + b``.  With ``c = e²(1 + 2w|w|)`` and
``f0 = b - e²/2`` the population loss is

    L = π0 ℓ_p(f0) + π1 ℓ_{1-q}(f0 + c),      ℓ_y(f) = -y ln σ(f) - (1 - y) ln σ(-f).

:func:`canonical` optimizes the bias out in closed form (``L(e, w) = Φ(c)``);
:func:`canonical_bias` trains it jointly (``L(e, w, b)``).
"""

from __future__ import annotations

import functools

import sympy as sp

from gradflow import BoundModel, CriticalSetSpec, ReducedModel, binary_cross_entropy

from .chain import c_star, entropy_rate, memoryless, p, phi_prime_at_zero, pi0, pi1, q, unigram_loss
from .embedding import ReducedEmbedding

__all__ = ["canonical", "canonical_bias", "canonical_model", "canonical_bias_model", "energy"]

e, w, b = sp.symbols("e w b", real=True)
UNIT = sp.Interval.open(0, 1)
W_SADDLE = -1 / sp.sqrt(2)
"""The saddle of the canonical flow lies at ``(e, w) = (0, -1/√2)``, where ``1 + 2w|w| = 0``."""

gain = 1 + 2 * w * sp.Abs(w)
"""``1 + 2w|w|``: the FFN's gain on the token direction."""

c = e**2 * gain
"""``c = e²(1 + 2w|w|)``: the logit gap between ``x_n = 1`` and ``x_n = 0``."""

energy = e**2 - w**2 - sp.sign(w) * sp.log(sp.Abs(w))
"""``E(e, w) = e² - w² - sgn(w) ln|w|``, conserved by the flow of ``L(e, w)``."""


def optimal_logit0(gap: sp.Expr) -> sp.Expr:
    """The bias-optimal logit ``f0*(c)`` at ``x_n = 0`` for a logit gap ``c``.

    ``∂L/∂b = 0`` reads ``π0 σ(f0) + π1 σ(f0 + c) = π1``, a quadratic in ``e^{f0}``.  Its
    positive root, written so that no term cancels for any ``c``:

        f0* = ½ ln(π1/π0) - asinh((π0 - π1) e^{-c/2} / (2√(π0 π1))) - c/2.
    """
    return (
        sp.log(pi1 / pi0) / 2
        - sp.asinh((pi0 - pi1) * sp.exp(-gap / 2) / (2 * sp.sqrt(pi0 * pi1)))
        - gap / 2
    )


def _markov_loss(f0: sp.Expr, gap: sp.Expr) -> sp.Expr:
    """``π0 ℓ_p(f0) + π1 ℓ_{1-q}(f0 + c)``: the population cross-entropy, nats."""
    return pi0 * binary_cross_entropy(p, f0) + pi1 * binary_cross_entropy(1 - q, f0 + gap)


def markov_model(
    name: str, params: tuple[sp.Symbol, ...], f0: sp.Expr, gap: sp.Expr, **fields: object
) -> ReducedModel:
    """A reduced model of the Markov transformer: the loss ``π0 ℓ_p(f0) + π1 ℓ_{1-q}(f0 + c)``
    (nats) in ``params``, with what every canonical model declares alike — the switching
    probabilities ``p, q ∈ (0, 1)``, the entropy rate as its proven global minimum, its full
    model (the transformer through :class:`ReducedEmbedding` with the logit ``f0``), the
    references, notes and the plane ``(w, e)``; ``fields`` are the model's own (critical sets,
    invariants, bounds, source)."""
    return ReducedModel(
        name=name,
        params=params,
        hyperparams=(p, q),
        domains={p: UNIT, q: UNIT},
        loss=_markov_loss(f0, gap),
        full=ReducedEmbedding(params, (p, q), f0).full_model(),
        global_min_loss=entropy_rate,
        references=REFERENCES,
        notes=NOTES,
        loss_unit="nats",
        sublevel_shortcut=True,
        plane=("w", "e"),
        **fields,
    )


def memoryless_spec(b_on_it: sp.Expr | None) -> CriticalSetSpec:
    """The set ``w = -1/√2`` (``1 + 2w|w| = 0``, so ``c = 0`` whatever ``e`` and ``a``): critical,
    and globally minimal, only when p + q = 1 (``c* = 0``).  ``b_on_it``: the bias there, for
    models that train it."""
    return CriticalSetSpec(
        "w = -1/√2",
        {w: W_SADDLE, **({} if b_on_it is None else {b: b_on_it})},
        condition=memoryless,
        equation="w = -1/√2 (c = 0; critical only when p + q = 1)",
    )


def _critical_specs(
    extra: dict[sp.Symbol, sp.Expr],
    b_on_gamma: sp.Expr | None,
    b_on_saddle_line: sp.Expr | None,
) -> tuple:
    """Closed-form critical sets: Γ* (both signs of e), the line e = 0 split at the saddle, and
    for p + q = 1 (``c* = 0``) the line ``w = -1/√2``, where ``c = 0`` too."""
    e_gamma = sp.sqrt(c_star / gain)
    gamma_extra = {} if b_on_gamma is None else {b: b_on_gamma}
    specs = [
        CriticalSetSpec(
            "Γ*",
            {e: sign * e_gamma, **gamma_extra},
            condition=(1 - p - q) * gain > 0,
            equation="e²(1 + 2w|w|) = c*",
        )
        for sign in (1, -1)
    ]
    specs.append(memoryless_spec(b_on_saddle_line))
    specs += [
        CriticalSetSpec("e = 0", {e: sp.S.Zero, **extra}, condition=cond, equation="e = 0")
        for cond in (w > W_SADDLE, w < W_SADDLE)
    ]
    specs.append(
        CriticalSetSpec(
            "saddle (0, -1/√2)",
            {e: sp.S.Zero, w: W_SADDLE, **extra},
            equation="(e, w) = (0, -1/√2)",
        )
    )
    return tuple(specs)


NOTES = {
    "p + q = 1: the chain is i.i.d., c* = 0 and every critical point is a global minimum": memoryless
}
"""Remarks shown in reports where their condition on ``(p, q)`` holds."""

REFERENCES = {
    "entropy_rate": entropy_rate,
    "unigram_loss": unigram_loss,
    "c_star": c_star,
    "phi_prime_at_zero": phi_prime_at_zero,
}


@functools.cache
def canonical_model() -> ReducedModel:
    """The two-scalar canonical model ``L(e, w) = Φ(e²(1 + 2w|w|))`` with the bias optimized out.

    Conserved energy ``E = e² - w² - sgn(w) ln|w|``; critical sets Γ* (global minima,
    ``e²(1 + 2w|w|) = c*``), the line ``e = 0`` (loss ``H(π)``) and the saddle ``(0, -1/√2)``.
    """
    return markov_model(
        "canonical",
        (e, w),
        optimal_logit0(c),
        c,
        invariants={"E": energy},
        critical_sets=_critical_specs({}, None, None),
        bounds={"e": (-3.0, 3.0), "w": (-3.0, 3.0)},
        critical_sets_complete=True,
        source="Makkuva et al., Local to Global (NeurIPS 2024), §3, canonical parametrization",
    )


@functools.cache
def canonical_bias_model() -> ReducedModel:
    """The canonical model with the bias trained jointly: ``L(e, w, b)``.

    ``logit_n = e²(1 + 2w|w|)·x_n - e²/2 + b``.  Critical sets: Γ* lifted with
    ``b = e²/2 + logit(p)``, and the line ``e = 0, b = ln(p/q)`` split at the saddle.
    """
    b_unigram = sp.log(p / q)
    b_gamma = c_star / (2 * gain) + sp.log(p / (1 - p))
    return markov_model(
        "canonical-bias",
        (e, w, b),
        b - e**2 / 2,
        c,
        critical_sets=_critical_specs({b: b_unigram}, b_gamma, e**2 / 2 + sp.log(p / (1 - p))),
        bounds={"e": (-3.0, 3.0), "w": (-3.0, 3.0), "b": (-6.0, 6.0)},
        source="Makkuva et al., Local to Global (NeurIPS 2024), §3, with the bias b trained",
    )


def canonical(p: float, q: float) -> BoundModel:
    """The canonical model ``L(e, w)`` at switching probabilities ``p, q ∈ (0, 1)``.

    Raises:
        GradflowError: ``p`` or ``q`` outside ``(0, 1)``.
    """
    return canonical_model().bind(p=p, q=q)


def canonical_bias(p: float, q: float) -> BoundModel:
    """The canonical model with the bias trained, ``L(e, w, b)``, at ``p, q ∈ (0, 1)``.

    Raises:
        GradflowError: ``p`` or ``q`` outside ``(0, 1)``.
    """
    return canonical_bias_model().bind(p=p, q=q)
