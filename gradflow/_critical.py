"""Critical sets of a loss: closed form first, then numerical search; each classified.

1. Closed form: the landscape's closed-form sets (for a reduced model: its declared sets and the
   solutions of ``sympy.solve(∇L = 0)``).  Each is sampled inside the bounds, checked
   (``∇L = 0`` there, or the declaration is wrong) and classified point by point.
2. Numerical: multi-start Levenberg–Marquardt on ``∇L = 0`` (optimistix, all starts at once).
   Solutions lying on a closed-form set are absorbed by it; the rest are classified and grouped
   into clusters, whose dimension comes from their geometry (a Morse–Bott set of minima is
   reported as one set, not as the hundreds of points the search lands on).

A set is a **global minimum** only when its loss equals a proven lower bound of ``L`` (see
:attr:`gradflow.Landscape.global_min_loss`); otherwise the lowest minimum found is a local
minimum, and where ``L`` visibly runs to ``-∞`` along a ray the result says so.  Each set is split
into its connected components (two wells of a double well are two components of one set); see
:mod:`gradflow._attractors`.
"""

from __future__ import annotations

import dataclasses
import functools
import html
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

import jax
import jax.numpy as jnp
import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.optimize import minimize, root
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree
from scipy.spatial.distance import pdist

from ._certify import Certificate
from ._certify import certify as certify_box
from ._classify import KINDS, Classification, classify_points
from ._errors import GradflowError
from ._landscape import ClosedForm, GradientField, Landscape
from ._pieces import (
    ON_SET_TOL,
    SampledPiece,
    gradient_tol,
    on_piece,
    sample_piece,
)
from ._scales import loss_scales
from ._text import format_point, format_table

__all__ = [
    "CriticalSet",
    "CriticalSets",
    "bounded_below",
    "critical_sets",
    "decision_level",
    "global_min_level",
    "local_dimension",
    "search_box",
]

ROOT_TOL = 1e-13
"""Relative and absolute tolerance of the Levenberg–Marquardt search for ``∇L = 0``."""
ROOT_STEPS = 256
"""Step budget of each Levenberg–Marquardt start."""
NEWTON_STEP = 1e-4
"""A root of the numerical search is kept only where its Newton step ``‖H⁺∇L‖`` is at most this
times the landscape's length scale (see :func:`_near_a_zero`)."""
POINT_CLUSTER = 1e-3
"""Numerical solutions spread over less than this fraction of the box diagonal are one point."""
CLUSTER_LINK = 0.05
"""Numerical solutions of one kind closer than this fraction of the box diagonal are linked."""
UNBOUNDED_LOSS = -1e6
"""``L`` below this times the loss scale far out along a ray, and still falling, is read as
``L → -∞``."""
SAMPLE_GRID = 41
"""About this many lattice values across a parameter's default range start a set's sample."""
MAX_LATTICE = 400
"""At most this many lattice values per free axis inside the box."""
SEGMENT_SAMPLES = 33
"""Points at which a segment between two clusters of critical points is checked."""
DIMENSION_SHARE = 0.05
"""Share of a cluster's distinct points that must see ``d`` dimensions for it to have them."""
RAY_DIRECTIONS = 32
"""Random directions (besides the ± coordinate axes) probed for ``L → -∞``."""


@dataclass(frozen=True)
class CriticalSet:
    """A piece of the critical set of one kind (possibly several connected components).

    Attributes:
        name: the closed-form set it comes from (e.g. ``"Γ*"``), ``"sympy.solve: …"`` with the
            solution, or ``"numerical"``.
        kind: ``global_min``, ``local_min``, ``saddle``, ``local_max`` or ``degenerate``.
        dimension: 0 for an isolated point, 1 for a curve, … (from the set's geometry).
        loss: ``L`` on the set (constant on a connected critical set).
        points: sample points on the set inside the bounds, shape ``(n, dim)``.
        equation: the set's equation where known in closed form.
        hessian_eigenvalues: at the representative point, ascending, shape ``(dim,)``.
        morse_index: number of negative Hessian eigenvalues there.
        nullity: number of zero Hessian eigenvalues there; more than ``dimension`` means the
            Hessian alone does not decide the kind (the loss was probed).
        hessian_method: how the Hessian was obtained (automatic differentiation, or finite
            differences of ``∇L`` where the former is not finite, or loss probes).
        components: the connected component of each point, labels ``0 … n_components - 1``,
            shape ``(n,)``.
        sample: the set's point nearest the centre of the searched box, shape ``(dim,)``
            (for a closed-form set, found on the set itself, so it does not depend on how densely
            the set was sampled): the one point every report prints.
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
    hessian_method: str
    components: np.ndarray
    sample: np.ndarray
    segments: tuple[int, ...] = ()

    @property
    def n_components(self) -> int:
        """Number of connected components."""
        return int(self.components.max()) + 1 if len(self.components) else 0

    @property
    def degenerate(self) -> bool:
        """Whether the Hessian has more zero eigenvalues than the set has dimensions."""
        return self.nullity > self.dimension

    def polylines(self) -> list[np.ndarray]:
        """The curve's polylines (for drawing); empty unless ``segments`` is set."""
        bounds = [*self.segments, len(self.points)]
        return [self.points[a:b] for a, b in zip(bounds[:-1], bounds[1:]) if b - a >= 2]

    def component_points(self, label: int) -> np.ndarray:
        """The points of component ``label``, shape ``(m, dim)``."""
        return self.points[self.components == label]

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
            "nullity": self.nullity,
            "hessian_method": self.hessian_method,
            "components": self.n_components,
            "sample": self.sample.tolist(),
        }

    def __repr__(self) -> str:
        where = format_point(self.sample)
        return (
            f"CriticalSet({self.kind} {self.name!r}, dimension {self.dimension}, "
            f"L = {self.loss:.6g}, {len(self.points)} points, sample {where})"
        )


