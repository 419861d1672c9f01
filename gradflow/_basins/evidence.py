"""The evidence of a basin map's labels, and the endpoints that may form a set "found by the
flow".

Each grid point's label is *proven* where its endpoint lies in the certified region of
attraction of its attractor or below a decision level the landscape proves
(:class:`gradflow._flow.verdict.Proofs`: one proof per attractor, then float comparisons), and
its ``not_converged`` or ``diverged`` label is proven to escape where one branch and bound
shows no critical point below the highest start's loss in the map's box
(:func:`gradflow._critical.attraction.escapes`); every other label is *numerical*, with the
reason.
"""

from __future__ import annotations

import numpy as np

from .._critical.attraction import refined
from .._critical.attractors import AttractorIndex
from .._critical.sets import CriticalSets
from .._critical.sides import of_index
from .._evidence import Evidence
from .._flow.verdict import Proofs, escape_box, escape_grounds
from .._landscape.base import Landscape
from .._outcome import Outcome

__all__ = ["found_by_flow", "judged"]


def judged(
    model: Landscape,
    index: AttractorIndex,
    critical: CriticalSets,
    starts: np.ndarray,
    endpoints: np.ndarray,
    ids: np.ndarray,
    labels: np.ndarray,
    level: float | None,
    euclidean_flow: bool = True,
) -> tuple[np.ndarray, list[str], np.ndarray]:
    """A reason code per grid point (shape ``(n,)``) into the returned reasons (each
    ``"proven: …"`` or ``"numerical: …"``), for grid points ``starts`` (shape ``(n, dim)``) that
    reached attractors ``ids`` (``-1`` for none) with ``labels`` at ``endpoints``; ``level`` is
    the decision level of the map where the landscape proves one; ``euclidean_flow`` whether
    the map's flow is the Euclidean one (:class:`gradflow._flow.verdict.Proofs`).

    Also, per reason (shape ``(len(reasons),)``), whether it proves the attractor a grid point
    is given, not only its label's kind: all proven reasons do, but the decision level's where
    the global minima form several components (:attr:`Proofs.level_identifies`) and no
    hyperplane tells them apart (:mod:`gradflow._critical.sides`, for a continuous flow only:
    gradient descent's iterates can jump between components of the sublevel set)."""
    with np.errstate(all="ignore"):
        losses = np.asarray(model.loss(endpoints), dtype=np.float64)
    level = level if model.sublevel_shortcut else None
    near = of_index(model, index, level) if euclidean_flow else None
    proofs = Proofs(model, index.attractors, level, euclidean_flow, near)
    codes, reasons = proofs.judge(ids, endpoints, losses)
    ambiguous = "" if level is None or proofs.level_identifies else str(proofs.level_grounds())
    rest = np.flatnonzero(ids < 0)
    if not rest.size:
        return codes, reasons, _identifying(reasons, ambiguous)
    escaping = _escaping(model, index, critical, starts[rest], labels[rest])
    for label in np.unique(labels[rest]):
        outcome = Outcome(int(label))
        grounds = escaping if outcome in (Outcome.NOT_CONVERGED, Outcome.DIVERGED) else None
        text = str(grounds or Evidence.numerical(outcome.message))
        if text not in reasons:
            reasons.append(text)
        codes[rest[labels[rest] == label]] = reasons.index(text)
    return codes, reasons, _identifying(reasons, ambiguous)


def _identifying(reasons: list[str], ambiguous: str) -> np.ndarray:
    """Per reason, whether it is proven and proves the attractor too (not ``ambiguous``)."""
    return np.array([r.startswith("proven") and r != ambiguous for r in reasons], dtype=bool)


def _escaping(
    model: Landscape,
    index: AttractorIndex,
    critical: CriticalSets,
    starts: np.ndarray,
    labels: np.ndarray,
) -> Evidence | None:
    """Proven escape for every start of ``starts`` that ended ``not_converged`` or ``diverged``:
    no critical point lies below the highest of their losses in the hull of the map's search
    box and the starts (one branch and bound); ``None`` where a known critical set lies there
    (the proof cannot close) or the proof does not close."""
    unfinished = np.isin(labels, [int(Outcome.NOT_CONVERGED), int(Outcome.DIVERGED)])
    if not unfinished.any():
        return None
    points = starts[unfinished]
    with np.errstate(all="ignore"):
        losses = np.asarray(model.loss(points), dtype=np.float64)
    if not np.all(np.isfinite(losses)):
        return None
    top = points[int(np.argmax(losses))]
    box = escape_box(critical.box, points.min(axis=0), points.max(axis=0))
    known = [a.loss <= float(np.max(losses)) for a in index.attractors]
    if any(known):
        return None
    grounds = escape_grounds(model, top, box, Outcome.NOT_CONVERGED, "")
    return grounds if grounds.proven else None


def found_by_flow(
    landscape: Landscape, index: AttractorIndex, critical: CriticalSets, points: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Attractor ids and statuses of converged endpoints near no known set (shape
    ``(n, dim)``): each is refined by Levenberg–Marquardt
    (:func:`gradflow._critical.attraction.refined`); a refined point on a known set takes its
    attractor, the others become attractors "found by the flow"
    (:meth:`~gradflow.AttractorIndex.add_found`); an endpoint that refines to no critical point
    has id ``-1`` and status ``NOT_CONVERGED``.  Shapes ``(n,)``."""
    near = refined(landscape, points, critical.box)
    ok = np.all(np.isfinite(near), axis=1)
    ids = np.full(len(points), -1)
    status = np.where(ok, int(Outcome.CONVERGED), int(Outcome.NOT_CONVERGED))
    if ok.any():
        matched = index.match(near[ok])
        new = matched < 0
        if new.any():
            matched[new] = index.add_found(landscape, near[ok][new], critical.global_min_loss)
        ids[ok] = matched
    return ids, status
