"""Facts about a loss that SymPy can establish: closed-form critical points, a lower bound, kinks.

- :func:`solve_gradient`: ``sympy.solve(∇L = 0)`` where the gradient is rational in ``θ``.
- :func:`real_point`: the exact real value of a closed-form critical point that ``sympy.solve``
  writes with ``I`` (the three real roots of a cubic), as an isolating interval of a polynomial.
- :func:`nonnegative`: whether SymPy's assumptions prove ``L ≥ 0`` (a sum of squares of
  real expressions, say), which makes ``0`` a proven lower bound; :func:`lower_bound`, the
  loss's constant term where the rest is proven ``≥ 0`` (so the bound follows an added
  constant and a scale).
- :func:`gradient_jumps` (:func:`jumps`): the non-smooth terms of ``L`` across whose kink ``∇L`` is
  discontinuous (``|x|`` at ``x = 0``), as opposed to terms where only the Hessian jumps
  (``w|w|``, ``max(0, x)²``), whose gradient flow is well defined.
- :func:`singular_critical_points`: ``sympy.solve(∇L = 0, det H = 0)`` for the parameters and
  one hyperparameter: where a bifurcation of isolated critical points can happen.
- :func:`degenerate_set_values`: where a closed-form critical set turns degenerate as a whole
  (its kind changes), solved for one hyperparameter as a curve in the others.
- :func:`kink_form`: the loss written with a slope symbol per kink (``|u| → s·u``), and the
  surfaces the kinks lie on, for the flow that slides along them.
- :func:`readable`: an expression printed as a number where it is one.

SymPy cannot be interrupted and some of these steps run for many minutes on a rational loss
(``sympy.solve`` on three Lennard-Jones atoms), so each runs within a time budget
(:func:`gradflow._symbolic.budget.within`); one that runs out gives the answer that claims nothing (no
closed-form solutions, no proven bound, every kink a jump) and says why.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import sympy as sp

from .budget import OutOfTime, budgeted_cache, within
from .functions import LogAddExp, LogSigmoid, Sigmoid, Softplus
from .interval import complex_enclosure
from .kept import kept_value, written

__all__ = [
    "NONSMOOTH_FUNCTIONS",
    "degenerate_set_values",
    "gradient_jumps",
    "KinkForm",
    "kink_form",
    "jumps",
    "kink_function",
    "nonsmooth_atoms",
    "lower_bound",
    "nonnegative",
    "readable",
    "real_point",
    "singular_critical_points",
    "solve_gradient",
    "Solved",
]

NONSMOOTH_FUNCTIONS = (sp.Abs, sp.Max, sp.Min, sp.sign, sp.Heaviside, sp.Piecewise)
"""SymPy functions that make a loss non-smooth where their argument crosses a kink."""
READABLE_OPS = 12
"""An exact expression with at most this many operations is printed as it is, else as a number."""


@dataclass(frozen=True)
class Solved:
    """What :func:`solve_gradient` found.

    Attributes:
        solutions: one dict per solution (parameters not in it are free).
        caveat: why the list may be incomplete, ``None`` if ``sympy.solve`` ran to the end.
    """

    solutions: tuple[dict[sp.Symbol, sp.Expr], ...]
    caveat: str | None = None


def solve_gradient(
    params: Sequence[sp.Symbol], loss: sp.Expr, declared: Sequence[Mapping[sp.Symbol, sp.Expr]]
) -> Solved:
    """Solutions of ``∇L = 0`` by ``sympy.solve`` when the gradient is rational in ``θ``, within
    the symbolic time budget.

    Args:
        params: the parameters ``θ``.
        loss: ``L``.
        declared: solutions already known (declared closed-form sets); repeats are left out.

    Returns:
        The solutions (none if the gradient is not rational in ``θ``); where the budget ran
        out, none and the reason.
    """
    grad = [sp.diff(loss, s) for s in params]
    if not all(g.is_rational_function(*params) for g in grad):
        return Solved(())

    def solve() -> list[dict[sp.Symbol, sp.Expr]]:
        return [
            solution
            for solution in sp.solve([sp.factor(g) for g in grad], list(params), dict=True)
            if not any(_same_solution(solution, other) for other in declared)
        ]

    try:
        return Solved(tuple(within("sympy.solve(∇L = 0)", solve)))
    except OutOfTime as out:
        return Solved((), f"{out}: the critical sets come from the numerical search alone")


def real_point(
    params: tuple[sp.Symbol, ...],
    loss: sp.Expr,
    solution: tuple[tuple[sp.Symbol, sp.Expr], ...],
    hyper: tuple[tuple[sp.Symbol, float], ...],
) -> np.ndarray | None:
    """Bounds on the exact critical point ``solution`` (every parameter given, as ``sympy.solve``
    returns it, possibly written with ``I``), proven real; ``None`` where it is not real, or not
    proven so within the symbolic time budget.

    The hyperparameters take their floating-point values exactly (as rationals).  A coordinate
    whose complex ball (:func:`gradflow._symbolic.interval.complex_enclosure`) is real is done.  Otherwise
    it is a root of the polynomial that eliminates the other parameters from the numerators of
    ``∇L`` (the last element of their lexicographic Gröbner basis, univariate where the
    solutions are isolated): its roots are isolated by arb (python-flint's
    ``fmpz_poly.complex_roots``, which gives each real root an imaginary part exactly 0), and
    the coordinate is the one root whose isolating ball meets its own ball.  The roots of
    ``x³ − 3x + 1 = 0`` that Cardano's formula writes as sums of complex cube roots come out as
    the real roots ``2cos(2πk/9 ± …)``, each a few ulps wide.

    Returns:
        Shape ``(dim, 2)``, lower and upper bounds of each coordinate (rounded outward).
    """
    try:
        return within(
            "the real value of a closed-form point", _real_point, params, loss, solution, hyper
        )
    except OutOfTime:
        return None


@functools.cache
def _real_point(
    params: tuple[sp.Symbol, ...],
    loss: sp.Expr,
    solution: tuple[tuple[sp.Symbol, sp.Expr], ...],
    hyper: tuple[tuple[sp.Symbol, float], ...],
) -> np.ndarray | None:
    subs = {symbol: sp.Rational(value) for symbol, value in hyper}
    given = dict(solution)
    values = [sp.sympify(given[p]).subs(subs) for p in params]
    if any(v.free_symbols for v in values):
        return None
    bounds = []
    for i, value in enumerate(values):
        ball = complex_enclosure(value)
        if ball is None:
            return None
        if not ball.imag.is_zero():
            root = _isolated_root(params, loss.subs(subs), i, ball)
            if root is None or not root.imag.is_zero():
                return None
            ball = root
        lo, hi = float(ball.real.lower()), float(ball.real.upper())
        if not lo <= hi:
            return None
        bounds.append((np.nextafter(lo, -np.inf), np.nextafter(hi, np.inf)))
    return np.array(bounds)


def _isolated_root(params: tuple[sp.Symbol, ...], loss: sp.Expr, i: int, ball: object) -> object:
    """The root of the eliminant of ``∇L = 0`` in ``params[i]`` whose isolating ball alone meets
    ``ball`` (an acb), or ``None``."""
    from flint import fmpz_poly

    eliminant = _eliminant(params, loss, i)
    if eliminant is None:
        return None
    coefficients = sp.Poly(eliminant, params[i]).clear_denoms()[1].all_coeffs()
    roots = fmpz_poly([int(c) for c in reversed(coefficients)]).complex_roots()
    meeting = [root for root, _ in roots if root.overlaps(ball)]
    return meeting[0] if len(meeting) == 1 else None


@functools.cache
def _eliminant(params: tuple[sp.Symbol, ...], loss: sp.Expr, i: int) -> sp.Expr | None:
    """A non-zero polynomial in ``params[i]`` alone that vanishes wherever ``∇L = 0`` (the last
    element of the lexicographic Gröbner basis of the gradient's numerators, ``params[i]``
    last), or ``None`` where there is none (a set of critical points along which
    ``params[i]`` varies)."""
    numerators = [sp.numer(sp.together(sp.diff(loss, s))) for s in params]
    order = [s for s in params if s != params[i]] + [params[i]]
    last = sp.groebner(numerators, *order, order="lex").exprs[-1]
    if last.free_symbols != {params[i]}:
        return None
    return last


def _same_solution(a: Mapping[sp.Symbol, sp.Expr], b: Mapping[sp.Symbol, sp.Expr]) -> bool:
    return a.keys() == b.keys() and all(sp.simplify(a[k] - b[k]) == 0 for k in a)


@budgeted_cache
def nonnegative(loss: sp.Expr) -> tuple[bool, str | None]:
    """Whether SymPy's assumption system proves ``L ≥ 0`` for all real parameters, within the
    symbolic time budget: of ``L`` as written, or with ``max``/``min`` written through ``|·|``
    (``max(a, b) = (a + b + |a − b|)/2``: ``max(x, −x) + (y − 1)²`` is ``|x| + (y − 1)²``, which
    it proves); and, where the budget ran out (no proof), why."""

    def proof() -> bool:
        if loss.is_nonnegative:
            return True
        return bool(loss.has(sp.Max, sp.Min) and loss.rewrite(sp.Abs).is_nonnegative)

    try:
        return bool(within("SymPy's proof of L ≥ 0", proof)), None
    except OutOfTime as out:
        return False, f"{out}: no lower bound of L is proven"


def lower_bound(loss: sp.Expr) -> tuple[float | None, str | None]:
    """A proven lower bound of ``L``, built from the outside in; ``None`` where none is proven,
    with why:

    - a constant term ``c`` adds to the bound of the rest: ``10⁻⁶((x² − 1)² + y²) + 10 ≥ 10``
      (SymPy distributes a numeric factor over a sum, so the rest is the scaled sum of squares
      SymPy proves ``≥ 0``), and ``(x² − 1)² + y² − 3 ≥ −3``;
    - a positive factor ``a`` scales it: ``10⁶ e^u ≥ 10⁶ e^{inf u}``;
    - ``exp`` is increasing: ``exp(u) ≥ exp(b)`` where ``u ≥ b`` is proven, else ``> 0``, so
      ``exp((x² + y² − 1)²) ≥ 1`` and ``exp(u) − 1 ≥ 0``;
    - otherwise ``0`` where SymPy proves ``L ≥ 0`` (:func:`nonnegative`).

    So the bound follows the loss when it is scaled or a constant (an entropy floor) is added.
    A bound that is not attained (``e^x + y² + 2 ≥ 2``) labels nothing global: the global test
    asks a critical point to reach it."""
    bound = _outside_in(loss)
    if bound is not None:
        return bound, None
    proven, why = nonnegative(loss)
    return (0.0, None) if proven else (None, why)


def _outside_in(expr: sp.Expr) -> float | None:
    """:func:`lower_bound`'s rules, recursively; ``None`` where none applies."""
    if expr.is_number:
        return float(expr) if expr.is_real else None
    constant, rest = expr.as_coeff_Add()
    if constant != 0:
        inner = _outside_in(rest)
        return None if inner is None else float(constant) + inner
    factor, rest = expr.as_coeff_Mul()
    if factor > 0 and factor != 1:
        inner = _outside_in(rest)
        return None if inner is None else float(factor) * inner
    if isinstance(expr, sp.exp):
        inner = _outside_in(expr.args[0])
        return 0.0 if inner is None else math.exp(inner)
    return 0.0 if nonnegative(expr)[0] else None