@dataclass(frozen=True)
class CriticalSets(Sequence[CriticalSet]):
    """The classified critical sets of a loss in a box: a sequence of :class:`CriticalSet`.

    Attributes:
        sets: the sets, global minima first, then by kind and loss.
        box: the searched bounds, shape ``(dim, 2)`` (``lo == hi`` on a pinned parameter).
        global_min_loss: the proven lower bound used for ``global_min`` (``None`` if none).
        bounded_below: ``True`` where a lower bound is proven, ``False`` where ``L`` visibly runs
            to ``-∞`` along a ray, ``None`` where neither is known.
        non_smooth: the loss's terms across whose kink ``∇L`` jumps.
        param_names: the parameter names (the order of every point).
        title: what the sets are of (``canonical, p = 0.7, q = 0.6``).
        unit: the unit of the losses (``"nats"``), or ``""``.
        certificate: what interval arithmetic proved about the box (``certify=True``), or
            ``None``.
    """

    sets: tuple[CriticalSet, ...]
    box: np.ndarray
    global_min_loss: float | None
    bounded_below: bool | None
    non_smooth: tuple[str, ...]
    param_names: tuple[str, ...]
    title: str = ""
    unit: str = ""
    certificate: Certificate | None = None

    @overload
    def __getitem__(self, i: int) -> CriticalSet: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[CriticalSet, ...]: ...

    def __getitem__(self, i: int | slice) -> CriticalSet | tuple[CriticalSet, ...]:
        return self.sets[i]

    def __len__(self) -> int:
        return len(self.sets)

    def __iter__(self) -> Iterator[CriticalSet]:
        return iter(self.sets)

    def inside(self, box: np.ndarray) -> CriticalSets:
        """The sets with a point inside ``box`` (shape ``(dim, 2)``), e.g. a portrait's drawn box
        within the wider box searched."""
        keep = tuple(
            s
            for s in self.sets
            if np.any(
                np.all((s.points >= box[:, 0] - 1e-12) & (s.points <= box[:, 1] + 1e-12), axis=1)
            )
        )
        return dataclasses.replace(self, sets=keep)

    def rows(self) -> tuple[list[str], list[list[str]]]:
        """The header and rows of the report table (one row per set)."""
        unit = f" ({self.unit})" if self.unit else ""
        header = [
            "kind",
            "dim",
            f"L{unit}",
            "Morse index",
            "set",
            f"sample ({', '.join(self.param_names)})",
        ]
        rows = [
            [
                s.kind,
                str(s.dimension),
                f"{s.loss:.6f}",
                f"{s.morse_index} (degenerate)" if s.degenerate else str(s.morse_index),
                s.equation or s.name,
                format_point(s.sample),
            ]
            for s in self.sets
        ]
        return header, rows

    def table(self) -> str:
        """The report as a plain-text table at most 100 characters wide, with what is known of
        the lower bound and the kinks below it."""
        if not self.sets:
            lines = ["no critical points in the box (on this slice, if it is one)"]
        else:
            lines = [format_table(*self.rows())]
        if self.bounded_below is False:
            lines.append("L is unbounded below (it runs to -∞ along a ray): no minimum is global")
        elif self.global_min_loss is None and any(s.kind == "local_min" for s in self.sets):
            lines.append("no lower bound of L is known: minima are reported as local")
        if self.non_smooth:
            lines.append(f"non-smooth: ∇L jumps across the kinks of {', '.join(self.non_smooth)}")
        if self.certificate is not None:
            lines.append(self.certificate.text())
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        header, rows = self.rows()
        cells = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows
        )
        notes = "".join(
            f"<p>{html.escape(line)}</p>" for line in self.table().split("\n")[len(rows) + 2 :]
        )
        caption = html.escape(f"critical sets of {self.title or 'the loss'}")
        return f"<table><caption>{caption}</caption><tr>{cells}</tr>{body}</table>{notes}"

    def text(self) -> str:
        """What the sets are of, then :meth:`table`."""
        return f"critical sets of {self.title or 'the loss'}\n{self.table()}"

    def arrays(self) -> dict[str, np.ndarray]:
        """Each set's points, shape ``(n, dim)``, as ``critical_<i>_<kind>`` in the sets'
        order."""
        return {f"critical_{i}_{s.kind}": s.points for i, s in enumerate(self.sets)}

    def figure(self) -> Any:
        """A new matplotlib figure of the sets in the plane of the first two parameters (within
        the searched box), or ``None`` for a loss of one parameter."""
        if len(self.param_names) < 2:
            return None
        from ._draw import critical_figure

        return critical_figure(self)

    def metadata(self) -> dict[str, Any]:
        """JSON-ready report: the sets (with their points) and what is known of the bound and
        the smoothness (and the certificate, if any)."""
        return {
            "parameters": list(self.param_names),
            "critical_sets": [s.to_dict() for s in self.sets],
            "bounded_below": self.bounded_below,
            "global_min_loss": self.global_min_loss,
            "non_smooth": list(self.non_smooth),
            **({} if self.certificate is None else {"certificate": self.certificate.to_dict()}),
        }


