"""The evidence of a flow's end (:class:`~gradflow.Evidence`): where one trajectory, or a batch
of endpoints, ended and whether that is proven.

A converged end is *proven* where the endpoint lies in a certified region of attraction of
its minimum (:func:`gradflow._critical.attraction.attraction`, one proof per attractor, then a
float comparison per endpoint), or below a decision level the landscape proves (every
non-global critical value lies above it: :attr:`~gradflow.Landscape.sublevel_shortcut`).  An
end near a known critical set without such a proof is *numerical*.  A small gradient with no
critical point beside it (Levenberg–Marquardt from the endpoint finds none:
:func:`gradflow._critical.attraction.refined`) is no end at all: ``not_converged``; *proven*
to escape where no critical point lies in ``{L ≤ L(θ₀)}`` within a box around the start and
the problem's box (:func:`gradflow._critical.attraction.escapes`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._critical.attraction import Attraction, attraction, escapes
from .._critical.attractors import Attractor
from .._critical.sets import CriticalSets, decided, decision_level
from .._critical.sides import Sides
from .._critical.tube import Tube, tube
from .._evidence import Evidence
from .._landscape.base import Landscape
from .._outcome import Kind, Outcome

__all__ = ["ESCAPE_PAD", "Proofs", "escape_box", "escape_grounds", "level_of"]

ESCAPE_PAD = 0.1
"""The box of an escape proof: the hull of the problem's box, the start and the endpoint,
widened by this share of its width on each side."""
MINIMA = (Kind.GLOBAL_MIN, Kind.LOCAL_MIN)


def level_of(landscape: Landscape, critical: CriticalSets | None) -> float | None:
    """The decision level the landscape proves (the lowest non-global critical value), or
    ``None`` where it proves none or every set is global."""
    if critical is None or not landscape.sublevel_shortcut:
        return None
    return decision_level(critical)


class Proofs:
    """The certified regions of attraction of a list of attractors, each proven once (on first
    use) and then checked per endpoint by float comparisons.

    Args:
        landscape: the loss (a SymPy loss for any proof).
        attractors: the attractors, indexed by id.
        level: a decision level the landscape proves (:func:`level_of`), or ``None``.
        euclidean_flow: whether the ends are those of the Euclidean gradient flow, the one flow
            a line's certified tube (:mod:`gradflow._critical.tube`) is proven for (not a
            metric's, not gradient descent's); the other proofs hold for every one.
    """

    def __init__(
        self,
        landscape: Landscape,
        attractors: Sequence[Attractor],
        level: float | None,
        euclidean_flow: bool = True,
        sides: Sides | None = None,
    ) -> None:
        self._landscape = landscape
        self._attractors = list(attractors)
        self._regions: dict[int, Attraction | None] = {}
        self._tubes: dict[int, Tube | None] = {}
        self._euclidean = euclidean_flow
        self.level = level
        self._global = [a.id for a in self._attractors if a.kind == Kind.GLOBAL_MIN]
        self._sides = sides

    def region(self, id: int) -> Attraction | None:
        """The certified region of attractor ``id`` (a point minimum), or ``None``."""
        if id not in self._regions:
            a = self._attractors[id]
            proven = a.kind in MINIMA and a.dimension == 0
            self._regions[id] = attraction(self._landscape, a.point) if proven else None
        return self._regions[id]

    def tube(self, id: int, ends: np.ndarray) -> Tube | None:
        """The certified tube around attractor ``id`` (a line of minima) over the span of the
        endpoints ``ends`` (shape ``(n, dim)``) that reached it first, or ``None``."""
        if id not in self._tubes:
            a = self._attractors[id]
            line = self._euclidean and a.kind in MINIMA and a.dimension == 1
            self._tubes[id] = tube(self._landscape, a.point, ends) if line else None
        return self._tubes[id]

    def why_not(self, id: int) -> str:
        """Why attractor ``id`` has no certified region, one line."""
        a = self._attractors[id]
        if a.kind not in MINIMA:
            return f"#{a.id} is a {a.kind}: no region of attraction to certify"
        if a.dimension > 0:
            return f"#{a.id} is a set of dimension {a.dimension}: no region of attraction certified"
        return (
            f"#{a.id}: no box where Krawczyk and the interval Hessian prove a non-degenerate "
            "minimum (degenerate, or no interval form of the loss)"
        )

    def judge(
        self, ids: np.ndarray, endpoints: np.ndarray, losses: np.ndarray
    ) -> tuple[np.ndarray, list[str]]:
        """Evidence of grid points that reached attractors ``ids`` (shape ``(n,)``, ``-1`` for
        none) at ``endpoints`` (shape ``(n, dim)``) with float64 ``losses`` (shape ``(n,)``).

        Returns:
            A reason code per point (shape ``(n,)``) into the returned reasons, each reason
            ``"proven: …"`` or ``"numerical: …"`` (:meth:`Evidence.__str__`).
        """
        reasons: list[Evidence] = []
        codes = np.full(len(ids), -1)

        def give(points: np.ndarray, grounds: Evidence) -> None:
            """The points ``points`` (indices) get ``grounds``, listed only if some do."""
            if not points.size:
                return
            if grounds not in reasons:
                reasons.append(grounds)
            codes[points] = reasons.index(grounds)

        if self.level is not None and self._global:
            below = np.flatnonzero(np.isin(ids, self._global) & (losses < decided(self.level)))
            sided = np.zeros(below.size, dtype=bool)
            if self._sides is not None and not self.level_identifies:
                sided = self._sides.of(endpoints[below]) == ids[below]
            give(below[~sided], self.level_grounds())
            give(below[sided], self.level_grounds(self._sides))
        for id in np.unique(ids[(ids >= 0) & (codes < 0)]):
            mine = np.flatnonzero((ids == id) & (codes < 0))
            region = self.region(int(id)) or self.tube(int(id), endpoints[mine])
            if region is None:
                give(mine, Evidence.numerical(self.why_not(int(id))))
                continue
            inside = region.holds(endpoints[mine], losses[mine])
            give(mine[inside], Evidence.of_proof(f"in the {_named(region)} #{id}"))
            give(
                mine[~inside],
                Evidence.numerical(f"stopped beside #{id}, outside its {_kind_of(region)}"),
            )
        return codes, [str(g) for g in reasons]

    def level_grounds(self, sides: Sides | None = None) -> Evidence:
        """The grounds of a point decided below :attr:`level`: it ends on a global minimum,
        proven; where the global minima form several components, which of them it ends on is
        proven only by ``sides`` (:mod:`gradflow._critical.sides`), else numerical
        (:attr:`level_identifies`), and the grounds say which."""
        if self.level_identifies:
            which = ""
        elif sides is not None:
            which = f", {sides.text()}"
        else:
            which = (
                f"; which of its {len(self._global)} components is numerical (a segment below "
                "the level to a sample of it, or the nearest sample)"
            )
        return Evidence.of_proof(
            f"below L = {self.level:.10g}, under every non-global critical value (proven by the "
            f"landscape): ends on a global minimum{which}",
        )

    @property
    def level_identifies(self) -> bool:
        """Whether a point decided below :attr:`level` is proven to end on the attractor it is
        given, not only on some global minimum: where the global minima form one component.
        With several, the level proves that the flow ends on one of them, and which one comes
        from a numerical test (a straight segment below the level, checked at a few points;
        :func:`gradflow._basins.sublevel.below_level`), or from the nearest sample."""
        return len(self._global) <= 1

    def one(self, attractor: Attractor, endpoint: np.ndarray, loss: float) -> Evidence:
        """The grounds of one trajectory's end at ``endpoint`` on ``attractor``."""
        if (
            self.level is not None
            and attractor.kind == Kind.GLOBAL_MIN
            and loss < decided(self.level)
        ):
            sided = self._sides is not None and self._sides.of(endpoint[None])[0] == attractor.id
            return self.level_grounds(self._sides if sided else None)
        region = self.region(attractor.id) or self.tube(attractor.id, endpoint[None])
        if region is None:
            return Evidence.numerical(self.why_not(attractor.id))
        if region.holds(endpoint[None], np.array([loss]))[0]:
            return Evidence.of_proof(
                f"in the {_named(region)} #{attractor.id}: {region.text()}",
            )
        return Evidence.numerical(
            f"stopped beside #{attractor.id}, outside its {_kind_of(region)} ({region.text()})",
        )


