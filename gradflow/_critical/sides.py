"""Which component of a disconnected global-minimum set a flow below a decision level reaches,
proven by a coordinate hyperplane that the sublevel set does not meet.

Below a decision level ``c`` (every non-global critical value lies above it), each connected
component of ``{L < c}`` holds exactly one component of the global-minimum set, and a flow from
a point ``x`` of it stays in it (``L`` never increases) and ends on that component.  Where the
loss is at least ``c`` on a whole hyperplane ``θ_i = 0``, ``{L < c}`` does not meet it, so the
component of ``x`` lies on ``x``'s side of it, and so does the global minimum it holds.  If the
critical sets are complete (declared by the model) and every global minimum on that side belongs
to one attractor, the flow from ``x`` ends on that attractor: proven.  The attractors are the
critical sets as sampled in the searched box, so a component of the global minima lying wholly
outside it would not be seen; the declaration of complete critical sets is trusted for that, as
the decision level is.  The flow must be continuous (not gradient descent, whose iterates can
jump between components).

Proven here: ``L`` with ``θ_i = 0`` and the hyperparameters' values substituted simplifies in
SymPy to a constant, at least ``c`` when their difference is evaluated to 30 digits (``c`` is
a float: a decision level that is the constant itself, rounded up, fails; the canonical Markov
model's ``L(0, w) = H(π)``, the loss of its line ``e = 0`` of critical points).  A loss that is
not constant on the hyperplane is not tried.  The symbolic step runs once per model, values and
level, within the symbolic time budget, and its answer is kept in the cache folder
(``<cache folder>/sides/<sha256>.pickle``), so that a warm run does no SymPy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from .._landscape.base import Landscape
from .._outcome import Kind
from .._symbolic.budget import OutOfTime, within
from .._symbolic.kept import kept_value, written
from .._symbolic.model import BoundModel
from .attractors import AttractorIndex
from .sets import decided

__all__ = ["SCREEN_POINTS", "Sides", "of_index", "sides"]

SCREEN_POINTS = 4
"""Seeded random points of a hyperplane at which the loss must agree before SymPy is asked to
show that it is constant there."""


@dataclass(frozen=True)
class Sides:
    """The global-minimum attractor on each side of the hyperplane ``θ_index = 0``, where one
    attractor holds every global minimum sample on that side.

    Attributes:
        index: the coordinate ``i`` of the hyperplane.
        name: its parameter's name.
        floor: the loss's constant value on it.
        owner: ``{+1: id, -1: id}``, the sides that hold one global-minimum attractor.
    """

    index: int
    name: str
    floor: float
    owner: dict[int, int]

    def of(self, points: np.ndarray) -> np.ndarray:
        """The attractor proven to be reached from each point below the level (shape
        ``(n, dim)``), ``-1`` where its side holds none or several."""
        side = points[:, self.index]
        above, below = self.owner.get(1, -1), self.owner.get(-1, -1)
        return np.where(side > 0, above, np.where(side < 0, below, -1))

    def text(self) -> str:
        """The proof, one clause."""
        return (
            f"the one on its side of {self.name} = 0, where L = {self.floor:.10g}, not below "
            "the level: the sublevel set does not cross it"
        )


def of_index(landscape: Landscape, index: AttractorIndex, level: float | None) -> Sides | None:
    """:func:`sides` of an attractor index's global minima for the points decided by ``level``
    (:func:`decided`), for a landscape declared in SymPy; ``None`` without a level or for any
    other landscape."""
    if level is None or not isinstance(landscape, BoundModel):
        return None
    owners = [a.id for a in index.attractors if a.kind == Kind.GLOBAL_MIN]
    return sides(landscape, decided(level), *index.samples(owners))


def sides(
    landscape: BoundModel, level: float, samples: np.ndarray, owners: np.ndarray
) -> Sides | None:
    """The first coordinate hyperplane that separates the global minima below ``level`` (see the
    module docstring), given the global-minimum attractors' samples (shape ``(m, dim)``) and
    the id of each (shape ``(m,)``); ``None`` where none does, where the critical sets are not
    declared complete, or where the symbolic step runs out of its budget."""
    if not landscape.critical_sets_complete or len(np.unique(owners)) < 2:
        return None
    for index, floor in _floors(landscape, level):
        side = np.sign(samples[:, index]).astype(int)
        if np.any(side == 0):
            continue
        owner = {}
        for s in (1, -1):
            ids = np.unique(owners[side == s])
            if len(ids) == 1:
                owner[s] = int(ids[0])
        if owner:
            return Sides(index, landscape.param_names[index], floor, owner)
    return None


def _floors(landscape: BoundModel, level: float) -> list[tuple[int, float]]:
    """``(i, L on θ_i = 0)`` for the coordinates on whose hyperplane the loss is a constant at
    least ``level``, kept in the cache folder (:func:`gradflow._symbolic.kept.kept_value`)."""
    parts = [
        written(landscape.model.loss),
        repr(sorted(landscape.values.items())),
        repr(float(level)),
    ]

    def found() -> list[tuple[int, float]]:
        try:
            return within(
                "the loss on the coordinate hyperplanes", _constant_floors, landscape, level
            )
        except OutOfTime:
            return []

    return kept_value("sides", parts, found, list)


def _constant_floors(landscape: BoundModel, level: float) -> list[tuple[int, float]]:
    """The coordinates whose hyperplane the loss is constant on, at least ``level``: screened at
    seeded random points of each hyperplane (:data:`SCREEN_POINTS`), then proven in SymPy with
    the hyperparameters' float values as exact rationals (the model the flows integrate): the
    loss with ``θ_i = 0`` substituted, simplified where symbols are left (``sympy.simplify`` of
    the canonical loss on ``e = 0``, a constant once substituted, took 0.2 s)."""
    model = landscape.model
    values = {s: sp.Rational(float(landscape.values[s.name])) for s in model.hyperparams}
    rng = np.random.default_rng(0)
    out = []
    for i, s in enumerate(model.params):
        points = rng.uniform(-2.0, 2.0, size=(SCREEN_POINTS, landscape.dim))
        points[:, i] = 0.0
        with np.errstate(all="ignore"):
            screened = landscape.loss(points)
        if not np.all(np.isfinite(screened)) or np.ptp(screened) > 1e-9 * np.abs(screened).max():
            continue
        on = model.loss.xreplace({s: sp.S.Zero}).xreplace(values)
        if on.free_symbols:
            on = sp.simplify(on)
        if on.free_symbols:
            continue
        gap = sp.N(on - sp.Rational(level), 30)
        if gap.is_real and gap >= 0:
            out.append((i, float(on)))
    return out