def nonsmooth_atoms(expr: sp.Expr) -> list[sp.Expr]:
    """The non-smooth function applications in ``expr`` (see :data:`NONSMOOTH_FUNCTIONS`)."""
    return sorted(expr.atoms(*NONSMOOTH_FUNCTIONS), key=sp.default_sort_key)


def kink_function(atom: sp.Expr) -> sp.Expr:
    """The expression that vanishes on the kink of a non-smooth term: ``u`` for ``|u|``,
    ``sign(u)`` and ``H(u)``; ``a - b`` for ``max(a, b)`` and ``min(a, b)``; for a piecewise
    expression, ``lhs - rhs`` of its first condition."""
    if isinstance(atom, sp.Piecewise):
        condition = atom.args[0][1]
        return condition.lhs - condition.rhs if isinstance(condition, sp.Rel) else sp.S.Zero
    if isinstance(atom, (sp.Max, sp.Min)):
        return atom.args[0] - sp.Add(*atom.args[1:]) if len(atom.args) == 2 else atom.args[0]
    return atom.args[0]


@dataclass(frozen=True)
class KinkForm:
    """A loss with kinks written with one slope symbol per kink (see :func:`kink_form`).

    Attributes:
        surfaces: ``g_k``, kink ``k`` lies on ``g_k = 0``.
        slopes: the slope symbols ``s_k``.
        loss: ``L`` with each kink replaced by its form in ``s_k``.
        lo, hi: the slope on the side ``g_k < 0`` and on the side ``g_k > 0``.
        names: the kink terms as written (``"Abs(x)"``).
    """

    surfaces: tuple[sp.Expr, ...]
    slopes: tuple[sp.Symbol, ...]
    loss: sp.Expr
    lo: tuple[float, ...]
    hi: tuple[float, ...]
    names: tuple[str, ...]