def critical_sets(
    landscape: Landscape,
    *,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    fixed: Mapping[str, float] | None = None,
    samples: int = 41,
    starts: int = 256,
    seed: int = 0,
    certify: bool = False,
) -> CriticalSets:
    """The critical sets of ``L`` inside the bounds, each classified.

    Args:
        landscape: the loss (e.g. a model bound to its hyperparameters).
        bounds: ``{name: (lo, hi)}`` overriding the default range of some parameters.
        fixed: ``{name: value}``: only the critical points on this slice of parameter space
            (what a portrait of a slice draws).  Closed-form sets are sampled on the slice; the
            numerical search, whose solutions almost never lie on a slice, is skipped.
        samples: sample points per free dimension on each closed-form set (fewer on sets of
            dimension 2 and more, so that a set has at most ``_pieces.MAX_SAMPLES`` points).
        starts: starting points of the numerical search (uniform in the bounds, seeded); no
            search where the landscape proves its closed forms complete
            (:attr:`~gradflow.Landscape.critical_sets_complete`).
        seed: seed of the starting points.
        certify: prove by interval arithmetic that no critical point is missed
            (:func:`gradflow.certify`); a certified point the search missed is added (named
            ``"certified"``).  Not on a slice.

    Returns:
        The sets ordered by kind (global minima first) and loss, with what is known of the
        lower bound (and the certificate).  Their kinds come from the Hessian in the whole parameter space, also on a
        slice.

    Raises:
        GradflowError: a bound with ``lo ≥ hi``, an unknown name, a non-finite fixed value, or a
            declared set on which ``∇L ≠ 0``; with ``certify``, a loss not known in SymPy, a
            slice, or a reported critical point where the certificate proves ``∇L ≠ 0``.
    """
    box = search_box(landscape, bounds, fixed)
    global_loss = landscape.global_min_loss
    sampled = [
        (piece, sample_piece(landscape, piece, box, samples)) for piece in landscape.closed_forms
    ]
    searched = not fixed and not landscape.critical_sets_complete
    found = _numerical_solutions(landscape, box, starts if searched else 0, seed)
    on_closed_form = np.zeros(len(found), dtype=bool)
    for piece, _ in sampled:
        on_closed_form |= on_piece(landscape, piece, found)
    result: list[CriticalSet] = []
    for piece, points in sampled:
        classes = classify_points(landscape, points.points, global_loss)
        result += _group(landscape, piece, points, classes, box)
    result += _numerical_sets(landscape, found[~on_closed_form], global_loss, box)
    certificate = certify_box(landscape, box) if certify else None
    if certificate is not None:
        result = _with_certificate(landscape, result, certificate, box)
    return CriticalSets(
        sets=tuple(_joined(landscape, _without_repeats(_merge(result, box.mean(axis=1))))),
        box=box,
        global_min_loss=global_loss,
        bounded_below=bounded_below(landscape, box),
        non_smooth=landscape.nonsmooth_terms,
        param_names=landscape.param_names,
        title=landscape.title,
        unit=landscape.loss_unit,
        certificate=certificate,
    )


def _with_certificate(
    landscape: Landscape, sets: list[CriticalSet], certificate: Certificate, box: np.ndarray
) -> list[CriticalSet]:
    """The sets with the certificate's word: an isolated set inside a certified point's box
    takes its kind where the certificate proves the Morse index (a saddle whose loss is within
    the global tolerance of the lower bound is no minimum), and the certified points no set
    holds are added as sets named ``"certified"`` (classified).

    Raises:
        GradflowError: a numerical point, or a set's sample, where the certificate proves that
            ``∇L ≠ 0`` (outside every certified, explained and unresolved box).
    """
    reported = [s.points for s in sets if s.name == "numerical"] + [s.sample[None] for s in sets]
    points = np.concatenate([np.zeros((0, landscape.dim)), *reported])
    wrong = ~certificate.accounts_for(points)
    if wrong.any():
        raise GradflowError(
            f"the search reports a critical point at {format_point(points[wrong][0], 10)} "
            "where interval arithmetic proves ∇L ≠ 0"
        )
    proven = [c for c in certificate.isolated if c.morse_index is not None]
    checked = []
    for s in sets:
        holders = [c for c in proven if certificate.holds(c, s.points)] if not s.dimension else []
        checked.append(dataclasses.replace(s, kind=holders[0].kind) if holders else s)
    added = []
    for point in certificate.missing(np.concatenate([s.points for s in sets] or [points])):
        classes = classify_points(landscape, point.point[None], landscape.global_min_loss)
        made = _make_set(
            landscape,
            "certified",
            None,
            point.point[None],
            classes,
            np.zeros(1, int),
            0,
            np.zeros(1, int),
            box,
        )
        added.append(dataclasses.replace(made, kind=point.kind, loss=point.loss))
    return checked + added


def global_min_level(sets: Sequence[CriticalSet]) -> float | None:
    """The loss of the global minimum among ``sets``, or ``None`` if none is global."""
    losses = [s.loss for s in sets if s.kind == "global_min"]
    return min(losses) if losses else None


def decision_level(sets: Sequence[CriticalSet]) -> float | None:
    """The lowest loss of a non-global critical set, or ``None`` if all are global.

    A trajectory whose loss falls below it can only end at a global minimum, where the
    landscape proves that no other critical point exists outside the sets found and that the
    flow converges below this level (:attr:`gradflow.Landscape.sublevel_shortcut`).
    """
    losses = [s.loss for s in sets if s.kind != "global_min"]
    return min(losses) if losses else None


def search_box(
    landscape: Landscape,
    overrides: Mapping[str, tuple[float, float]] | None,
    fixed: Mapping[str, float] | None = None,
) -> np.ndarray:
    """Bounds as an array of shape ``(dim, 2)``; a fixed parameter has ``lo == hi``.

    Raises:
        GradflowError: an unknown name, ``lo ≥ hi``, or a fixed value that is not finite.
    """
    overrides = dict(overrides or {})
    for name in overrides:
        landscape.index(name)
    box = np.array(
        [overrides.get(n, landscape.bound(n)) for n in landscape.param_names], dtype=float
    )
    for name, (lo, hi) in zip(landscape.param_names, box):
        if not lo < hi:
            raise GradflowError(f"box: {name} min {lo:g} must be below {name} max {hi:g}")
    for name, value in (fixed or {}).items():
        if not np.isfinite(float(value)):
            raise GradflowError(f"fixed {name} = {value!r} must be a finite number")
        box[landscape.index(name)] = float(value)
    return box


