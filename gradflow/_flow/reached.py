"""What one trajectory reached: the attractor or critical point its endpoint lies at, with the
evidence (proven or numerical), or why it did not converge; and the trajectories that stalled on
a kink of the loss."""

from __future__ import annotations

import dataclasses

import numpy as np

from .._critical.attraction import attraction, refined
from .._critical.attractors import AttractorIndex
from .._critical.classify import classify_points
from .._critical.coercive import global_min_loss
from .._critical.sets import CriticalSets
from .._critical.sides import of_index
from .._evidence import Evidence
from .._landscape.base import Landscape
from .._outcome import Kind, Outcome
from .integrate import Trajectory
from .kink_settle import settled
from .verdict import Proofs, escape_box, escape_grounds, level_of

__all__ = ["REFINED_DIM", "kink_status", "reached"]


def reached(
    landscape: Landscape,
    path: Trajectory,
    critical: CriticalSets | None = None,
    *,
    euclidean_flow: bool = True,
) -> Trajectory:
    """``path`` with what it reached and the evidence (:class:`gradflow.Evidence`).

    A converged endpoint reaches a kind only where a critical point lies beside it: a known
    set's attractor (given ``critical``), or the critical point Levenberg–Marquardt refines the
    endpoint to (:func:`gradflow._critical.attraction.refined`; up to :data:`REFINED_DIM`
    parameters, beyond which a converged run is ``CONVERGED``, or the known attractor its
    endpoint lies among, numerically); its end is proven where the
    endpoint lies in the attractor's certified region of attraction or below a decision level
    the landscape proves (:mod:`gradflow._flow.verdict`).  A small gradient beside no critical
    point is ``NOT_CONVERGED``; that, a run out of budget and a divergence are proven to escape
    where no critical point lies below ``L(θ₀)`` in the problem's box grown to hold the start and
    the endpoint.  A trajectory stuck on a kink reaches the attractor its sublevel set decides
    (:func:`gradflow._flow.kink_settle.settled`), given ``critical``, numerically.
    ``euclidean_flow`` says whether ``path`` is the Euclidean gradient flow (a line of minima's
    certified tube is proven for that flow only, :class:`gradflow._flow.verdict.Proofs`).
    """
    status, kink = kink_status(landscape, path.endpoint[None], np.array([int(path.status)]))
    path = dataclasses.replace(
        path,
        status=Outcome(int(status[0])),
        kink=kink[0],
        param_names=tuple(landscape.param_names),
        unit=landscape.loss_unit,
        plane=tuple(landscape.plane) if landscape.dim >= 2 else None,
    )
    index = None if critical is None else AttractorIndex(landscape, critical, critical.box)
    box = landscape.search_box() if critical is None else critical.box
    if path.status is Outcome.NON_SMOOTH and index is not None:
        found = int(settled(landscape, index, critical, path.endpoint[None])[0])
        if found >= 0:
            attractor = index.attractors[found]
            why = f"stuck on the kink of {path.kink}; its sublevel set decides #{found}"
            return dataclasses.replace(
                path,
                reached=attractor.kind.outcome,
                attractor=attractor,
                evidence=Evidence.numerical(why),
            )
    if path.status is not Outcome.CONVERGED:
        return _unfinished(landscape, path, box, path.status, path.status.message)
    endpoint = path.endpoint
    if landscape.dim > REFINED_DIM:
        return _unrefined(landscape, path, index)
    found = -1 if index is None else int(index.match(endpoint[None])[0])
    if found < 0:
        endpoint = refined(landscape, endpoint[None], box)[0]
        if not np.all(np.isfinite(endpoint)):
            why = "‖∇L‖ fell below gtol, but no critical point lies beside the endpoint"
            return _unfinished(landscape, path, box, Outcome.NOT_CONVERGED, why)
        found = -1 if index is None else int(index.match(endpoint[None])[0])
    kind = classify_points(landscape, endpoint[None], global_min_loss(landscape)).kinds[0]
    if found < 0:
        region = (
            attraction(landscape, endpoint) if kind in (Kind.GLOBAL_MIN, Kind.LOCAL_MIN) else None
        )
        loss = np.array([float(path.losses[-1])])
        if region is not None and region.holds(path.endpoint[None], loss)[0]:
            why = f"in a certified region of attraction of a minimum: {region.text()}"
            grounds = Evidence.of_proof(why)
        else:
            why = "at a critical point refined from the endpoint" + (
                ", not among the critical sets found" if index is not None else ""
            )
            grounds = Evidence.numerical(why)
        return dataclasses.replace(path, reached=kind.outcome, evidence=grounds)
    attractor = index.attractors[found]
    level = level_of(landscape, critical)
    near = of_index(landscape, index, level) if euclidean_flow else None
    proofs = Proofs(landscape, index.attractors, level, euclidean_flow, near)
    grounds = proofs.one(attractor, path.endpoint, float(path.losses[-1]))
    return dataclasses.replace(path, reached=kind.outcome, attractor=attractor, evidence=grounds)


