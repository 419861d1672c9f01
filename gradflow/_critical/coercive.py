"""A proven infimum of a coercive polynomial loss, found by its certified critical points.

A polynomial ``L`` is bounded below and attains its infimum when its growth at infinity is
carried by a positive-definite leading form.  "Leading" is taken with weights, so that
``x⁴/4 − a x²/2 + y²/2`` (whose ordinary leading form ``x⁴/4`` vanishes along the ``y`` axis)
qualifies:

1. **Weights.**  Each parameter ``θᵢ`` needs a pure power ``θᵢ^{dᵢ}`` in ``L`` (the highest
   one); a monomial ``c_α θ^α`` has the weighted degree ``δ_α = Σ αᵢ/dᵢ``.  Every ``δ_α`` must
   be at most 1; the terms with ``δ_α = 1`` form the leading form ``P``, which is
   quasi-homogeneous: ``P(t^{1/d} θ) = t P(θ)``.
2. **P ≥ m > 0 on the faces of the unit cube** (``max |θᵢ| = 1``), proven by interval
   arithmetic over pieces of each face.  With ``N(θ) = maxᵢ |θᵢ|^{dᵢ}`` (``N = 1`` exactly on
   those faces), homogeneity gives ``P(θ) ≥ m N(θ)``, and ``|θ^α| ≤ N^{δ_α}``.
3. **The radius.**  With ``S = Σ |c_α|`` over the lower terms (``0 < δ_α < 1``, the greatest
   ``δ_max``), ``L(θ) − L(0) ≥ m N − S N^{δ_max} > 0`` wherever ``N ≥ N_R = max(1,
   (2S/m)^{1/(1 − δ_max)})``: outside the box ``|θᵢ| < N_R^{1/dᵢ}`` the loss exceeds its value
   at the origin.  So ``{L ≤ L(0)}`` is a compact set inside the box, ``L`` attains its
   infimum there, at a critical point.
4. **The certificate** (:mod:`.branch_bound`) lists every zero of ``∇L`` in the box; when it
   leaves nothing unresolved, ``inf L`` is the least interval bound of ``L`` over the
   enclosures of the isolated zeros (and the boxes explained by closed-form sets).

Every number above scales with ``L`` and ignores an added constant, so ``c·L + b`` gets the
same box and ``c·inf L + b``.  Where a step fails the bound is ``None`` with the step's reason
(not a polynomial, a parameter without a pure power, a form not proven positive, a
certificate left unresolved), and minima stay ``local_min``.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import sympy as sp

from .._errors import GradflowError
from .._landscape.base import Landscape
from .._symbolic.budget import OutOfTime, within
from .._symbolic.interval import Arithmetic, arithmetic, interval_function
from .._symbolic.model import BoundModel
from .branch_bound import Search
from .interval_system import bound_system

__all__ = ["FACE_BOXES", "MAX_BOXES", "GlobalBound", "global_bound", "global_min_loss"]

FACE_BOXES = 4000
"""Pieces of the cube's faces the leading form may be evaluated on before its positivity is
given up."""
MAX_BOXES = 2000
"""Boxes the certificate of the coercive box may examine before the bound is given up."""
SETUP_SECONDS = 2.0
"""CPU seconds the polynomial's SymPy analysis and interval forms may take."""


@dataclass(frozen=True)
class GlobalBound:
    """A proven lower bound of ``L`` reached by the loss, or why there is none.

    Attributes:
        value: ``inf L`` (its proven lower end), or ``None``.
        reason: how it is proven, or why not (one line).
    """

    value: float | None
    reason: str


_BOUNDS: weakref.WeakKeyDictionary[Landscape, GlobalBound] = weakref.WeakKeyDictionary()


def global_min_loss(landscape: Landscape) -> float | None:
    """The proven lower bound the classification calls ``global_min`` against: the
    landscape's own (:attr:`Landscape.global_min_loss`), else the coercive polynomial's
    certified infimum (:func:`global_bound`), else ``None``."""
    return global_bound(landscape).value


