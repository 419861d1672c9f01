"""Critical sets known in closed form: their declaration (:class:`CriticalSetSpec`), the sets
``sympy.solve`` adds, the name of each set's family across hyperparameter values, and each set
at fixed hyperparameters evaluated with NumPy (:class:`ClosedFormPiece`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import sympy as sp

from .budget import OutOfTime, budgeted_cache, within
from .facts import solve_gradient

if TYPE_CHECKING:
    from .model import ReducedModel

__all__ = [
    "ClosedFormPiece",
    "CriticalSetSpec",
    "closed_form_specs",
    "family_names",
    "piece_functions",
    "solved",
    "solved_specs",
]

REAL_POINTS_SECONDS = 2.0
"""CPU seconds SymPy may take to find the real points of a complex solution of ``∇L = 0``."""
IMAG_TOL = 1e-9
"""A closed-form value evaluated in complex arithmetic is real where its imaginary part is at
most this times ``max(1, |real part|)`` (rounding of complex intermediates is ~1e-16)."""


@dataclass(frozen=True, eq=False)
class CriticalSetSpec:
    """A critical set of ``L`` known in closed form, written as a graph over free coordinates.

    Args:
        name: short name shown in reports and legends, e.g. ``"Γ*"`` or ``"e = 0"``.  Pieces that
            share a name and turn out to have the same kind are reported as one set.
        solution: the dependent parameters as SymPy expressions of the free parameters and the
            hyperparameters, e.g. ``{e: 0}`` for the line ``e = 0``.  Parameters not in
            ``solution`` are free; their number is the dimension of the set.
        condition: where on that graph the set lies (a SymPy boolean in ``θ`` and ``h``),
            e.g. ``w > -1/sqrt(2)``.  Points where it is false, or where ``solution`` is not real,
            are not on the set.
        equation: a human-readable equation, e.g. ``"e²(1 + 2w|w|) = c*"``.
    """

    name: str
    solution: Mapping[sp.Symbol, sp.Expr]
    condition: sp.Basic = sp.true
    equation: str | None = None


@dataclass(frozen=True, eq=False)
class ClosedFormPiece:
    """A :class:`CriticalSetSpec` at fixed hyperparameters, evaluated with NumPy.

    Implements the engine's ``ClosedForm`` protocol.
    """

    name: str
    equation: str | None
    free: tuple[int, ...]
    dependent: tuple[int, ...]
    values: Callable[..., Any]
    condition: Callable[..., Any]
    hyper: tuple[float, ...]
    dim: int

    def complete(self, free_points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Full points ``(n, dim)`` from free coordinates ``(n, n_free)``, and where the
        piece's condition holds and its values are real."""
        n = free_points.shape[0]
        points = np.empty((n, self.dim))
        points[:, list(self.free)] = free_points
        with np.errstate(all="ignore"):
            points[:, list(self.dependent)] = self._dependent(free_points)
            ok = np.broadcast_to(self.condition(*points.T, *self.hyper), (n,)).astype(bool)
        return points, ok

    def _dependent(self, free_points: np.ndarray) -> np.ndarray:
        """The dependent coordinates over ``free_points``, shape ``(n, len(dependent))``, NaN
        where they are not real.

        Where the real evaluation is not a real number, the values are evaluated again in
        complex arithmetic and kept where their imaginary part is rounding
        (:data:`IMAG_TOL`): ``sympy.solve`` writes the three real roots of a cubic with
        complex cube roots (``(27/2 + 27√3 i/2)^{1/3}``; at a hyperparameter value,
        ``√(729a² − 2916)`` of a negative number), whose sum is real."""
        n = free_points.shape[0]
        dep = self.values(*free_points.T, *self.hyper)
        columns = np.stack([np.broadcast_to(np.asarray(d), (n,)) for d in dep], axis=1)
        unreal = np.iscomplex(columns).any(axis=1) | ~np.isfinite(columns).all(axis=1)
        out = np.where(unreal[:, None], np.nan, np.real(columns))
        if unreal.any():
            m = int(unreal.sum())
            z = free_points[unreal].T.astype(complex)
            values = self.values(*z, *(complex(h) for h in self.hyper))
            again = np.stack([np.broadcast_to(np.asarray(v, complex), (m,)) for v in values], 1)
            real = np.abs(again.imag) <= IMAG_TOL * np.maximum(1.0, np.abs(again.real))
            out[unreal] = np.where(real, again.real, np.nan)
        return out