def bounded_below(landscape: Landscape, box: np.ndarray) -> bool | None:
    """``True`` if a lower bound of ``L`` is proven; ``False`` if ``L`` visibly runs to ``-∞``.

    The loss is evaluated along rays from the centre of ``box`` (the ± coordinate axes and
    :data:`RAY_DIRECTIONS` seeded random directions; pinned coordinates stay pinned) at radii
    doubling from the box's half-diagonal to a million times it.  A ray on which ``L`` keeps
    falling over the last five radii and ends below :data:`UNBOUNDED_LOSS` shows it.

    Returns:
        ``True``, ``False``, or ``None`` when neither is shown.
    """
    if landscape.global_min_loss is not None:
        return True
    free = box[:, 0] < box[:, 1]
    dim = landscape.dim
    directions = np.concatenate(
        [np.eye(dim), -np.eye(dim), np.random.default_rng(0).standard_normal((RAY_DIRECTIONS, dim))]
    )
    directions[:, ~free] = 0.0
    norms = np.linalg.norm(directions, axis=1)
    directions = directions[norms > 0] / norms[norms > 0, None]
    center = box.mean(axis=1)
    radius = 0.5 * float(np.linalg.norm(box[:, 1] - box[:, 0]))
    radii = radius * 2.0 ** np.arange(21)
    points = center + radii[None, :, None] * directions[:, None, :]
    with np.errstate(all="ignore"):
        tail = landscape.loss(points)[:, -6:]
        falling = np.all(np.diff(tail, axis=1) < 0, axis=1) & (
            tail[:, -1] < UNBOUNDED_LOSS * loss_scales(landscape).loss
        )
    return False if bool(np.any(falling)) else None


def _numerical_solutions(
    landscape: Landscape, box: np.ndarray, starts: int, seed: int
) -> np.ndarray:
    """Critical points found by Levenberg–Marquardt (optimistix) on ``∇L = 0``, all starts at
    once.

    The ``starts`` initial points are uniform in ``box`` (seeded).  Returns the solutions inside
    ``box`` with ``‖∇L‖₂ ≤`` :func:`~gradflow._pieces.gradient_tol` and a short Newton step
    (:func:`_near_a_zero`), shape ``(n, dim)``.  Each start's residual is ``∇L / ‖∇L(θ0)‖``
    (the gradient scale ``g`` where ``∇L(θ0)`` vanishes), so the search does not depend on the
    loss's scale, nor on how many orders of magnitude ``‖∇L‖`` spans over the box.
    """
    if starts <= 0:
        return np.zeros((0, landscape.dim))
    rng = np.random.default_rng(seed)
    y0 = rng.uniform(box[:, 0], box[:, 1], size=(starts, landscape.dim))
    with np.errstate(all="ignore"):
        scale = np.linalg.norm(landscape.grad(y0), axis=1)
    usable = np.isfinite(scale) & (scale > 0)
    scale = np.where(usable, scale, loss_scales(landscape).gradient)
    ys = np.asarray(_batched_root(landscape.field)(jnp.asarray(y0), landscape.args, scale))
    with np.errstate(all="ignore"):
        ok = np.all(np.isfinite(ys), axis=1) & np.all((ys >= box[:, 0]) & (ys <= box[:, 1]), axis=1)
        ys = ys[ok]
        if not len(ys):
            return ys
        small = np.linalg.norm(landscape.grad(ys), axis=1) <= gradient_tol(landscape)
        return ys[small & _near_a_zero(landscape, ys)]


def _near_a_zero(landscape: Landscape, ys: np.ndarray) -> np.ndarray:
    """Whether the Newton step ``H⁺∇L`` at each of ``ys`` (shape ``(n, dim)``) is at most
    :data:`NEWTON_STEP` times the landscape's length scale, shape ``(n,)``.

    A gradient small against the loss's gradient scale ``g`` is not enough where ``L`` spans many
    orders of magnitude over its ranges (``exp((x² + y² − 1)²)``: ``g`` is set by the far corners,
    where ``‖∇L‖`` is astronomically large, so a point far from the circle would pass).  The
    Newton step is the distance to the nearest zero of ``∇L`` to first order, unchanged by the
    loss's scale; the pseudo-inverse keeps points of a non-isolated set (``∇L`` in the range of
    ``H``).  Where the Hessian is not finite the step is not known and the point is kept.
    """
    with np.errstate(all="ignore"):
        hessians = landscape.hessian(ys)
        finite = np.all(np.isfinite(hessians), axis=(1, 2))
        steps = np.full(len(ys), np.nan)
        if finite.any():
            pinv = np.linalg.pinv(hessians[finite], rcond=1e-12, hermitian=True)
            grads = landscape.grad(ys[finite])
            steps[finite] = np.linalg.norm(np.einsum("nij,nj->ni", pinv, grads), axis=1)
    return ~finite | (steps <= NEWTON_STEP * loss_scales(landscape).length)


@functools.cache
def _batched_root(field: GradientField) -> Callable[[jax.Array, Any, jax.Array], jax.Array]:
    """Jitted, vmapped Levenberg–Marquardt on the residual ``∇L(θ, args) / scale`` from many
    starts (one scale per start); compiled once per field (hyperparameters are arguments, so a
    sweep compiles once)."""
    import optimistix as optx

    solver = optx.LevenbergMarquardt(rtol=ROOT_TOL, atol=ROOT_TOL)

    def residual(y: jax.Array, a: tuple[Any, jax.Array]) -> jax.Array:
        return field.grad(y, a[0]) / a[1]

    def one(y0: jax.Array, args: Any, scale: jax.Array) -> jax.Array:
        solution = optx.least_squares(
            residual, solver, y0, args=(args, scale), max_steps=ROOT_STEPS, throw=False
        )
        return solution.value

    return jax.jit(jax.vmap(one, in_axes=(0, None, 0)))


