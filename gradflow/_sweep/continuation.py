"""Critical points followed across hyperparameters: branches, and the bifurcations between cells.

Along every line of a sweep's grid of hyperparameter values (a 1-D path, or each row and column
of a 2-D grid), each isolated critical point of a cell is continued to the next cell by a
predictor–corrector step: the predictor is the secant through the branch's last two points, or
at a branch's first step the tangent ``dθ/dh = -H⁻¹ ∂ₕ∇L`` of the implicit function theorem
(``∂ₕ`` by central differences in ``h``); the corrector is Newton's method on ``∇L = 0`` at the
next cell's values.  The corrected point is matched to that cell's points from the fresh search
(a point the search missed is added), and the points no branch reaches start new branches.  A
branch keeps its identity and the name of the closed-form set it lies on.

Between two cells, where a branch changes kind, ends or begins, the hyperparameter is located by
bisection to :data:`H_TOL` (the branch re-continued by Newton at each midpoint), and the events
at one place are typed as in Kuznetsov, *Elements of Applied Bifurcation Theory* (3rd ed.),
§3.3 and §7.1 (the potential, gradient case):

- **fold**: a minimum and a saddle (or a saddle and a maximum) meet and disappear, or appear;
- **pitchfork**: a branch changes kind as two new branches split off it symmetrically;
  *supercritical* where the new branches are more stable than the centre they flank (the
  normal form ``ẋ = μx - x³``, potential ``x⁴/4 - μx²/2``: minima beside a saddle),
  *subcritical* where they are less stable (``ẋ = μx + x³``: saddles beside a minimum), on
  whichever side of the bifurcation value they exist;
- **transcritical**: two branches cross and exchange their kinds (stability);
- **degenerate crossing**: a critical set changes kind alone (e.g. the two halves of a line of
  critical points trade kinds as the transverse curvature changes sign along the whole line).

Kinds are compared as minimum, saddle, maximum or degenerate (a global and a local minimum are
the same kind here: that difference is about other critical values, not about this point).  An
event that only exists at one cell (a set degenerate exactly there, with the same kind on both
sides) is no bifurcation and is dropped; a change of kind whose point is degenerate exactly at
a cell, with the same Morse index on both sides (two branches crossing on a grid value), is
placed at that cell instead of bisected; so the answer does not depend on whether a grid value
falls on it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .branches import CellPoints, Continuation
from .corrector import Family
from .events import join_tracks, typed
from .line import MATCH, Event, Landscapes, Line, Nodes, Track

__all__ = ["follow_branches"]


def follow_branches(
    family: Family,
    cells: Sequence[CellPoints],
    shape: tuple[int, ...],
    axes: Sequence[str],
    box: np.ndarray,
) -> Continuation:
    """Continue every isolated critical point across a sweep's cells and locate bifurcations.

    Args:
        family: the landscape at given hyperparameter values.
        cells: the cells, in the order of ``itertools.product`` over the axes.
        shape: cells along each axis.
        axes: the swept hyperparameters, in order.
        box: the searched box, shape ``(dim, 2)``: continuation stops where a branch leaves it.

    Returns:
        The branches (a 1-D sweep: one per continued point; a 2-D sweep: the pieces followed
        along rows and columns joined where they share a point) and the bifurcations, each
        located along one line of the grid.
    """
    diagonal = float(np.linalg.norm(box[:, 1] - box[:, 0]))
    nodes = Nodes(cells, box.shape[0], MATCH * diagonal)
    index = np.arange(len(cells)).reshape(shape)
    landscapes = Landscapes(family)
    tracks: list[tuple[int, Track]] = []
    events: list[tuple[int, Event]] = []
    lines = [
        (name, [int(i) for i in line])
        for axis, name in enumerate(axes)
        for line in np.moveaxis(index, axis, -1).reshape(-1, shape[axis])
    ]
    for number, (name, line) in enumerate(lines):
        walker = Line(landscapes, cells, nodes, line, name, box, diagonal)
        found = walker.run()
        for e in walker.events(found):
            if e.branch is not None:
                e.branch += len(tracks)
            events.append((number, e))
        tracks += [(number, t) for t in found]
    branches, owner = join_tracks(nodes, tracks)
    bifurcations = typed(events, owner, landscapes, diagonal, lines, cells)
    return Continuation(branches=branches, bifurcations=bifurcations)
