"""What continuation returns: the points of each cell it starts from, the branches followed
across cells, the bifurcations between them, and the stabilities it compares kinds by.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._outcome import Kind

__all__ = [
    "BIFURCATION_TYPES",
    "CRITICALITIES",
    "Bifurcation",
    "Branch",
    "CellPoints",
    "Continuation",
    "stability",
]

BIFURCATION_TYPES = ("fold", "pitchfork", "transcritical", "degenerate crossing")
"""The types of :attr:`Bifurcation.type`."""
CRITICALITIES = ("supercritical", "subcritical")
"""The values of :attr:`Bifurcation.criticality` for a pitchfork the kinds tell apart."""


def stability(kind: Kind) -> str:
    """``"min"``, ``"saddle"``, ``"max"`` or ``"degenerate"`` for a :class:`~gradflow.Kind`."""
    minimum = kind in (Kind.GLOBAL_MIN, Kind.LOCAL_MIN)
    return "min" if minimum else "max" if kind == Kind.LOCAL_MAX else str(kind)


@dataclass(frozen=True)
class CellPoints:
    """What continuation needs of one cell of a sweep.

    Attributes:
        values: the hyperparameter values of the cell.
        points: its isolated critical points, shape ``(n, dim)``.
        kinds: their kinds (:data:`gradflow.KINDS`), ``n`` entries.
        names: the closed-form set each lies on, or ``"numerical"``.
        curves: ``(name, kind, sample)`` of each closed-form critical set of dimension ≥ 1.
    """

    values: Mapping[str, float]
    points: np.ndarray
    kinds: tuple[Kind, ...]
    names: tuple[str, ...]
    curves: tuple[tuple[str, str, np.ndarray], ...] = ()


@dataclass(frozen=True)
class Branch:
    """One isolated critical point followed across cells.

    Attributes:
        id: the branch's number.
        name: the closed-form set it lies on (``"numerical"`` where none).
        cells: the cells it passes through (indices into the sweep's cells), ascending.
        points: its point in each, shape ``(len(cells), dim)``.
        kinds: its kind in each.
    """

    id: int
    name: str
    cells: tuple[int, ...]
    points: np.ndarray
    kinds: tuple[Kind, ...]

    def metadata(self) -> dict[str, Any]:
        """JSON-ready: ``{"id", "name", "cells", "points", "kinds"}``."""
        return {
            "id": self.id,
            "name": self.name,
            "cells": list(self.cells),
            "points": self.points.tolist(),
            "kinds": list(self.kinds),
        }


@dataclass(frozen=True)
class Bifurcation:
    """A bifurcation located between two cells of a sweep.

    Attributes:
        type: one of :data:`BIFURCATION_TYPES`.
        at: every hyperparameter's value there (the swept one located to :data:`H_TOL`).
        axis: the hyperparameter along which it was located.
        point: the critical point where it happens, shape ``(dim,)``.
        branches: the ids of the branches involved (empty for a closed-form set of
            dimension ≥ 1).
        set: the closed-form set that changes kind (``None`` for isolated points).
        changes: ``(before, after)`` stability of each set or branch that changes kind.
        exact: the exact values ``{symbol: expression}`` where SymPy solves for them, else
            ``None`` (filled in by the caller that knows the loss symbolically): the
            hyperparameter and the point for isolated points, the hyperparameter for a set.
        curve: where the swept hyperparameter's exact value depends on the others, the curve
            in the hyperparameters' plane, e.g. ``"q = 1 - p"``, else ``None``.
        criticality: for a pitchfork, ``"supercritical"`` or ``"subcritical"``
            (:data:`CRITICALITIES`, see the module's docstring), ``None`` where the kinds do not
            tell (new branches and centre both saddles) and for every other type.
    """

    type: str
    at: dict[str, float]
    axis: str
    point: np.ndarray
    branches: tuple[int, ...] = ()
    set: str | None = None
    changes: tuple[tuple[str, str], ...] = ()
    exact: dict[str, str] | None = None
    curve: str | None = None
    criticality: str | None = None

    def metadata(self) -> dict[str, Any]:
        """JSON-ready: ``{"type", "criticality", "at", "axis", "point", "branches", "set",
        "changes", "exact", "curve"}``."""
        return {
            "type": self.type,
            "criticality": self.criticality,
            "at": self.at,
            "axis": self.axis,
            "point": self.point.tolist(),
            "branches": list(self.branches),
            "set": self.set,
            "changes": [list(c) for c in self.changes],
            "exact": self.exact,
            "curve": self.curve,
        }

    def text(self, names: Sequence[str]) -> str:
        """One line: type, where, the point and what changes."""
        at = ", ".join(f"{k} = {v:.7g}" for k, v in self.at.items())
        point = ", ".join(f"{n} = {x:.4g}" for n, x in zip(names, self.point))
        what = f" of {self.set}" if self.set else ""
        change = "; ".join(f"{a} → {b}" for a, b in self.changes)
        exact = ", ".join(f"{k} = {v}" for k, v in (self.exact or {}).items())
        kind = f"{self.criticality} {self.type}" if self.criticality else self.type
        return (
            f"{kind}{what} at {at}, ({point})"
            + (f": {change}" if change else "")
            + (f" (exact: {exact})" if exact else "")
            + (f" on the curve {self.curve}" if self.curve else "")
        )


@dataclass(frozen=True)
class Continuation:
    """The branches of a sweep and its bifurcations, ordered by where they are."""

    branches: tuple[Branch, ...]
    bifurcations: tuple[Bifurcation, ...]