@functools.cache
def kink_form(loss: sp.Expr) -> KinkForm | None:
    """``L`` with a slope symbol per kink: ``|u| → s·u`` (slopes ``[-1, 1]``),
    ``max(a, b) → b + s·(a - b)`` and ``min(a, b) → a - s·(a - b)`` (slopes ``[0, 1]``), each
    on the surface ``g = u`` or ``a - b``.  With every slope that of the side of its surface a
    point lies on, the value and gradient are ``L``'s; on a surface every slope in the range
    gives ``L``'s value.

    Returns:
        The form, or ``None`` where the loss has no kink, or a kink this form does not cover: a
        step (``sign``, ``Heaviside``: the loss itself jumps), a ``Piecewise``, a ``max`` or
        ``min`` of more than two terms, or a kink inside another kink's argument.
    """
    atoms = nonsmooth_atoms(loss)
    if not atoms:
        return None
    for atom in atoms:
        if not isinstance(atom, (sp.Abs, sp.Max, sp.Min)) or len(atom.args) > 2:
            return None
        if any(nonsmooth_atoms(arg) for arg in atom.args):
            return None
    slopes = tuple(sp.Symbol(f"_slope{k}", real=True) for k in range(len(atoms)))
    replaced, surfaces, lo, hi = {}, [], [], []
    for atom, s in zip(atoms, slopes):
        if isinstance(atom, sp.Abs):
            (u,) = atom.args
            replaced[atom], low = s * u, -1.0
        else:
            a, b = atom.args
            u = a - b
            replaced[atom], low = (b + s * u if isinstance(atom, sp.Max) else a - s * u), 0.0
        surfaces.append(u)
        lo.append(low)
        hi.append(1.0)
    return KinkForm(
        surfaces=tuple(surfaces),
        slopes=slopes,
        loss=loss.xreplace(replaced),
        lo=tuple(lo),
        hi=tuple(hi),
        names=tuple(str(a) for a in atoms),
    )


