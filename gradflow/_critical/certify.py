"""A proof that a box holds no critical points beyond those reported: branch and bound.

The box is cut in halves, breadth first, and each piece ``X`` is settled by interval arithmetic
on the SymPy gradient ``G = ∇L`` and its Jacobian ``J = ∇²L`` (:mod:`gradflow._symbolic.interval`):

1. **cleared**: some component of the enclosure ``G(X)`` excludes 0, so ``∇L ≠ 0`` on ``X``;
2. **isolated**: the Krawczyk operator ``K(X) = m - Y G(m) + (I - Y J(X))(X - m)``
   (``m`` the midpoint, ``Y ≈ J(m)⁻¹``) lies inside ``X``: ``X`` holds exactly one zero of
   ``∇L``, inside ``K(X)``; if ``K(X)`` misses ``X``, there is none (Krawczyk 1969; Moore,
   Kearfott & Cloud, *Introduction to Interval Analysis*, SIAM 2009, §8.4).  A zero on a cut
   between two pieces is caught by ε-inflation: Newton's method from the midpoint, then the
   Krawczyk test on a box around its limit, grown while the test passes;
3. **explained**: a closed-form critical set ``θ_D = g(θ_F)`` (a graph over its free
   parameters ``F``) meets ``X``, its points are critical across ``X`` (the set's condition
   holds on all of ``X`` in interval arithmetic, or ``∇L`` vanishes identically on the graph),
   and every zero of ``∇L`` in ``X`` is shown to lie on it, by either test:

   a. *uniqueness along D*: with ``D'`` the hull of ``X_D`` and ``g(X_F)``, the block
      ``J_DD`` over ``X_F × D'`` satisfies ``‖I - C J_DD‖∞ < 1`` (``C`` the inverse of its
      midpoint), so for each ``f`` the map ``d ↦ G_D(f, d)`` has at most one zero in ``D'``,
      and ``g(f)`` is one;
   b. *a factor*: some component ``G_j = (θ_d - g_d)^k Q`` in SymPy with ``Q(X)`` excluding 0,
      so ``G_j = 0`` forces ``θ_d = g_d`` (for each dependent ``d``).  This settles degenerate
      points on a set, such as the canonical model's saddle on ``e = 0``, where ``J`` vanishes;
4. otherwise ``X`` is cut along its widest side (relative to the box), until the budget of
   boxes is spent or a side is below ``min_width`` of the box: what is left is **unresolved**.

The certificate is complete only when nothing is unresolved.  Two trust assumptions remain,
both explicit: a declared closed-form set is critical where its condition holds (the engine
checks it at sample points), and the floating-point hyperparameters are the exact ones.
"""

from __future__ import annotations

import time

import numpy as np

from .._errors import GradflowError
from .._landscape.base import Landscape
from .._outcome import Kind
from .._symbolic.budget import OutOfTime, within
from .._symbolic.model import BoundModel
from .branch_bound import Search
from .certificate import Certificate, CertifiedPoint, Explanation
from .classify import classify_points
from .coercive import global_min_loss
from .interval_system import interval_system

__all__ = [
    "MAX_BOXES",
    "MIN_WIDTH",
    "CertifiedPoint",
    "Certificate",
    "Explanation",
    "certify",
    "proven_kind",
]

MAX_BOXES = 40_000
"""Default budget: boxes examined before the rest is reported unresolved."""
MIN_WIDTH = 1e-7
"""Default: a box whose every side is below this fraction of the searched box is not cut."""


def certify(
    landscape: Landscape,
    box: np.ndarray,
    *,
    max_boxes: int = MAX_BOXES,
    min_width: float = MIN_WIDTH,
    interval: str = "arb",
) -> Certificate:
    """Prove where the critical points of ``L`` in ``box`` are (see the module docstring).

    Args:
        landscape: a loss known in SymPy (a reduced model, or a loss written as text).
        box: shape ``(dim, 2)``, ``lo < hi`` on every parameter.
        max_boxes: boxes examined before the rest is reported unresolved (≥ 1).
        min_width: a box narrower than this fraction of ``box`` on every side is not cut
            (in ``(0, 1)``).
        interval: the interval arithmetic, ``"arb"`` (python-flint) or ``"mpmath"``.

    Returns:
        The certificate; its isolated points are classified.

    Raises:
        GradflowError: a landscape without a SymPy loss, a pinned parameter (a slice), a
            budget or width out of range, a function without an interval form, a SymPy setup
            (differentiating, factoring) that runs out of the symbolic time budget.
    """
    if not isinstance(landscape, BoundModel):
        raise GradflowError(
            f"certify needs a loss known in SymPy (a model or --loss); {landscape.name} is not"
        )
    if np.any(box[:, 0] >= box[:, 1]):
        raise GradflowError("certify works on the whole parameter space, not on a slice")
    if max_boxes < 1:
        raise GradflowError(f"max_boxes = {max_boxes} must be at least 1")
    if not 0 < min_width < 1:
        raise GradflowError(f"min_width = {min_width!r} must be in (0, 1)")
    start = time.perf_counter()
    try:
        system = within("the certificate's SymPy setup", interval_system, landscape.model, interval)
    except OutOfTime as out:
        raise GradflowError(f"certify: {out}") from None
    hyper = [landscape.values[s.name] for s in landscape.model.hyperparams]
    search = Search(system, hyper, np.asarray(box, dtype=float), max_boxes, min_width)
    search.run()
    points = np.array([c.point for c in search.isolated]).reshape(-1, landscape.dim)
    classes = classify_points(landscape, points, global_min_loss(landscape))
    losses = landscape.loss(points) if len(points) else np.zeros(0)
    isolated = tuple(
        CertifiedPoint(
            c.point,
            c.enclosure,
            c.unique_in,
            float(loss),
            proven_kind(kind, c.morse_index, landscape.dim),
            c.morse_index,
        )
        for c, kind, loss in zip(search.isolated, classes.kinds, losses)
    )
    return Certificate(
        box=np.asarray(box, dtype=float),
        param_names=landscape.param_names,
        isolated=tuple(sorted(isolated, key=lambda c: tuple(c.point))),
        explained=search.explanations(),
        unresolved=np.array(search.unresolved).reshape(-1, landscape.dim, 2),
        cleared=search.cleared,
        examined=search.examined,
        method=f"{system.arith.description}; gradient exclusion, Krawczyk, closed-form sets",
        seconds=time.perf_counter() - start,
    )


def proven_kind(kind: Kind, morse_index: int | None, dim: int) -> Kind:
    """The kind, corrected by a proven Morse index: a point with a negative Hessian eigenvalue
    is no minimum, however close its loss is to the lower bound (``L = 6.25e-14`` at the
    saddle between two wells ``10⁻³`` apart); a positive-definite one is a minimum."""
    if morse_index is None:
        return kind
    if morse_index == 0:
        return kind if kind in (Kind.GLOBAL_MIN, Kind.LOCAL_MIN) else Kind.LOCAL_MIN
    return Kind.LOCAL_MAX if morse_index == dim else Kind.SADDLE