def global_bound(landscape: Landscape) -> GlobalBound:
    """:class:`GlobalBound` of ``landscape``, worked out once per landscape (module docstring)."""
    if landscape.global_min_loss is not None:
        if not isinstance(landscape, BoundModel):
            return GlobalBound(landscape.global_min_loss, "a lower bound the landscape proves")
        if landscape.model.global_min_loss is not None:
            return GlobalBound(landscape.global_min_loss, "the model's declared inf L")
        return GlobalBound(landscape.global_min_loss, "SymPy proves it of the loss's terms")
    if landscape not in _BOUNDS:
        _BOUNDS[landscape] = _coercive_bound(landscape)
    return _BOUNDS[landscape]


def _coercive_bound(landscape: Landscape) -> GlobalBound:
    if not isinstance(landscape, BoundModel):
        return GlobalBound(None, "the loss is not known in SymPy")
    arith = arithmetic("arb")
    params = list(landscape.model.params)
    values = {s: sp.Float(landscape.values[s.name]) for s in landscape.model.hyperparams}
    try:
        box, why = within(
            "the coercivity of L",
            _coercive_box,
            landscape.model.loss.subs(values),
            params,
            arith,
            seconds=SETUP_SECONDS,
        )
    except (OutOfTime, GradflowError) as out:
        return GlobalBound(None, f"no coercivity proof: {out}")
    if box is None:
        return GlobalBound(None, why)
    try:
        system, hyper = bound_system(landscape, seconds=SETUP_SECONDS)
    except (OutOfTime, GradflowError) as out:
        return GlobalBound(None, f"{why}, but {out}")
    search = Search(system, hyper, box, MAX_BOXES, 1e-7)
    search.run()
    shown = " × ".join(f"[-{hi:.3g}, {hi:.3g}]" for hi in box[:, 1])
    if search.unresolved:
        return GlobalBound(
            None,
            f"{why} outside {shown}, but the certificate of that box leaves "
            f"{len(search.unresolved)} boxes unresolved",
        )
    loss = interval_function(
        [landscape.model.loss], [*params, *landscape.model.hyperparams], arith, params
    )
    hyper_iv = [arith.number(float(h)) for h in hyper]
    holders = [c.enclosure for c in search.isolated]
    holders += [b for boxes in search.explained.values() for b in boxes]
    if not holders:
        return GlobalBound(None, f"{why} outside {shown}, but no critical point was certified")
    lows = [
        arith.bounds(loss(*[arith.interval(lo, hi) for lo, hi in b], *hyper_iv)[0])[0]
        for b in holders
    ]
    return GlobalBound(
        float(min(lows)),
        f"{why} outside {shown}, where the certificate lists every critical point: "
        "inf L is the least of their values",
    )


def _coercive_box(
    loss: sp.Expr, params: list[sp.Symbol], arith: Arithmetic
) -> tuple[np.ndarray | None, str]:
    """The box ``(dim, 2)`` outside which ``L > L(0)`` (steps 1–3), or ``None``, with the
    argument or the reason it fails."""
    try:
        poly = sp.Poly(sp.expand(loss), *params)
    except sp.PolynomialError:
        return None, "L is not a polynomial in its parameters"
    if any(not (c.is_Rational or c.is_Float) for c in poly.coeffs()):
        return None, "L is not a polynomial with numeric coefficients in its parameters"
    terms = [(tuple(a), _exact(c)) for a, c in poly.terms()]
    degrees = []
    for i, s in enumerate(params):
        pure = [a[i] for a, c in terms if c > 0 and sum(a) == a[i] and a[i] > 0]
        if not pure or max(pure) % 2:
            return None, (
                f"L has no even pure power of {s} with a positive coefficient, so its growth "
                "at infinity is not shown"
            )
        degrees.append(max(pure))
    weighted = [(sum(Fraction(k, d) for k, d in zip(a, degrees)), a, c) for a, c in terms]
    over = [a for w, a, _ in weighted if w > 1]
    if over:
        monomial = sp.Mul(*(s**k for s, k in zip(params, over[0])))
        return None, f"the term {monomial} outgrows the pure powers of the parameters"
    form = sum(
        (sp.Rational(c.numerator, c.denominator) * sp.Mul(*(s**k for s, k in zip(params, a))))
        for w, a, c in weighted
        if w == 1
    )
    m = _least_on_faces(form, params, arith)
    if isinstance(m, str):
        return None, m
    lower = [(w, c) for w, a, c in weighted if 0 < w < 1]
    total = sum((abs(c) for _, c in lower), Fraction(0))
    n_r = 1.0
    if total:
        top = max(w for w, _ in lower)
        n_r = max(n_r, _root_above(2 * total / m, 1 - top))
    half = [math.nextafter(_root_above(Fraction(n_r), Fraction(d)), math.inf) for d in degrees]
    box = np.array([[-h, h] for h in half], dtype=float)
    leading = _shown(form)
    return box, (
        f"the leading form {leading} is at least {float(m):.3g} on the faces of the unit cube, "
        f"so L > L(0)"
    )