def gradient_jumps(params: tuple[sp.Symbol, ...], loss: sp.Expr) -> tuple[str, ...]:
    """The non-smooth terms of ``L`` across whose kink ``∇L`` jumps (:func:`jumps`)."""
    return jumps(params, loss)[0]


@budgeted_cache
def jumps(params: tuple[sp.Symbol, ...], loss: sp.Expr) -> tuple[tuple[str, ...], str | None]:
    """The non-smooth terms of ``L`` across whose kink ``∇L`` jumps, and why every term is
    listed where the symbolic time budget ran out (``None`` otherwise).

    Each step discontinuity ``D(u)`` (``sign``, ``Heaviside``) in ``∇L`` is replaced by its value
    on either side of ``u = 0``; the difference of the two gradients is the jump, which must
    vanish on ``u = 0`` for ``∇L`` to be continuous (``d(w|w|)/dw = |w| + w·sign(w)`` jumps by
    ``2w``, zero at ``w = 0``; ``d|x|/dx = sign(x)`` jumps by 2).  A piecewise gradient, or a
    jump SymPy cannot decide, counts as a jump.

    The answer is kept between processes (:func:`gradflow._symbolic.kept.kept_value`): a warm
    command does no SymPy for it.

    Returns:
        The loss's non-smooth terms (as strings) whose kink makes ``∇L`` jump, sorted; every
        non-smooth term where the budget ran out.
    """
    terms = nonsmooth_atoms(loss)
    if not terms:
        return (), None

    def decided() -> tuple[str, ...]:
        jumping = set()
        for g in (sp.diff(loss, s) for s in params):
            for step in g.atoms(sp.sign, sp.Heaviside, sp.Piecewise):
                if not _continuous_across(g, step):
                    jumping.add(step)
        if not jumping:
            return ()
        kinks = {sp.simplify(kink_function(step)) for step in jumping}
        return tuple(
            str(term) for term in terms if any(_same_kink(kink_function(term), k) for k in kinks)
        )

    def found() -> tuple[tuple[str, ...], str | None]:
        try:
            return within("SymPy's test of where ∇L jumps", decided), None
        except OutOfTime as out:
            every = tuple(str(term) for term in terms)
            return every, f"{out}: every kink is taken for a jump of ∇L"

    return kept_value("jumps", [sp.srepr(params), written(loss)], found, tuple)