@functools.cache
def piece_functions(model: ReducedModel, spec: CriticalSetSpec) -> tuple[Any, Any]:
    """NumPy ``g(free θ…, h…)`` (list of dependents) and the condition ``c(θ…, h…)``."""
    free = [s for s in model.params if s not in spec.solution]
    dependent = [s for s in model.params if s in spec.solution]
    values = sp.lambdify(
        (*free, *model.hyperparams), [spec.solution[s] for s in dependent], modules="numpy"
    )
    condition = sp.lambdify((*model.params, *model.hyperparams), spec.condition, modules="numpy")
    return values, condition


@budgeted_cache
def solved(model: ReducedModel) -> tuple[tuple[CriticalSetSpec, ...], str | None]:
    """``sympy.solve(∇L = 0)`` solutions beyond the declared sets, as specs, and why there are
    none where its time budget ran out."""
    declared = [dict(spec.solution) for spec in model.critical_sets]
    solved = solve_gradient(model.params, model.loss, declared)
    unique: list[Mapping[sp.Symbol, sp.Expr]] = []
    for solution in solved.solutions:
        unique += [s for s in real_points(model.params, solution) if s not in unique]
    return tuple(CriticalSetSpec("sympy.solve", s) for s in unique), solved.caveat


def real_points(
    params: tuple[sp.Symbol, ...], solution: Mapping[sp.Symbol, sp.Expr]
) -> list[Mapping[sp.Symbol, sp.Expr]]:
    """``solution`` as its real points where it is a complex graph over real free parameters
    with finitely many real points: ``y = −i x`` (a solution of ``∇(x² + y²)⁴ = 0``) is real
    only at ``x = 0``, so it is the point ``x = 0, y = 0`` and is named so.  Any other solution
    is returned as it is (alone in the list), also where SymPy cannot tell within
    :data:`REAL_POINTS_SECONDS`."""
    free = [s for s in params if s not in solution]
    values = list(solution.values())
    if (
        not free
        or not any(v.has(sp.I) for v in values)
        or any(s not in params for v in values for s in v.free_symbols)
    ):
        return [solution]

    def points() -> list[dict[sp.Symbol, sp.Expr]]:
        found = sp.solve([sp.im(v) for v in values], free, dict=True)
        out = []
        for point in found:
            if set(point) != set(free) or any(not p.is_real for p in point.values()):
                return []
            full = {**point, **{s: sp.simplify(v.subs(point)) for s, v in solution.items()}}
            out.append({s: full[s] for s in params})
        return out

    try:
        made = within("the real points of a complex solution", points, seconds=REAL_POINTS_SECONDS)
    except OutOfTime:
        return [solution]
    if not made or any(not v.is_real for p in made for v in p.values()):
        return [solution]
    return made


def solved_specs(model: ReducedModel) -> tuple[CriticalSetSpec, ...]:
    """``sympy.solve(∇L = 0)`` solutions beyond the declared sets, as specs."""
    return solved(model)[0]


def closed_form_specs(model: ReducedModel) -> tuple[tuple[str, CriticalSetSpec], ...]:
    """Each closed-form spec (declared, then solved) with the name of its family, the name a
    set keeps across a sweep (:attr:`BoundModel.set_families`)."""
    return tuple(zip(family_names(model), (*model.critical_sets, *solved_specs(model))))


@budgeted_cache
def family_names(model: ReducedModel) -> tuple[str, ...]:
    """The name of each closed-form spec (declared, then solved) with the hyperparameters left
    as symbols."""
    return tuple(
        spec.name
        if spec.name != "sympy.solve"
        else ", ".join(f"{k} = {v}" for k, v in spec.solution.items())
        for spec in (*model.critical_sets, *solved_specs(model))
    )
