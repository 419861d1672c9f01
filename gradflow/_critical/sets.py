"""Critical sets as results: :class:`CriticalSet` (one set, its points, kind and components, made
from classified points by :func:`make_set`) and :class:`CriticalSets` (the classified sets of a
loss in a box, with their table, arrays, metadata and picture), and the loss levels read off
them.
"""

from __future__ import annotations

import dataclasses
import html
import textwrap
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np
from scipy.spatial import cKDTree

from .._evidence import Evidence
from .._landscape.base import Landscape
from .._outcome import Kind
from .._output.text import TABLE_WIDTH, format_point, format_table
from .certificate import Certificate
from .classify import Classification
from .coercive import global_bound
from .pieces import (
    ON_SET_TOL,
)

__all__ = [
    "CriticalSet",
    "CriticalSets",
    "DIMENSION_SHARE",
    "decided",
    "decision_level",
    "global_min_level",
    "local_dimension",
    "make_set",
    "set_dimension",
]
DIMENSION_SHARE = 0.05
"""Share of a cluster's distinct points that must see ``d`` dimensions for it to have them."""


@dataclass(frozen=True)
class CriticalSet:
    """A piece of the critical set of one kind (possibly several connected components).

    Attributes:
        name: the closed-form set it comes from (e.g. ``"Γ*"``), ``"sympy.solve: …"`` with the
            solution, or ``"numerical"``.
        kind: its :class:`~gradflow.Kind` (a name, ``"saddle"``, is converted to it).
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
        samples: representative points, shape ``(k, dim)``: first the set's :attr:`sample`,
            then, for closed-form sets, the point nearest the centre of the searched box of each
            component that holds no earlier one (found on the set itself in the same way), so
            the two branches of a set symmetric about the centre have mirror-image points.
        segments: for a curve known in closed form, the offsets in ``points`` at which each
            polyline starts (samples in order along the curve); empty for point clouds.
        evidence: what backs its kind (:class:`~gradflow.Evidence`): ``proven`` where interval
            arithmetic proves a zero and the Hessian's inertia there, else ``numerical`` with
            the Hessian or the probes that decided it.
    """

    name: str
    kind: Kind
    dimension: int
    loss: float
    points: np.ndarray
    equation: str | None
    hessian_eigenvalues: np.ndarray
    morse_index: int
    nullity: int
    hessian_method: str
    components: np.ndarray
    samples: np.ndarray
    segments: tuple[int, ...] = ()
    evidence: Evidence | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", Kind(self.kind))

    @property
    def sample(self) -> np.ndarray:
        """The set's point nearest the centre of the searched box, shape ``(dim,)`` (for a
        closed-form set, found on the set itself, so it does not depend on how densely the set
        was sampled): the one point every report prints."""
        return self.samples[0]

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

    def metadata(self) -> dict[str, Any]:
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
            **({} if self.evidence is None else self.evidence.metadata()),
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
        bound_reason: how that bound is proven, or why none is (one line; ``""`` if not
            asked).
        bounded_below: ``True`` where a lower bound is proven, ``False`` where ``L`` visibly runs
            to ``-∞`` along a ray, ``None`` where neither is known.
        non_smooth: the loss's terms across whose kink ``∇L`` jumps.
        param_names: the parameter names (the order of every point).
        title: what the sets are of (``canonical, p = 0.7, q = 0.6``).
        unit: the unit of the losses (``"nats"``), or ``""``.
        certificate: what interval arithmetic proved about the box (``certify=True``), or
            ``None``.
        caveats: what the report must say about how the sets were found: a symbolic step
            that ran out of its time budget (the sets then come from the numerical search
            alone), points of the search that the certificate proved not critical (dropped).
        completeness: whether the list is proven to hold every critical point of the box
            (a complete certificate, or closed forms the landscape proves complete) or only
            the result of a numerical search, with the reason.
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
    caveats: tuple[str, ...] = ()
    completeness: Evidence | None = None
    bound_reason: str = ""

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
            "evidence",
            "set",
            f"sample ({', '.join(self.param_names)})",
        ]
        rows = [
            [
                s.kind,
                str(s.dimension),
                f"{s.loss:.6f}",
                f"{s.morse_index} (degenerate)" if s.degenerate else str(s.morse_index),
                "" if s.evidence is None else s.evidence.word,
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
        elif self.global_min_loss is None and any(s.kind == Kind.LOCAL_MIN for s in self.sets):
            why = f" ({self.bound_reason})" if self.bound_reason else ""
            lines.append(
                textwrap.fill(
                    f"no lower bound of L is proven{why}: minima are reported as local",
                    TABLE_WIDTH,
                    subsequent_indent="  ",
                )
            )
        if self.non_smooth:
            lines.append(f"non-smooth: ∇L jumps across the kinks of {', '.join(self.non_smooth)}")
        lines += [
            textwrap.fill(
                f"{s.kind} at {format_point(s.sample)}: {s.evidence}",
                TABLE_WIDTH,
                subsequent_indent="  ",
            )
            for s in self.sets
            if s.evidence is not None and s.degenerate
        ]
        if any(s.evidence is not None and s.evidence.proven for s in self.sets):
            lines.append(
                "proven kind: Krawczyk and the interval Hessian (the Morse index), or a proven "
                "lower bound reached\nnumerical kind: floating-point Hessian and loss probes "
                "(each set's reason is in the JSON)"
            )
        if self.completeness is not None and not self.completeness.proven:
            lines.append(f"not proven complete ({self.completeness.reason})")
        lines += self.caveats
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
        from .._output.draw import critical_figure

        return critical_figure(self)

    def metadata(self) -> dict[str, Any]:
        """JSON-ready report: the sets (with their points), what is known of the bound and the
        smoothness, the caveats (and the certificate, if any)."""
        return {
            "parameters": list(self.param_names),
            "critical_sets": [s.metadata() for s in self.sets],
            "bounded_below": self.bounded_below,
            "global_min_loss": self.global_min_loss,
            "bound_reason": self.bound_reason,
            "non_smooth": list(self.non_smooth),
            "caveats": list(self.caveats),
            **({} if self.completeness is None else {"completeness": self.completeness.metadata()}),
            **({} if self.certificate is None else {"certificate": self.certificate.metadata()}),
        }


def global_min_level(sets: Sequence[CriticalSet]) -> float | None:
    """The loss of the global minimum among ``sets``, or ``None`` if none is global."""
    losses = [s.loss for s in sets if s.kind == Kind.GLOBAL_MIN]
    return min(losses) if losses else None


def decision_level(sets: Sequence[CriticalSet]) -> float | None:
    """The lowest loss of a non-global critical set, or ``None`` if all are global.

    A trajectory whose loss falls below it can only end at a global minimum, where the
    landscape proves that no other critical point exists outside the sets found and that the
    flow converges below this level (:attr:`gradflow.Landscape.sublevel_shortcut`).
    """
    losses = [s.loss for s in sets if s.kind != Kind.GLOBAL_MIN]
    return min(losses) if losses else None


def decided(level: float) -> float:
    """The loss below which a point counts as decided by the decision level ``level``
    (:func:`decision_level`): ``level`` less ``10⁻⁹`` of it and ``10⁻¹²``, clear of the float64
    loss's rounding."""
    return level - 1e-9 * abs(level) - 1e-12


def make_set(
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
        kind=classes.kinds[rep],
        dimension=dimension,
        loss=float(np.median(landscape.loss(points[idx]))),
        points=points[idx],
        equation=equation,
        hessian_eigenvalues=classes.eigenvalues[rep],
        morse_index=int(classes.morse_index[rep]),
        nullity=int(classes.nullity[rep]),
        hessian_method=str(classes.hessian_method[rep]),
        evidence=_evidence(landscape, classes, int(rep), dimension),
        components=np.unique(labels, return_inverse=True)[1].reshape(-1),
        samples=points[nearest][None],
    )


def _evidence(landscape: Landscape, classes: Classification, rep: int, dimension: int) -> Evidence:
    """What backs the kind of point ``rep``: a global minimum reaches the proven lower bound
    of ``L`` (its loss equals it to within the classifier's rounding margin), whatever its
    Hessian; any other kind, its classification's numerical evidence."""
    bound = global_bound(landscape)
    if classes.kinds[rep] == Kind.GLOBAL_MIN and bound.value is not None:
        return Evidence.of_proof(
            f"L ≥ {bound.value:.6g} is proven ({bound.reason}) and reached here (to within "
            "rounding): a global minimum"
        )
    return classes.evidence(rep, dimension)


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


def set_dimension(points: np.ndarray, nullity: np.ndarray) -> int:
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