def _group(
    landscape: Landscape,
    piece: ClosedForm,
    sampled: SampledPiece,
    classes: Classification,
    box: np.ndarray,
) -> list[CriticalSet]:
    """The :class:`CriticalSet` s of a closed-form piece: one per kind, and one per more
    degenerate stratum of a kind.

    The points of one kind are described at their generic points (:func:`_strata`); points of
    that kind whose Hessian has a larger nullity (the origin of ``(1 − abc)²`` on each axis, where
    the whole Hessian vanishes) are a set of their own, named after the piece with their Morse
    index and nullity.  Each is split into connected components along the piece's sampling grid
    (:meth:`~gradflow._pieces.SampledPiece.components`, joined where a finer grid shows them one:
    :func:`_joined_finer`); for a curve, each run of neighbouring samples is one polyline.
    The sample point of the generic set is the point of the piece nearest the box centre
    (:func:`_nearest_on_piece`).
    """
    out = []
    for kind in KINDS:
        idx = np.flatnonzero(classes.kinds == kind)
        if not idx.size:
            continue
        for rows, stratum in _strata(classes, idx):
            generic = stratum is None
            labels = sampled.components(rows)
            if generic:
                labels = _joined_finer(sampled, rows, labels)
            dimension = (
                sampled.dimension
                if generic
                else _set_dimension(sampled.points[rows], classes.nullity[rows])
            )
            dimension = dimension if rows.size > 1 else 0
            name = piece.name if generic else f"{piece.name} ({stratum})"
            equation = (
                piece.equation
                if generic or piece.equation is None
                else f"{piece.equation} ({stratum})"
            )
            made = _make_set(
                landscape, name, equation, sampled.points, classes, rows, dimension, labels, box
            )
            if generic:
                nullity = int(classes.nullity[rows].max())
                sample = _nearest_on_piece(landscape, piece, made, box, kind, nullity)
                made = dataclasses.replace(made, sample=sample)
            if dimension == 1 and sampled.dimension == 1:
                starts = np.flatnonzero(np.diff(sampled.order[rows]) != 1) + 1
                made = dataclasses.replace(made, segments=(0, *starts.tolist()))
            out.append(made)
    return out


def _strata(classes: Classification, idx: np.ndarray) -> list[tuple[np.ndarray, str | None]]:
    """The points ``idx`` of one kind split by how degenerate they are.

    The generic points are those whose Hessian nullity is the most common one (ties: the
    smallest); they come first, with stratum ``None``.  The others with a larger nullity follow,
    one group per Morse index and nullity, each with its label (``"index 0, nullity 3"``).
    Points with a smaller nullity than the generic one (none on a manifold of critical points
    sampled on itself) stay with the generic points.
    """
    nullity, index = classes.nullity[idx], classes.morse_index[idx]
    values, counts = np.unique(nullity, return_counts=True)
    typical = int(values[int(np.argmax(counts))])
    out: list[tuple[np.ndarray, str | None]] = [(idx[nullity <= typical], None)]
    special = nullity > typical
    for i, n in sorted({(int(i), int(n)) for i, n in zip(index[special], nullity[special])}):
        rows = idx[special & (index == i) & (nullity == n)]
        out.append((rows, f"index {i}, nullity {n}"))
    return out