def _continuous_across(g: sp.Expr, step: sp.Expr) -> bool:
    """Whether ``g`` is continuous across the kink of the step function ``step``."""
    if isinstance(step, sp.Piecewise):
        return False
    u = step.args[0]
    above, below = (1, 0) if isinstance(step, sp.Heaviside) else (1, -1)
    jump = g.subs(step, above) - g.subs(step, below)
    symbols = sorted(u.free_symbols, key=sp.default_sort_key)
    for symbol in symbols:
        try:
            roots = sp.solve(u, symbol)
        except NotImplementedError:
            continue
        if roots:
            return all(sp.simplify(jump.subs(symbol, r)) == 0 for r in roots)
    return False


def _same_kink(a: sp.Expr, b: sp.Expr) -> bool:
    return sp.simplify(a - b) == 0 or sp.simplify(a + b) == 0


def readable(expr: sp.Expr, subs: Mapping[sp.Symbol, float] | None = None) -> str:
    """``expr`` for a report: exact if short and real, else its value to 7 significant digits.

    A root of a cubic comes out of ``sympy.solve`` as a sum of complex cube roots; its real
    value is what a reader wants.
    """
    value = expr.subs(subs or {})
    if sp.count_ops(value) <= READABLE_OPS and value.is_real is not False and not value.has(sp.I):
        return str(value)
    number = sp.N(value, 15)
    if number.free_symbols:
        return str(value)
    re, im = number.as_real_imag()
    if abs(float(im)) > 1e-12 * max(1.0, abs(float(re))):
        return f"{complex(number):.7g}"
    return f"{float(re):.7g}"


@budgeted_cache
def singular_critical_points(
    params: tuple[sp.Symbol, ...],
    loss: sp.Expr,
    swept: sp.Symbol,
    held: tuple[tuple[sp.Symbol, float], ...],
) -> tuple[dict[sp.Symbol, sp.Expr], ...]:
    """The real solutions ``(θ, h)`` of ``∇L = 0`` and ``det ∇²L = 0`` by ``sympy.solve``.

    A fold, pitchfork or transcritical bifurcation of an isolated critical point happens where
    a critical point has a singular Hessian (Kuznetsov, *Elements of Applied Bifurcation
    Theory*, §3.3).  The other hyperparameters are held at ``held`` (their values read as the
    nearest short rationals, so ``0.3`` is ``3/10``).

    Returns:
        One ``{symbol: value}`` per isolated real solution, parameters and ``swept`` included;
        empty when the gradient is not rational in ``θ`` and ``h``, or SymPy finds none within
        the symbolic time budget.
    """
    unknowns = [*params, swept]
    if not _rational_gradient(params, loss, (swept, *(symbol for symbol, _ in held))):
        return ()
    subs = {symbol: sp.nsimplify(value, rational=True) for symbol, value in held}
    expr = loss.subs(subs)
    grad = [sp.diff(expr, s) for s in params]
    det = sp.Matrix([[sp.diff(g, s) for s in params] for g in grad]).det()
    system = [*grad, sp.numer(sp.together(det))]
    try:
        solutions = within(
            "sympy.solve(∇L = 0, det ∇²L = 0)", lambda: sp.solve(system, unknowns, dict=True)
        )
    except (NotImplementedError, OutOfTime):
        return ()
    return tuple(
        s for s in solutions if set(s) == set(unknowns) and all(v.is_real for v in s.values())
    )


@functools.cache
def _rational_gradient(
    params: tuple[sp.Symbol, ...], loss: sp.Expr, hyper: tuple[sp.Symbol, ...]
) -> bool:
    """Whether ``∇L`` is rational in the parameters and hyperparameters (checked once a loss)."""
    return all(sp.diff(loss, s).is_rational_function(*params, *hyper) for s in params)