def escape_box(box: np.ndarray, *points: np.ndarray) -> np.ndarray:
    """The box of an escape proof (shape ``(dim, 2)``): the hull of ``box`` and ``points``,
    widened by :data:`ESCAPE_PAD` of its width on each side."""
    stacked = np.stack([np.asarray(p, dtype=float) for p in points])
    lo = np.minimum(box[:, 0], stacked.min(axis=0))
    hi = np.maximum(box[:, 1], stacked.max(axis=0))
    pad = ESCAPE_PAD * (hi - lo)
    return np.stack([lo - pad, hi + pad], axis=1)


def escape_grounds(
    landscape: Landscape, start: np.ndarray, box: np.ndarray, status: Outcome, why: str
) -> Evidence:
    """``proven`` escaping where :func:`~gradflow._critical.attraction.escapes` closes on
    ``box``; else ``numerical`` with ``why``."""
    if escapes(landscape, start, box):
        sides = " × ".join(f"[{lo:.4g}, {hi:.4g}]" for lo, hi in box)
        return Evidence.of_proof(
            f"escaping: no critical point with L ≤ L(θ₀) in {sides} (interval arithmetic), so "
            "the flow leaves that box and converges to nothing in it",
        )
    return Evidence.numerical(why or status.message)


def _kind_of(region: Attraction | Tube) -> str:
    """What a proof's region is."""
    return "certified tube" if isinstance(region, Tube) else "certified region of attraction"


def _named(region: Attraction | Tube) -> str:
    """What a proof's region is called before the attractor's number."""
    return (
        "certified tube around" if isinstance(region, Tube) else "certified region of attraction of"
    )