def _joined_finer(sampled: SampledPiece, rows: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``labels`` (of ``sampled.points[rows]``) with the components that a finer grid shows to be
    one (:attr:`~gradflow._pieces.SampledPiece.linked`) given one label."""
    if sampled.linked is None:
        return labels
    _, coarse = np.unique(labels, return_inverse=True)
    _, fine = np.unique(sampled.linked[rows], return_inverse=True)
    n = int(coarse.max()) + 1
    graph = coo_matrix(
        (np.ones(len(rows)), (coarse.reshape(-1), n + fine.reshape(-1))),
        shape=(n + int(fine.max()) + 1,) * 2,
    )
    joined = connected_components(graph, directed=False)[1][:n]
    return np.unique(joined[coarse.reshape(-1)], return_inverse=True)[1].reshape(-1)


def _make_set(
    landscape: Landscape,
    name: str,
    equation: str | None,
    points: np.ndarray,
    classes: Classification,
    idx: np.ndarray,
    dimension: int,
    labels: np.ndarray,
    box: np.ndarray,
) -> CriticalSet:
    """The set of ``points[idx]`` with component ``labels``, described at a generic point: the
    middle one of the points with the most common Morse index and nullity (on the axis
    ``x = y = 0`` of ``(1 - xyz)²`` every point but the origin has index 1 and nullity 1; the
    origin, where the Hessian vanishes, does not describe the set).  Its sample is its point
    nearest ``box``'s centre."""
    signature = np.stack([classes.morse_index[idx], classes.nullity[idx]], axis=1)
    _, inverse, counts = np.unique(signature, axis=0, return_inverse=True, return_counts=True)
    generic = idx[inverse.reshape(-1) == int(np.argmax(counts))]
    rep = generic[generic.size // 2]
    center = box.mean(axis=1)
    nearest = idx[int(np.argmin(np.linalg.norm(points[idx] - center, axis=1)))]
    return CriticalSet(
        name=name,
        kind=str(classes.kinds[rep]),
        dimension=dimension,
        loss=float(np.median(landscape.loss(points[idx]))),
        points=points[idx],
        equation=equation,
        hessian_eigenvalues=classes.eigenvalues[rep],
        morse_index=int(classes.morse_index[rep]),
        nullity=int(classes.nullity[rep]),
        hessian_method=str(classes.hessian_method[rep]),
        components=np.unique(labels, return_inverse=True)[1].reshape(-1),
        sample=points[nearest],
    )


def _nearest_on_piece(
    landscape: Landscape,
    piece: ClosedForm,
    made: CriticalSet,
    box: np.ndarray,
    kind: str,
    nullity: int,
) -> np.ndarray:
    """The point of a closed-form piece nearest the centre of ``box``, of the set's kind and
    with a Hessian nullity at most ``nullity`` (a generic point of the set, not a more
    degenerate one such as the origin on an axis of ``(1 − abc)²``).

    The start is the nearest point of that kind whose free coordinates lie on a lattice fixed by
    the landscape's default ranges (:func:`_lattice`), whatever box was searched; Nelder–Mead then
    moves the varying free coordinates to minimise the distance to the centre, and the result is
    kept where it is on the piece, inside the box and of the same kind.  So every report prints
    the same point, however densely and in however wide a box the set was sampled.
    """
    center = box.mean(axis=1)
    coarse = _lattice(landscape, piece, box)
    if len(coarse):
        classes = classify_points(landscape, coarse, landscape.global_min_loss)
        coarse = coarse[(classes.kinds == kind) & (classes.nullity <= nullity)]
    if not len(coarse):
        return made.sample
    start = coarse[int(np.argmin(np.linalg.norm(coarse - center, axis=1)))]
    free = list(piece.free)
    varying = [j for j, i in enumerate(free) if box[i, 0] < box[i, 1]]
    if not varying or any(box[i, 0] == box[i, 1] for i in piece.dependent):
        return start
    base = start[free].copy()

    def point(f: np.ndarray) -> np.ndarray | None:
        coords = base.copy()
        coords[varying] = f
        full, ok = piece.complete(coords[None])
        inside = np.all((full[0] >= box[:, 0]) & (full[0] <= box[:, 1]))
        return full[0] if ok[0] and np.all(np.isfinite(full[0])) and inside else None

    def distance(f: np.ndarray) -> float:
        p = point(f)
        return np.inf if p is None else float(np.sum((p - center) ** 2))

    with np.errstate(all="ignore"):
        result = minimize(
            distance,
            base[varying],
            method="Nelder-Mead",
            options={"xatol": 1e-12, "fatol": 1e-16, "maxiter": 4000},
        )
    best = point(result.x)
    if best is None or result.fun > np.sum((start - center) ** 2):
        return start
    classes = classify_points(landscape, best[None], landscape.global_min_loss)
    same = classes.kinds[0] == kind and classes.nullity[0] <= nullity
    return best if same else start


def _lattice(landscape: Landscape, piece: ClosedForm, box: np.ndarray) -> np.ndarray:
    """Points of a closed-form piece inside ``box`` whose free coordinates are multiples of a
    round step (1, 2 or 5 times a power of ten) near 1/40 of each parameter's default range.

    A pinned free coordinate keeps its value; a piece with a pinned dependent coordinate (a level
    set on a slice) gives no lattice.  Returns shape ``(n, dim)``.
    """
    if any(box[i, 0] == box[i, 1] for i in piece.dependent):
        return np.zeros((0, landscape.dim))
    axes = []
    for i in piece.free:
        lo, hi = box[i]
        if lo == hi:
            axes.append(np.array([lo]))
            continue
        low, high = landscape.bound(landscape.param_names[i])
        step = _round_step((high - low) / (SAMPLE_GRID - 1))
        while (hi - lo) / step > MAX_LATTICE:
            step = _round_step(2.01 * step)
        axes.append(step * np.arange(np.ceil(lo / step), np.floor(hi / step) + 1))
    mesh = np.meshgrid(*axes, indexing="ij")
    free = np.stack([m.ravel() for m in mesh], -1) if axes else np.zeros((1, 0))
    points, ok = piece.complete(free)
    ok &= np.all(np.isfinite(points), axis=1)
    ok &= np.all((points >= box[:, 0]) & (points <= box[:, 1]), axis=1)
    return points[ok]


def _round_step(width: float) -> float:
    """The largest of 1, 2, 5 times a power of ten that is at most ``width``."""
    power = 10.0 ** np.floor(np.log10(width))
    return float(max(m * power for m in (1, 2, 5) if m * power <= width * (1 + 1e-12)))


def _numerical_sets(
    landscape: Landscape, points: np.ndarray, global_loss: float | None, box: np.ndarray
) -> list[CriticalSet]:
    """Group numerical solutions: same kind, single-linkage clusters (:data:`CLUSTER_LINK`).

    A cluster no wider than :data:`POINT_CLUSTER` of the box diagonal is one isolated critical
    point, reported at its member of least ``‖∇L‖`` (near a degenerate point, where ``∇L``
    vanishes to higher order, the root finder's solutions scatter around it); otherwise the
    cluster's dimension is what its geometry shows (:func:`local_dimension`), at most the
    Hessian's nullity.
    """
    if not len(points):
        return []
    classes = classify_points(landscape, points, global_loss)
    diagonal = float(np.linalg.norm(box[:, 1] - box[:, 0]))
    gradient = np.linalg.norm(landscape.grad(points), axis=1)
    out = []
    for kind in KINDS:
        idx = np.flatnonzero(classes.kinds == kind)
        if not idx.size:
            continue
        labels = (
            fcluster(linkage(pdist(points[idx]), "single"), CLUSTER_LINK * diagonal, "distance")
            if idx.size > 1
            else np.ones(1, dtype=int)
        )
        labels = _joined_through_critical_points(landscape, points[idx], labels)
        for label in np.unique(labels):
            members = idx[labels == label]
            single = np.zeros(members.size, dtype=int)
            if np.ptp(points[members], axis=0).max() <= max(
                100 * ON_SET_TOL, POINT_CLUSTER * diagonal
            ):
                best = np.array([members[np.argmin(gradient[members])]])
                out.append(
                    _make_set(
                        landscape, "numerical", None, points, classes, best, 0, single[:1], box
                    )
                )
            else:
                dimension = _set_dimension(points[members], classes.nullity[members])
                out.append(
                    _make_set(
                        landscape,
                        "numerical",
                        None,
                        points,
                        classes,
                        members,
                        dimension,
                        single,
                        box,
                    )
                )
    return out


def _joined_through_critical_points(
    landscape: Landscape, points: np.ndarray, labels: np.ndarray
) -> np.ndarray:
    """Merge clusters whose nearest two points are joined by a segment of critical points.

    Distance alone splits a set sampled unevenly (a disk of critical points that a root finder
    fills mostly on its rim); a straight segment with ``‖∇L‖ ≤`` :func:`gradient_tol` all along
    shows that two clusters belong to one connected set.
    """
    labels = np.asarray(labels).copy()
    clusters = list(np.unique(labels))
    tol = gradient_tol(landscape)
    s = np.linspace(0.0, 1.0, SEGMENT_SAMPLES)[:, None]
    for a, b in itertools.combinations(clusters, 2):
        pa, pb = points[labels == a], points[labels == b]
        if not len(pa) or not len(pb):
            continue
        distance, nearest = cKDTree(pb).query(pa)
        i = int(np.argmin(distance))
        segment = pa[i] + s * (pb[nearest[i]] - pa[i])
        with np.errstate(all="ignore"):
            if np.all(np.linalg.norm(landscape.grad(segment), axis=1) <= tol):
                labels[labels == b] = a
    return labels


def local_dimension(points: np.ndarray, neighbours: int = 8) -> np.ndarray:
    """The dimension of the manifold a point cloud samples, seen from each point: the number of
    principal directions of its nearest neighbours carrying at least 5 % of their spread.

    Args:
        points: shape ``(n, dim)``, distinct.
        neighbours: how many nearest neighbours make a point's neighbourhood.

    Returns:
        Shape ``(n,)``; zeros when there are fewer than three points.
    """
    n = len(points)
    k = min(neighbours, n - 1)
    if k < 2:
        return np.zeros(n, dtype=int)
    _, nearest = cKDTree(points).query(points, k=k + 1)
    local = points[nearest] - points[nearest].mean(axis=1, keepdims=True)
    spread = np.linalg.svd(local, compute_uv=False)
    return (spread > 0.05 * spread[:, :1]).sum(axis=1)


def _set_dimension(points: np.ndarray, nullity: np.ndarray) -> int:
    """The dimension of a cluster of critical points, from its geometry.

    Each distinct point contributes the smaller of its local dimension (:func:`local_dimension`)
    and its Hessian nullity (a set of critical points is flat along itself, so its tangent
    directions are zero eigenvalues).  The set has dimension ``d`` when at least
    :data:`DIMENSION_SHARE` of its points (and three) see ``d`` dimensions: a disk of critical
    points sampled mostly on its rim by a root finder is still a disk.
    """
    _, first = np.unique(np.round(points / ON_SET_TOL), axis=0, return_index=True)
    seen = np.minimum(local_dimension(points[first]), nullity[first])
    enough = max(3, DIMENSION_SHARE * len(first))
    dims = [d for d in range(1, points.shape[1] + 1) if np.sum(seen >= d) >= enough]
    return max(dims, default=0)


def _merge(sets: list[CriticalSet], center: np.ndarray) -> list[CriticalSet]:
    """Merge sets with the same name and kind (e.g. the two branches of Γ*); order by kind, loss.

    Numerical clusters stay separate; the components of merged sets keep distinct labels.
    """
    merged: dict[tuple[str, str], CriticalSet] = {}
    for s in sets:
        key = (s.name, s.kind)
        if key in merged and s.name != "numerical":
            m = merged[key]
            merged[key] = dataclasses.replace(
                m,
                dimension=max(m.dimension, s.dimension),
                points=np.concatenate([m.points, s.points]),
                components=np.concatenate([m.components, s.components + m.n_components]),
                sample=min((m.sample, s.sample), key=lambda p: float(np.sum((p - center) ** 2))),
                segments=(*m.segments, *(len(m.points) + i for i in s.segments)),
            )
        else:
            merged[key if s.name != "numerical" else (f"numerical{len(merged)}", s.kind)] = s
    return sorted(merged.values(), key=lambda s: (KINDS.index(s.kind), s.loss))


SAME_LOSS = 1e-9
"""Two losses are equal when they differ by at most this times the larger of the loss scale and
their sizes."""


def same_loss(a: float, b: float, scale: float) -> bool:
    """Whether two losses are equal within :data:`SAME_LOSS` (relative to ``scale``)."""
    return abs(a - b) <= SAME_LOSS * max(scale, abs(a), abs(b))


def runs_between(
    landscape: Landscape,
    a: np.ndarray,
    b: np.ndarray,
    gap: float,
    loss: float,
) -> bool:
    """Whether the critical point nearest the midpoint of ``a`` and ``b`` lies within ``gap`` of
    both and has loss ``loss``."""
    with np.errstate(all="ignore"):
        found = root(
            landscape.point_grad,
            0.5 * (a + b),
            jac=lambda y: landscape.hessian(y),
            method="lm",
            options={"xtol": 1e-14, "ftol": 1e-14},
        ).x
        if not np.all(np.isfinite(found)):
            return False
        critical = np.linalg.norm(landscape.grad(found)) <= gradient_tol(landscape)
        near = max(np.linalg.norm(found - a), np.linalg.norm(found - b)) <= gap
        same = same_loss(float(landscape.loss(found)), loss, loss_scales(landscape).loss)
        return bool(critical and near and same)


def _joined(landscape: Landscape, sets: list[CriticalSet]) -> list[CriticalSet]:
    """The sets with two sets of one kind, loss and dimension (≥ 1) that run into each other
    through a regular point of the critical set listed as one.

    ``sympy.solve`` returns the circle ``x² + y² = 1`` as the two graphs ``y = ±√(1 - x²)``;
    the critical points found along the segment between their nearest samples run along the
    set at its loss through regular points (Hessian nullity the sets' dimension,
    :func:`joined_on_set`): one set ``y = -√(1 - x²) ∪ y = √(1 - x²)``, its
    components joined.  Sets that only cross, such as two coordinate axes at the origin
    (where the Hessian has a larger nullity), stay apart.
    """
    scale = loss_scales(landscape).loss
    out: list[CriticalSet] = []
    for s in sets:
        for k, m in enumerate(out):
            if not (
                m.kind == s.kind
                and m.dimension == s.dimension >= 1
                and same_loss(m.loss, s.loss, scale)
            ):
                continue
            distance, nearest = cKDTree(m.points).query(s.points)
            j = int(np.argmin(distance))
            a, b = m.points[nearest[j]], s.points[j]
            if joined_on_set(landscape, a, b, s.loss, s.dimension):
                out[k] = _union(m, s, int(nearest[j]), j)
                break
        else:
            out.append(s)
    return out


def _union(m: CriticalSet, s: CriticalSet, i: int, j: int) -> CriticalSet:
    """One set of the points of ``m`` and ``s``, the component of ``m.points[i]`` and that of
    ``s.points[j]`` (where the two run into each other) one component."""
    labels = np.concatenate([m.components, s.components + m.n_components])
    labels[labels == s.components[j] + m.n_components] = m.components[i]
    equation = None if m.equation is None or s.equation is None else f"{m.equation} ∪ {s.equation}"
    return dataclasses.replace(
        m,
        name=f"{m.name} ∪ {s.name}",
        equation=equation,
        points=np.concatenate([m.points, s.points]),
        components=np.unique(labels, return_inverse=True)[1].reshape(-1),
        segments=(*m.segments, *(len(m.points) + k for k in s.segments)),
    )


JOIN_STEPS = 32
"""Points on the segment between two critical points at which :func:`joined_on_set` finds the
critical point nearest."""


def joined_on_set(
    landscape: Landscape,
    a: np.ndarray,
    b: np.ndarray,
    loss: float,
    regular: int | None = None,
) -> bool:
    """Whether ``a`` and ``b`` lie on one connected piece of the critical set of loss ``loss``.

    From :data:`JOIN_STEPS` + 1 evenly spaced points of the segment ``ab`` the critical point
    nearest is found (Levenberg–Marquardt on ``∇L = 0``); the two are joined when every one of
    them is critical with loss ``loss`` and consecutive ones lie within four steps of each other
    (a path along the set shadows the segment).  Between two components of ``abc = 1`` the
    segment crosses a coordinate plane, where the nearest critical point is an axis (loss 1) or
    jumps to the other sheet.  With ``regular``, every point found must also have Hessian
    nullity ``regular`` (the path runs through regular points of a manifold of that dimension,
    not through a crossing such as the origin where two coordinate axes meet).
    """
    step = float(np.linalg.norm(b - a)) / JOIN_STEPS
    scale = loss_scales(landscape).loss
    tol = gradient_tol(landscape)
    previous, path = a, []
    with np.errstate(all="ignore"):
        for t in np.linspace(0.0, 1.0, JOIN_STEPS + 1)[1:]:
            found = root(
                landscape.point_grad,
                a + t * (b - a),
                jac=lambda y: landscape.hessian(y),
                method="lm",
                options={"xtol": 1e-14, "ftol": 1e-14},
            ).x
            if not (
                np.all(np.isfinite(found))
                and np.linalg.norm(landscape.grad(found)) <= tol
                and same_loss(float(landscape.loss(found)), loss, scale)
                and np.linalg.norm(found - previous) <= 4 * step + 1e-9
            ):
                return False
            previous = found
            path.append(found)
    if regular is None:
        return True
    nullity = classify_points(landscape, np.array(path), None).nullity
    return bool(np.all(nullity == regular))


def _without_repeats(sets: list[CriticalSet]) -> list[CriticalSet]:
    """The sets with every component that repeats another one left out.

    ``sympy.solve`` may return one set several times (``x = 0`` and ``x = ±√a`` coincide at
    ``a = 0``; ``x = 0`` and ``x = 0.0``): a component whose every point lies within
    :data:`~gradflow._pieces.ON_SET_TOL` of the points of an earlier component of the same kind
    (in this set or an earlier one) is the same set, listed once.  A set left with no component
    is dropped.
    """
    kept: list[CriticalSet] = []
    for s in sets:
        keep = np.ones(len(s.points), dtype=bool)
        for label in range(s.n_components):
            mine = s.components == label
            earlier = [k.points for k in kept if k.kind == s.kind]
            earlier.append(s.points[~mine & keep & (s.components < label)])
            others = np.concatenate(earlier)
            if len(others):
                distance, _ = cKDTree(others).query(s.points[mine])
                keep[mine] = not np.all(distance <= ON_SET_TOL)
        if keep.all():
            kept.append(s)
        elif keep.any():
            kept.append(_restricted(s, keep))
    return kept


def _restricted(s: CriticalSet, keep: np.ndarray) -> CriticalSet:
    """The set ``s`` with only the points ``keep`` (components renumbered, polylines cut); its
    sample stays where the sample nearest it is kept."""
    before = np.concatenate([[0], np.cumsum(keep)])
    starts = sorted({int(before[i]) for i in s.segments} - {int(keep.sum())})
    points = s.points[keep]
    sample = s.sample
    if not keep[int(np.argmin(np.linalg.norm(s.points - s.sample, axis=1)))]:
        sample = points[int(np.argmin(np.linalg.norm(points - s.sample, axis=1)))]
    return dataclasses.replace(
        s,
        points=points,
        components=np.unique(s.components[keep], return_inverse=True)[1].reshape(-1),
        sample=sample,
        segments=tuple(starts) if s.segments else (),
        dimension=s.dimension if len(points) > 1 else 0,
    )