@budgeted_cache
def degenerate_set_values(
    params: tuple[sp.Symbol, ...],
    loss: sp.Expr,
    solution: tuple[tuple[sp.Symbol, sp.Expr], ...],
    sample: tuple[tuple[sp.Symbol, sp.Expr], ...],
    swept: sp.Symbol,
) -> tuple[sp.Expr, ...]:
    """The values of ``swept``, as expressions of the other hyperparameters, at which the
    closed-form critical set ``θ_d = f(θ_f, h)`` (``solution``: each dependent parameter's
    expression) is degenerate at its point with free coordinates ``sample``.

    Write the Hessian in the dependent and free parameters as ``[[A, B], [Bᵀ, C]]``.  Every
    tangent ``(Df·v, v)`` of the set is in its kernel (``A Df + B = 0``, ``Bᵀ Df + C = 0``), so
    where ``A`` is nonsingular ``H`` has rank ``rank A`` = the set's codimension (the Schur
    complement ``C − BᵀA⁻¹B = C + Bᵀ Df`` vanishes), and where ``A v = 0`` the vector ``(v, 0)``
    is a further null direction (``Bᵀ v = −Dfᵀ A v = 0``).  The set's kind (the signs of its
    non-zero curvatures) can change only where ``det A = 0``: for the line ``e = 0`` of the
    canonical model, where ``∂²L/∂e²`` vanishes on it.  The logistic functions are written with
    ``exp`` and the inverse hyperbolic ones with ``log``, so that the determinant is algebraic
    in the hyperparameters, and the numerator is solved by ``sympy.solve``.

    Args:
        params: the parameters ``θ``.
        loss: ``L``, its hyperparameters left as symbols.
        solution: ``(dependent parameter, expression)`` pairs of the set.
        sample: ``(free parameter, exact value)`` pairs: the point of the set where ``det A``
            is solved.
        swept: the hyperparameter solved for.

    Returns:
        Each solution free of ``θ`` (an expression of the other hyperparameters, or a number);
        empty where SymPy finds none or cannot solve within the symbolic time budget.
    """
    try:
        found = within(
            "sympy.solve(det A = 0)",
            lambda: sp.solve(_transverse_determinant(params, loss, solution, sample), swept),
        )
    except (NotImplementedError, OutOfTime):
        return ()
    return tuple(v for v in found if not v.free_symbols & set(params))


@functools.cache
def _transverse_determinant(
    params: tuple[sp.Symbol, ...],
    loss: sp.Expr,
    solution: tuple[tuple[sp.Symbol, sp.Expr], ...],
    sample: tuple[tuple[sp.Symbol, sp.Expr], ...],
) -> sp.Expr:
    """The numerator of ``det A`` at the point ``sample`` of the set (see
    :func:`degenerate_set_values`), algebraic and simplified: solved once for each swept
    hyperparameter."""
    block = _second_derivatives(loss, tuple(symbol for symbol, _ in solution))
    det = block.subs({**dict(solution), **dict(sample)}).det()
    return sp.simplify(sp.numer(sp.together(_algebraic(det))))


@functools.cache
def _second_derivatives(loss: sp.Expr, symbols: tuple[sp.Symbol, ...]) -> sp.Matrix:
    """``∂²L/∂a∂b`` for ``a, b`` in ``symbols`` (the costly part for a long loss)."""
    return sp.ImmutableMatrix([[sp.diff(loss, a, b) for b in symbols] for a in symbols])


LOGISTIC = (Sigmoid, LogSigmoid, Softplus, LogAddExp)
"""Functions rewritten with ``exp`` before solving (their rewrite rules are exact)."""


def _algebraic(expr: sp.Expr) -> sp.Expr:
    """``expr`` with the logistic functions written with ``exp`` and ``asinh``, ``acosh``,
    ``atanh`` with ``log``, the logarithms expanded and ``exp`` of sums split, so that
    ``exp(log(u)/2)`` becomes ``√u``."""
    expr = expr.rewrite(LOGISTIC, sp.exp).rewrite((sp.asinh, sp.acosh, sp.atanh), sp.log)
    return sp.expand_power_exp(sp.expand_log(expr, force=True))
