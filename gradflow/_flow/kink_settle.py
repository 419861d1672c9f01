"""Where a trajectory stalled on a kink ends, decided by its sublevel set, without integrating on.

Across a kink where ``∇L`` jumps (``|x|`` at ``x = 0``) the field flips, and an adaptive solver's
steps shrink to nothing where both sides push into the kink: the trajectory stops ``non_smooth``
where it met the kink, while the flow itself slides on along it (Filippov's solution,
``θ' ∈ −∂L(θ)``).  Where the slide ends can still be decided, from the theory of subgradient
flows of tame functions: for a locally Lipschitz loss built from elementary functions and
``|·|``, ``max``, ``min`` (Whitney stratifiable), ``L`` decreases along every such trajectory,
strictly away from Clarke-stationary points, and every limit point is Clarke stationary
(D. Davis, D. Drusvyatskiy, S. Kakade, J. D. Lee, *Stochastic subgradient method converges on
tame functions*, Found. Comput. Math. 20, 2020, Lemma 5.2 and Thm. 5.8).  So a trajectory stalled
at ``θ_s`` stays in the sublevel set ``{L ≤ L(θ_s)}``, and where

1. interval arithmetic proves ``L > L(θ_s)`` on the whole boundary of a box around the search
   box (so the part of the sublevel set it moves in lies inside), and
2. the critical sets found in that box hold exactly one attractor with ``L ≤ L(θ_s)``,

it converges to that attractor.  The box is the critical sets' search box, and where the proof
fails there, the same box twice and four times as wide about its centre (its critical sets are
searched too).  Losses with a ``sign``, ``Heaviside`` or ``Piecewise`` (a loss that jumps is
not Lipschitz) and landscapes without a SymPy loss are not decided.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import sympy as sp

from .._critical.attractors import AttractorIndex
from .._critical.search import critical_sets
from .._critical.sets import CriticalSets
from .._landscape.base import Landscape
from .._landscape.scales import loss_scales
from .._symbolic.interval import arithmetic, interval_function
from .._symbolic.model import BoundModel

__all__ = ["BOUNDARY_BOXES", "WIDENINGS", "settled"]

BOUNDARY_BOXES = 4000
"""Boxes of the boundary examined before the proof of ``L > level`` there is given up."""
WIDENINGS = (1.0, 2.0, 4.0)
"""The boxes tried, as multiples of the search box about its centre."""
LEVEL_MARGIN = 1e-9
"""An attractor counts as below a level within this share of the loss scale."""


def settled(
    landscape: Landscape, index: AttractorIndex, critical: CriticalSets, endpoints: np.ndarray
) -> np.ndarray:
    """The attractor each trajectory stalled on a kink at ``endpoints`` (shape ``(n, dim)``)
    converges to, where its sublevel set decides it (module docstring), else ``-1``; shape
    ``(n,)``."""
    ids = np.full(len(endpoints), -1)
    if not len(endpoints) or not _lipschitz(landscape):
        return ids
    with np.errstate(all="ignore"):
        levels = np.asarray(landscape.loss(endpoints), dtype=float)
    margin = LEVEL_MARGIN * loss_scales(landscape).loss
    center = critical.box.mean(axis=1)
    half = 0.5 * (critical.box[:, 1] - critical.box[:, 0])
    for widening in WIDENINGS:
        pending = np.flatnonzero((ids < 0) & np.isfinite(levels))
        if not pending.size:
            break
        box = np.stack([center - widening * half, center + widening * half], axis=1)
        sets = critical if widening == 1.0 else _sets_in(landscape, box)
        below = _attractors_below(index, sets, levels[pending] + margin)
        single = np.flatnonzero(below >= 0)
        if not single.size:
            continue
        proven = _proven_levels(landscape, box, levels[pending[single]])
        ids[pending[single[proven]]] = below[single[proven]]
    return ids


def _lipschitz(landscape: Landscape) -> bool:
    """Whether the landscape's loss is a SymPy expression whose kinks are all ``|·|``, ``max``
    or ``min`` (continuous; a ``sign``, ``Heaviside`` or ``Piecewise`` may jump)."""
    return isinstance(landscape, BoundModel) and not landscape.model.loss.has(
        sp.sign, sp.Heaviside, sp.Piecewise
    )


def _sets_in(landscape: Landscape, box: np.ndarray) -> CriticalSets:
    """The critical sets in ``box`` (shape ``(dim, 2)``)."""
    return critical_sets(landscape, box=box)


def _attractors_below(index: AttractorIndex, sets: CriticalSets, levels: np.ndarray) -> np.ndarray:
    """For each level, the one attractor of ``index`` that every component of ``sets`` with a
    loss at or below it belongs to, ``-1`` where there are several, none, or one ``index`` does
    not know."""
    components = [
        (s.loss, s.component_points(label)) for s in sets for label in range(s.n_components)
    ]
    owners = [index.match(points) for _, points in components]
    out = np.full(len(levels), -1)
    for i, level in enumerate(levels):
        found = {int(o) for (loss, _), own in zip(components, owners) if loss <= level for o in own}
        if len(found) == 1 and min(found) >= 0:
            out[i] = min(found)
    return out


def _proven_levels(landscape: Landscape, box: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Whether ``L > level`` is proven on the whole boundary of ``box`` for each level (the
    proof at a level holds for every lower one: the highest proven level is found by bisection
    over the sorted levels)."""
    order = np.argsort(levels)
    ok = np.zeros(len(levels), dtype=bool)
    lo, hi = 0, len(levels)
    while lo < hi:
        mid = (lo + hi) // 2
        if _boundary_above(landscape, box, float(levels[order[mid]])):
            lo = mid + 1
        else:
            hi = mid
    ok[order[:lo]] = True
    return ok


def _boundary_above(landscape: BoundModel, box: np.ndarray, level: float) -> bool:
    """Whether interval arithmetic proves ``L > level`` on every face of ``box``, bisecting
    each face (widest side first) up to :data:`BOUNDARY_BOXES` boxes."""
    arith, f, hyper = _enclosure(landscape)
    queue = []
    for i in range(box.shape[0]):
        for side in (0, 1):
            face = box.copy()
            face[i] = box[i, side]
            queue.append(face)
    examined = 0
    while queue:
        face = queue.pop()
        low, _ = arith.bounds(f(*(arith.interval(a, b) for a, b in face), *hyper)[0])
        if low > level:
            continue
        examined += 1
        widths = face[:, 1] - face[:, 0]
        if examined > BOUNDARY_BOXES or widths.max() <= 1e-9 * (1 + np.abs(face).max()):
            return False
        j = int(np.argmax(widths))
        middle = 0.5 * (face[j, 0] + face[j, 1])
        for part in ((face[j, 0], middle), (middle, face[j, 1])):
            piece = face.copy()
            piece[j] = part
            queue.append(piece)
    return True


@functools.cache
def _arb_loss(model: Any) -> tuple[Any, Any]:
    """The loss of ``model`` as a function of intervals (arb), and the arithmetic."""
    arith = arithmetic("arb")
    f = interval_function([model.loss], (*model.params, *model.hyperparams), arith)
    return arith, f


def _enclosure(landscape: BoundModel) -> tuple[Any, Any, list[Any]]:
    """The arithmetic, the loss over intervals and the hyperparameters as point intervals."""
    arith, f = _arb_loss(landscape.model)
    hyper = [
        arith.interval(landscape.values[s.name], landscape.values[s.name])
        for s in landscape.model.hyperparams
    ]
    return arith, f, hyper
