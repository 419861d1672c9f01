"""What the branch and bound of :mod:`.certify` proves about a box, as results: the certified
points, the boxes explained by a closed-form set, the certificate with its verdict, and the
measures of boxes they report (which points a box accounts for, volumes, hulls).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._outcome import Kind
from .._output.text import format_number, format_point

__all__ = ["POINT_TOL", "CertifiedPoint", "Certificate", "Explanation", "inside_any"]

POINT_TOL = 1e-6
"""A reported critical point within this distance (relative to ``max(1, |θ|)``) of a certified
enclosure, an explained or an unresolved box is accounted for."""
SHOWN_BOXES = 1000
"""At most this many unresolved boxes (the largest) are listed in a report."""


@dataclass(frozen=True)
class CertifiedPoint:
    """A critical point proven to be the only zero of ``∇L`` in a box.

    Attributes:
        point: Newton's approximation, shape ``(dim,)``.
        enclosure: a box holding the zero, shape ``(dim, 2)`` (tight: a few ulps wide).
        unique_in: the largest box found in which it is the only zero, shape ``(dim, 2)``.
        loss: ``L`` at ``point``.
        kind: its classification (:func:`gradflow.classify_points`).
        morse_index: the number of negative Hessian eigenvalues, proven on ``enclosure`` by the
            interval Hessian and Weyl's inequality; ``None`` where not proven.
    """

    point: np.ndarray
    enclosure: np.ndarray
    unique_in: np.ndarray
    loss: float
    kind: Kind
    morse_index: int | None

    def metadata(self) -> dict[str, Any]:
        """JSON-ready: the fields above, arrays as lists."""
        return {
            "point": self.point.tolist(),
            "enclosure": self.enclosure.tolist(),
            "unique_in": self.unique_in.tolist(),
            "loss": self.loss,
            "kind": self.kind,
            "morse_index": self.morse_index,
        }


@dataclass(frozen=True)
class Explanation:
    """The boxes whose zeros all lie on one closed-form critical set.

    Attributes:
        name: the set's name(s) (pieces sharing one graph, e.g. the two halves of ``e = 0``).
        equation: the graph's equation.
        boxes: shape ``(n, dim, 2)``.
        points: the closed-form critical points (pieces of dimension 0) inside these boxes.
    """

    name: str
    equation: str
    boxes: np.ndarray
    points: tuple[str, ...] = ()

    def metadata(self) -> dict[str, Any]:
        """JSON-ready: the equation, the count, volume and hull of the boxes, the points."""
        return {
            "equation": self.equation,
            "count": len(self.boxes),
            "volume": _volume(self.boxes),
            "hull": _hull(self.boxes),
            "points": list(self.points),
        }


@dataclass(frozen=True)
class Certificate:
    """What the branch and bound proved about the zeros of ``∇L`` in a box.

    Attributes:
        box: the searched box, shape ``(dim, 2)``.
        param_names: the parameter order.
        isolated: the certified isolated critical points.
        explained: the closed-form sets that account for the zeros of their boxes.
        unresolved: the boxes left when the budget ran out, shape ``(n, dim, 2)``.
        cleared: the number of boxes proven free of critical points.
        examined: the number of boxes examined.
        method: the arithmetic and the tests used.
        seconds: wall-clock time of the proof.
    """

    box: np.ndarray
    param_names: tuple[str, ...]
    isolated: tuple[CertifiedPoint, ...]
    explained: tuple[Explanation, ...]
    unresolved: np.ndarray
    cleared: int
    examined: int
    method: str
    seconds: float

    @property
    def complete(self) -> bool:
        """Whether every critical point in the box is certified or explained."""
        return len(self.unresolved) == 0

    def accounts_for(self, points: np.ndarray) -> np.ndarray:
        """Which ``points`` (shape ``(n, dim)``) lie in a certified point's ``unique_in`` box,
        an explained box or an unresolved box (within :data:`POINT_TOL`); a critical point
        that does not contradicts the certificate."""
        boxes = [c.unique_in[None] for c in self.isolated]
        boxes += [e.boxes for e in self.explained] + [self.unresolved]
        stacked = np.concatenate([b.reshape(-1, self.box.shape[0], 2) for b in boxes])
        return inside_any(points, stacked)

    def holds(self, point: CertifiedPoint, points: np.ndarray) -> bool:
        """Whether all ``points`` (``(n, dim)``, ``n ≥ 1``) lie in the certified point's
        ``unique_in`` box (within :data:`POINT_TOL`): they approximate that one zero."""
        return len(points) > 0 and bool(np.all(inside_any(points, point.unique_in[None])))

    def missing(self, points: np.ndarray) -> tuple[CertifiedPoint, ...]:
        """The certified points whose ``unique_in`` box holds none of ``points`` (``(n, dim)``)."""
        return tuple(c for c in self.isolated if not np.any(inside_any(points, c.unique_in[None])))

    def metadata(self) -> dict[str, Any]:
        """JSON-ready: ``complete``, ``isolated``, ``explained`` (by set), ``unresolved``
        (count, volume, share of the box, hull and the largest boxes), ``method``, ``seconds``."""
        largest = self.unresolved[np.argsort(-_volumes(self.unresolved))][:SHOWN_BOXES]
        return {
            "complete": self.complete,
            "isolated": [c.metadata() for c in self.isolated],
            "explained": {e.name: e.metadata() for e in self.explained},
            "unresolved": {
                "count": len(self.unresolved),
                "volume": _volume(self.unresolved),
                "share": _volume(self.unresolved) / _volume(self.box[None]),
                "hull": _hull(self.unresolved),
                "boxes": largest.tolist(),
            },
            "cleared": self.cleared,
            "examined": self.examined,
            "method": self.method,
            "seconds": self.seconds,
        }

    def text(self) -> str:
        """A few lines for the command line: the verdict first."""
        names = ", ".join(self.param_names)
        if self.complete:
            verdict = "complete: proven (no other critical point in the box)"
        else:
            share = _volume(self.unresolved) / _volume(self.box[None])
            hull = " × ".join(f"[{lo:.6g}, {hi:.6g}]" for lo, hi in _hull(self.unresolved))
            verdict = (
                f"NOT complete: {len(self.unresolved)} unresolved boxes, volume "
                f"{_volume(self.unresolved):.3g} ({share:.3g} of the box), within {hull}"
            )
        lines = [
            f"certificate ({self.method}; {self.examined} boxes, {self.seconds:.2f} s): {verdict}"
        ]
        for c in self.isolated:
            width = float(np.max(c.enclosure[:, 1] - c.enclosure[:, 0]))
            size = max(1.0, float(np.max(np.abs(c.point))))
            index = "unproven" if c.morse_index is None else str(c.morse_index)
            lines.append(
                f"  isolated {c.kind} at ({names}) = {format_point(c.point, 10)} "
                f"(enclosure width {format_number(width, '.1e', size)}, Morse index {index}), "
                f"L = {c.loss:.6g}"
            )
        for e in self.explained:
            on = f"; holds {', '.join(e.points)}" if e.points else ""
            named = e.name if e.equation in e.name else f"{e.name} ({e.equation})"
            lines.append(f"  explained by {named}: {len(e.boxes)} boxes{on}")
        return "\n".join(lines)


def inside_any(points: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Which points (``(n, dim)``) lie within :data:`POINT_TOL` of one of ``boxes``."""
    if not len(boxes) or not len(points):
        return np.zeros(len(points), dtype=bool)
    tol = POINT_TOL * np.maximum(1.0, np.abs(points).max(axis=1))[:, None, None]
    p = points[:, None, :]
    inside = (p >= boxes[None, :, :, 0] - tol) & (p <= boxes[None, :, :, 1] + tol)
    return np.any(np.all(inside, axis=2), axis=1)


def _volumes(boxes: np.ndarray) -> np.ndarray:
    return np.prod(boxes[..., 1] - boxes[..., 0], axis=-1) if len(boxes) else np.zeros(0)


def _volume(boxes: np.ndarray) -> float:
    return float(np.sum(_volumes(boxes)))


def _hull(boxes: np.ndarray) -> list[list[float]] | None:
    if not len(boxes):
        return None
    return np.stack([boxes[..., 0].min(axis=0), boxes[..., 1].max(axis=0)], axis=1).tolist()
