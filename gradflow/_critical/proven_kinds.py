"""Proven kinds: a non-degenerate critical point's kind backed by interval arithmetic.

For an isolated critical set whose Hessian is regular, Newton's method from its sample and the
Krawczyk test on a box around the limit (grown while the test passes, as the certificate's
ε-inflation does, :mod:`.branch_bound`) prove that the box holds exactly one zero of ``∇L``;
the interval Hessian over the tight enclosure then proves the signs of every eigenvalue of
every symmetric matrix in it (Weyl's inequality), hence the Morse index of the zero.  That is
cheap — one small box per point — where the loss is known in SymPy and its interval form is
set up within :data:`SETUP_SECONDS`; elsewhere (a loss written in JAX, a function with no
interval form, a degenerate point) the kind stays numerical and its evidence says why.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._errors import GradflowError
from .._evidence import Evidence
from .._landscape.base import Landscape
from .._outcome import Kind
from .._symbolic.budget import OutOfTime
from .._symbolic.model import BoundModel
from .branch_bound import Search
from .certify import proven_kind
from .interval_system import bound_system
from .sets import CriticalSet

__all__ = ["SETUP_SECONDS", "START_WIDTH", "with_proven_kinds"]

SETUP_SECONDS = 2.0
"""CPU seconds the interval form of ``∇L`` and ``∇²L`` may take to set up before the kinds are
left numerical."""
START_WIDTH = 1e-6
"""Half-width of the box Newton's method starts in, relative to the searched box's widest
side."""


def with_proven_kinds(
    landscape: Landscape, sets: list[CriticalSet], box: np.ndarray
) -> list[CriticalSet]:
    """``sets`` with the kind of each isolated, non-degenerate one proven where that is cheap.

    Args:
        landscape: the loss.
        sets: classified sets (their evidence numerical).
        box: the searched box, shape ``(dim, 2)``; a slice (a pinned row) proves nothing.

    Returns:
        The sets, each proven one with ``proven`` evidence, and its kind corrected by the proven
        Morse index where the numerical one differs (a saddle is never a minimum).
    """
    candidates = [i for i, s in enumerate(sets) if not s.dimension and not s.degenerate]
    if not candidates or not isinstance(landscape, BoundModel) or np.any(box[:, 0] >= box[:, 1]):
        return sets
    try:
        system, hyper = bound_system(landscape, seconds=SETUP_SECONDS)
    except (OutOfTime, GradflowError):
        return sets
    out = list(sets)
    for i in candidates:
        search = Search(system, hyper, np.asarray(box, dtype=float), 1, 1e-7)
        z = sets[i].sample
        half = START_WIDTH * float(np.max(box[:, 1] - box[:, 0])) * (1 + float(np.abs(z).max()))
        try:
            search.inflate(np.stack([z - half, z + half], axis=1))
        except (ArithmeticError, ValueError):
            continue
        if not search.isolated or search.isolated[0].morse_index is None:
            continue
        proven = search.isolated[0]
        index = proven.morse_index
        kind = proven_kind(sets[i].kind, index, landscape.dim)
        reason = (
            f"Krawczyk proves ∇L has exactly one zero within {_radius(proven.unique_in):.2g} "
            f"of the point, and the interval Hessian over its enclosure has {index} negative "
            f"and {landscape.dim - index} positive eigenvalues"
        )
        before = sets[i].evidence
        if kind == Kind.GLOBAL_MIN and before is not None and before.proven:
            reason = f"{before.reason}; {reason}"
        out[i] = dataclasses.replace(
            sets[i], kind=kind, morse_index=index, evidence=Evidence.of_proof(reason)
        )
    return out


def _radius(box: np.ndarray) -> float:
    """Half the widest side of ``box`` (shape ``(dim, 2)``)."""
    return float(np.max(box[:, 1] - box[:, 0])) / 2