def _shown(form: sp.Expr) -> str:
    """``form`` with its coefficients to 4 digits, for a reason."""
    return sp.sstr(sp.N(form, 4))


def _exact(c: sp.Expr) -> Fraction:
    """The exact rational value of a SymPy rational or float coefficient."""
    if c.is_Rational:
        return Fraction(int(c.p), int(c.q))
    return Fraction(float(c))


def _root_above(value: Fraction, power: Fraction) -> float:
    """A float ``r ≈ value^{1/power}`` with ``r^power ≥ value`` exactly (``power = p/q > 0``;
    checked in rationals as ``r^p ≥ value^q``)."""
    r = float(value) ** (1 / float(power))
    while Fraction(r) ** power.numerator < value**power.denominator:
        r = math.nextafter(r * (1 + 1e-9), math.inf)
    return r


def _least_on_faces(form: sp.Expr, params: list[sp.Symbol], arith: Arithmetic) -> Fraction | str:
    """A proven ``m > 0`` with ``form ≥ m`` on the faces of ``[-1, 1]^dim``, or why not.

    Each face is cut in halves (its widest free side first) until a piece's interval lower
    bound is positive and at least half the least value seen at a piece's centre (so ``m`` is
    within a factor two of the minimum); a centre where ``form ≤ 0`` disproves it."""
    enclose = interval_function([form], params, arith)
    at = sp.lambdify(params, form, "math")
    dim = len(params)
    queue: list[np.ndarray] = []
    for i in range(dim):
        for side in (-1.0, 1.0):
            face = np.tile([-1.0, 1.0], (dim, 1))
            face[i] = side
            queue.append(face)
    seen, accepted, spent = math.inf, math.inf, 0
    while queue:
        if spent >= FACE_BOXES:
            return (
                f"the leading form {_shown(form)} was not proven positive on the faces of the "
                f"unit cube within {FACE_BOXES} pieces"
            )
        spent += 1
        piece = queue.pop()
        centre = piece.mean(axis=1)
        value = float(at(*centre))
        if value <= 0:
            where = ", ".join(f"{s} = {v:.3g}" for s, v in zip(params, centre))
            return (
                f"the leading form {_shown(form)} is {value:.3g} ≤ 0 at {where}, so L is not "
                "shown to grow in every direction"
            )
        seen = min(seen, value)
        lo = arith.bounds(enclose(*[arith.interval(a, b) for a, b in piece])[0])[0]
        if lo > 0 and lo >= seen / 2:
            accepted = min(accepted, lo)
            continue
        widths = piece[:, 1] - piece[:, 0]
        k = int(np.argmax(widths))
        middle = piece[k].mean()
        for part in ((piece[k, 0], middle), (middle, piece[k, 1])):
            cut = piece.copy()
            cut[k] = part
            queue.append(cut)
    return Fraction(accepted)