REFINED_DIM = 64
"""Up to this many parameters a converged endpoint is refined to a critical point and
classified (Levenberg–Marquardt on ``∇L``, a dense Hessian per step, then the Hessian's
spectrum); a landscape of more (a full model's weights) ends ``CONVERGED``, numerically."""


def _unrefined(landscape: Landscape, path: Trajectory, index: AttractorIndex | None) -> Trajectory:
    """``path``, converged on a landscape of more than :data:`REFINED_DIM` parameters: the
    attractor whose samples its endpoint lies among (given critical sets), else ``CONVERGED``;
    numerical either way, as the endpoint is neither refined nor classified."""
    found = -1 if index is None else int(index.match(path.endpoint[None])[0])
    why = (
        f"‖∇L‖ fell below gtol; a landscape of {landscape.dim} parameters is not refined to a "
        f"critical point or classified (up to {REFINED_DIM})"
    )
    if found < 0:
        return dataclasses.replace(
            path, reached=Outcome.CONVERGED, evidence=Evidence.numerical(why)
        )
    attractor = index.attractors[found]
    return dataclasses.replace(
        path,
        reached=attractor.kind.outcome,
        attractor=attractor,
        evidence=Evidence.numerical(f"{why}; it lies among the samples of attractor #{found}"),
    )


def _unfinished(
    landscape: Landscape, path: Trajectory, box: np.ndarray, status: Outcome, why: str
) -> Trajectory:
    """``path`` reaching ``status`` (no critical point), proven to escape where it is."""
    ends = [path.thetas[0]]
    if status is not Outcome.DIVERGED and np.all(np.isfinite(path.endpoint)):
        ends.append(path.endpoint)
    grounds = (
        escape_grounds(landscape, path.thetas[0], escape_box(box, *ends), status, why)
        if status in (Outcome.NOT_CONVERGED, Outcome.DIVERGED)
        else Evidence.numerical(why)
    )
    return dataclasses.replace(path, reached=status, evidence=grounds)


def kink_status(
    landscape: Landscape, endpoints: np.ndarray, status: np.ndarray
) -> tuple[np.ndarray, list[str | None]]:
    """Relabel trajectories that ran out of budget on a kink of the loss as ``NON_SMOOTH``.

    Returns:
        The new status codes, shape ``(n,)``, and for each trajectory the kink term or ``None``.
    """
    status = np.array(status, copy=True)
    kinks: list[str | None] = [None] * len(status)
    if not landscape.nonsmooth_terms:
        return status, kinks
    for i in np.flatnonzero((status == Outcome.NOT_CONVERGED) | (status == Outcome.NON_SMOOTH)):
        terms = landscape.kinks_at(endpoints[i])
        if terms:
            status[i], kinks[i] = int(Outcome.NON_SMOOTH), terms[0]
    return status, kinks
