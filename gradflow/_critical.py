"""Critical sets of a reduced model: closed form and symbolic first, then numerical search.

1. Closed form: the model's declared :class:`CriticalSetSpec` pieces, and, where the gradient is a
   rational function of ``θ``, the solutions of ``sympy.solve(∇L = 0)``.  Each piece is sampled
   inside the bounds, checked (``∇L = 0`` there, or the declaration is wrong) and classified.
2. Numerical: multi-start Levenberg–Marquardt on ``∇L = 0`` (``scipy.optimize.root``).
   Solutions lying on a closed-form piece are absorbed by it; the rest are classified and grouped
   into sets, whose dimension is the nullity of the Hessian (a Morse–Bott set of minima is
   reported as one set, not as the hundreds of points the search lands on).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import sympy as sp
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.optimize import root
from scipy.spatial.distance import pdist

from ._classify import KINDS, Classification, classify_points
from ._compiled import numpy_gradient
from ._errors import GradflowError
from ._model import CriticalSetSpec, ReducedModel
from ._pieces import GRADIENT_TOL, ON_SET_TOL, SampledPiece, on_piece, sample_piece

if TYPE_CHECKING:
    from ._bound import BoundModel

__all__ = ["CriticalSet", "critical_sets", "global_min_level", "decision_level"]

POINT_CLUSTER = 1e-3
"""Numerical solutions spread over less than this fraction of the box diagonal are one point."""


@dataclass(frozen=True)
class CriticalSet:
    """A connected piece of the critical set of one kind.

    Attributes:
        name: the closed-form piece it comes from (e.g. ``"Γ*"``), ``"sympy.solve: …"`` with
            the solution, or ``"numerical"``.
        kind: ``global_min``, ``local_min``, ``saddle``, ``local_max`` or ``degenerate``.
        dimension: 0 for an isolated point, 1 for a curve, …
        loss: ``L`` on the set (constant on a connected critical set), nats.
        points: sample points on the set inside the bounds, shape ``(n, dim)``.
        equation: the set's equation where known in closed form.
        hessian_eigenvalues: at a representative point, ascending, shape ``(dim,)``.
        morse_index: number of negative Hessian eigenvalues there.
        nullity: number of zero Hessian eigenvalues there (``_classify.ZERO_EIGENVALUE``); more
            than ``dimension`` means the Hessian alone does not decide the kind.
        segments: for a curve known in closed form, the offsets in ``points`` at which each
            polyline starts (samples in order along the curve); empty for point clouds.
    """

    name: str
    kind: str
    dimension: int
    loss: float
    points: np.ndarray
    equation: str | None
    hessian_eigenvalues: np.ndarray
    morse_index: int
    nullity: int
    segments: tuple[int, ...] = ()

    def polylines(self) -> list[np.ndarray]:
        """The curve's polylines (for drawing); empty unless ``segments`` is set."""
        bounds = [*self.segments, len(self.points)]
        return [self.points[a:b] for a, b in zip(bounds[:-1], bounds[1:]) if b - a >= 2]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the fields above, arrays as lists."""
        return {
            "name": self.name,
            "kind": self.kind,
            "dimension": self.dimension,
            "loss": self.loss,
            "points": self.points.tolist(),
            "equation": self.equation,
            "hessian_eigenvalues": self.hessian_eigenvalues.tolist(),
            "morse_index": self.morse_index,
        }


def critical_sets(
    model: BoundModel,
    *,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    fixed: Mapping[str, float] | None = None,
    samples: int = 41,
    starts: int = 256,
    seed: int = 0,
) -> list[CriticalSet]:
    """The critical sets of ``L`` inside the bounds, each classified.

    Args:
        model: the model at fixed hyperparameters.
        bounds: ``{name: (lo, hi)}`` overriding the model's default range of some parameters.
        fixed: ``{name: value}``: only the critical points on this slice of parameter space
            (what a portrait of a slice draws).  Closed-form sets are sampled on the slice; the
            numerical search, whose solutions almost never lie on a slice, is skipped.
        samples: sample points per free dimension on each closed-form set (fewer on sets of
            dimension 2 and more, so that a set has at most ``_pieces.MAX_SAMPLES`` points).
        starts: starting points of the numerical search (uniform in the bounds, seeded).
        seed: seed of the starting points.

    Returns:
        The sets ordered by kind (global minima first) and loss.  Their kinds come from the
        Hessian in the whole parameter space, also on a slice.

    Raises:
        GradflowError: a bound with ``lo ≥ hi``, an unknown name, or a declared set on which
            ``∇L ≠ 0``.
    """
    box = _bounds(model.model, bounds)
    for name, value in (fixed or {}).items():
        box[model.model.index(name)] = float(value)
    global_loss = model.global_min_loss
    pieces = [*model.model.critical_sets, *_symbolic_pieces(model.model)]
    sampled = [(spec, sample_piece(model, spec, box, samples)) for spec in pieces]
    found = _numerical_solutions(model, box, 0 if fixed else starts, seed)
    on_closed_form = np.zeros(len(found), dtype=bool)
    for spec, _ in sampled:
        on_closed_form |= on_piece(model, spec, found)
    loose = found[~on_closed_form]
    if global_loss is None:
        global_loss = _lowest_minimum(model, [piece.points for _, piece in sampled] + [loose])
    result: list[CriticalSet] = []
    for spec, piece in sampled:
        result += _group(model, spec, piece, classify_points(model, piece.points, global_loss))
    result += _numerical_sets(model, loose, global_loss, box)
    return _merge(result)


def global_min_level(sets: list[CriticalSet]) -> float | None:
    """The loss of the global minimum among ``sets`` (nats), or ``None`` if none is global."""
    losses = [s.loss for s in sets if s.kind == "global_min"]
    return min(losses) if losses else None


def decision_level(sets: list[CriticalSet]) -> float | None:
    """The lowest loss of a non-global critical set (nats), or ``None`` if all are global.

    A trajectory whose loss falls below it can only end at a global minimum.
    """
    losses = [s.loss for s in sets if s.kind != "global_min"]
    return min(losses) if losses else None


def _bounds(model: ReducedModel, overrides: Mapping[str, tuple[float, float]] | None) -> np.ndarray:
    """Bounds as an array of shape ``(dim, 2)``."""
    overrides = dict(overrides or {})
    for name in overrides:
        model.index(name)
    box = np.array([overrides.get(n, model.bound(n)) for n in model.param_names], dtype=float)
    for name, (lo, hi) in zip(model.param_names, box):
        if not lo < hi:
            raise GradflowError(f"box: {name} min {lo:g} must be below {name} max {hi:g}")
    return box


@functools.cache
def _symbolic_pieces(model: ReducedModel) -> tuple[CriticalSetSpec, ...]:
    """Solutions of ``sympy.solve(∇L = 0)`` when the gradient is rational in ``θ``; else none.

    Solutions that repeat a declared closed-form piece are left out.
    """
    grad = [sp.diff(model.loss, s) for s in model.params]
    if not all(g.is_rational_function(*model.params) for g in grad):
        return ()
    declared = [dict(spec.solution) for spec in model.critical_sets]
    solutions = [
        solution
        for solution in sp.solve([sp.factor(g) for g in grad], model.params, dict=True)
        if not any(_same_solution(solution, other) for other in declared)
    ]
    equations = [", ".join(f"{k} = {v}" for k, v in solution.items()) for solution in solutions]
    return tuple(
        CriticalSetSpec(f"sympy.solve: {equation}", solution, equation=equation)
        for solution, equation in zip(solutions, equations)
    )


def _same_solution(a: Mapping[sp.Symbol, sp.Expr], b: Mapping[sp.Symbol, sp.Expr]) -> bool:
    return a.keys() == b.keys() and all(sp.simplify(a[k] - b[k]) == 0 for k in a)


def _numerical_solutions(model: BoundModel, box: np.ndarray, starts: int, seed: int) -> np.ndarray:
    """Critical points found by Levenberg–Marquardt (``scipy.optimize.root``) on ``∇L = 0``.

    The ``starts`` initial points are uniform in ``box`` (seeded); the Jacobian is the Hessian.
    Returns the solutions inside ``box`` with ``‖∇L‖₂ ≤ GRADIENT_TOL``, shape ``(n, dim)``.
    """
    rng = np.random.default_rng(seed)
    y0 = rng.uniform(box[:, 0], box[:, 1], size=(max(starts, 0), model.model.dim))
    grad, hessian = numpy_gradient(model.model), model.compiled.hessian
    h, h_array = [float(v) for v in np.asarray(model.h)], model.h
    found = []
    with np.errstate(all="ignore"):
        for start in y0:
            sol = root(
                lambda y: np.asarray(grad(*y, *h), dtype=float),
                start,
                jac=lambda y: np.asarray(hessian(y, h_array)),
                method="lm",
                options={"xtol": 1e-14, "ftol": 1e-14},
            )
            found.append(sol.x)
    ys = np.asarray(found).reshape(-1, model.model.dim)
    ok = np.all(np.isfinite(ys), axis=1) & np.all((ys >= box[:, 0]) & (ys <= box[:, 1]), axis=1)
    ys = ys[ok]
    return ys[np.linalg.norm(model.grad(ys), axis=1) <= GRADIENT_TOL] if len(ys) else ys


def _lowest_minimum(model: BoundModel, point_sets: list[np.ndarray]) -> float | None:
    """The lowest loss among minima in ``point_sets``, used when ``inf L`` is not declared."""
    pts = [p for p in point_sets if len(p)]
    if not pts:
        return None
    allp = np.concatenate(pts)
    kinds = classify_points(model, allp, None).kinds
    mins = model.loss(allp)[kinds == "local_min"]
    return float(mins.min()) if mins.size else None


def _group(
    model: BoundModel, spec: CriticalSetSpec, piece: SampledPiece, classes: Classification
) -> list[CriticalSet]:
    """One :class:`CriticalSet` per kind among the points of a closed-form piece.

    For a curve, the samples of one kind that are neighbours along it form one polyline.
    """
    out = []
    for kind in KINDS:
        idx = np.flatnonzero(classes.kinds == kind)
        if not idx.size:
            continue
        dimension = piece.dimension if idx.size > 1 else 0
        made = _make_set(model, spec.name, spec.equation, piece.points, classes, idx, dimension)
        if dimension == 1:
            starts = np.flatnonzero(np.diff(piece.order[idx]) != 1) + 1
            made = dataclasses.replace(made, segments=(0, *starts.tolist()))
        out.append(made)
    return out


def _make_set(
    model: BoundModel,
    name: str,
    equation: str | None,
    points: np.ndarray,
    classes: Classification,
    idx: np.ndarray,
    dimension: int,
) -> CriticalSet:
    """The set of ``points[idx]``, described at its middle point."""
    rep = idx[idx.size // 2]
    return CriticalSet(
        name=name,
        kind=str(classes.kinds[rep]),
        dimension=dimension,
        loss=float(np.median(model.loss(points[idx]))),
        points=points[idx],
        equation=equation,
        hessian_eigenvalues=classes.eigenvalues[rep],
        morse_index=int(classes.morse_index[rep]),
        nullity=int(classes.nullity[rep]),
    )


def _numerical_sets(
    model: BoundModel, points: np.ndarray, global_loss: float | None, box: np.ndarray
) -> list[CriticalSet]:
    """Group numerical solutions: same kind, single-linkage clusters at 5 % of the box diagonal.

    A cluster no wider than ``POINT_CLUSTER`` of the box diagonal is one isolated critical
    point, reported at its member of least ``‖∇L‖`` (near a degenerate point, where ``∇L``
    vanishes to higher order, the root finder's solutions scatter around it); otherwise the
    cluster's dimension is the median nullity of the Hessian over its points.
    """
    if not len(points):
        return []
    classes = classify_points(model, points, global_loss)
    diagonal = float(np.linalg.norm(box[:, 1] - box[:, 0]))
    threshold = 0.05 * diagonal
    gradient = np.linalg.norm(model.grad(points), axis=1)
    out = []
    for kind in KINDS:
        idx = np.flatnonzero(classes.kinds == kind)
        if not idx.size:
            continue
        labels = (
            fcluster(linkage(pdist(points[idx]), "single"), threshold, "distance")
            if idx.size > 1
            else np.ones(1)
        )
        for label in np.unique(labels):
            members = idx[labels == label]
            if np.ptp(points[members], axis=0).max() <= max(
                100 * ON_SET_TOL, POINT_CLUSTER * diagonal
            ):
                best = members[np.argmin(gradient[members])]
                out.append(
                    _make_set(model, "numerical", None, points, classes, np.array([best]), 0)
                )
            else:
                nullity = int(np.median(classes.nullity[members]))
                out.append(_make_set(model, "numerical", None, points, classes, members, nullity))
    return out


def _merge(sets: list[CriticalSet]) -> list[CriticalSet]:
    """Merge sets with the same name and kind (e.g. the two branches of Γ*); order by kind, loss."""
    merged: dict[tuple[str, str], CriticalSet] = {}
    for s in sets:
        key = (s.name, s.kind)
        if key in merged and s.name != "numerical":
            m = merged[key]
            merged[key] = dataclasses.replace(
                m,
                dimension=max(m.dimension, s.dimension),
                points=np.concatenate([m.points, s.points]),
                segments=(*m.segments, *(len(m.points) + i for i in s.segments)),
            )
        else:
            merged[key if s.name != "numerical" else (f"numerical{len(merged)}", s.kind)] = s
    return sorted(merged.values(), key=lambda s: (KINDS.index(s.kind), s.loss))
