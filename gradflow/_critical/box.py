"""Where critical sets are searched, and whether the loss is bounded below there: the box of every
parameter (a fixed one pinned), and the probe of ``L → -∞`` along rays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._errors import GradflowError
from .._landscape.base import Landscape
from .._landscape.region import check_range
from .._landscape.scales import loss_scales
from .coercive import global_min_loss

__all__ = ["RAY_DIRECTIONS", "UNBOUNDED_LOSS", "bounded_below", "checked_box"]
UNBOUNDED_LOSS = -1e6
"""``L`` below this times the loss scale far out along a ray, and still falling, is read as
``L → -∞``."""
RAY_DIRECTIONS = 32
"""Random directions (besides the ± coordinate axes) probed for ``L → -∞``."""


def checked_box(landscape: Landscape, box: Any) -> np.ndarray:
    """``box`` (default the landscape's ranges) checked to be a search box of ``landscape``.

    Args:
        landscape: the loss.
        box: shape ``(dim, 2)``, rows ``(lo, hi)`` in parameter order, ``lo == hi`` to pin a
            parameter; ``None`` for :meth:`~gradflow.Landscape.search_box` ``()``.

    Returns:
        A new float array of shape ``(dim, 2)``.

    Raises:
        GradflowError: another shape, ``lo > hi``, or a bound that is not finite.
    """
    if box is None:
        return landscape.search_box()
    out = np.array(box, dtype=float)
    if out.shape != (landscape.dim, 2):
        raise GradflowError(
            f"box of shape {out.shape}: expected ({landscape.dim}, 2), a row (lo, hi) per "
            f"parameter ({', '.join(landscape.param_names)}); make one by name with "
            "landscape.search_box(bounds, fixed)"
        )
    for name, (lo, hi) in zip(landscape.param_names, out):
        if lo != hi:
            check_range(name, lo, hi)
        elif not np.isfinite(lo):
            raise GradflowError(f"box: {name} pinned at {lo:g} must be finite")
    return out


def bounded_below(landscape: Landscape, box: np.ndarray) -> bool | None:
    """``True`` if a lower bound of ``L`` is proven; ``False`` if ``L`` visibly runs to ``-∞``.

    The loss is evaluated along rays from the centre of ``box`` (the ± coordinate axes and
    :data:`RAY_DIRECTIONS` seeded random directions; pinned coordinates stay pinned) at radii
    doubling from the box's half-diagonal to a million times it.  A ray on which ``L`` keeps
    falling over the last five radii and ends below :data:`UNBOUNDED_LOSS` shows it.

    Returns:
        ``True``, ``False``, or ``None`` when neither is shown.
    """
    if global_min_loss(landscape) is not None:
        return True
    free = box[:, 0] < box[:, 1]
    dim = landscape.dim
    directions = np.concatenate(
        [np.eye(dim), -np.eye(dim), np.random.default_rng(0).standard_normal((RAY_DIRECTIONS, dim))]
    )
    directions[:, ~free] = 0.0
    norms = np.linalg.norm(directions, axis=1)
    directions = directions[norms > 0] / norms[norms > 0, None]
    center = box.mean(axis=1)
    radius = 0.5 * float(np.linalg.norm(box[:, 1] - box[:, 0]))
    radii = radius * 2.0 ** np.arange(21)
    points = center + radii[None, :, None] * directions[:, None, :]
    with np.errstate(all="ignore"):
        tail = landscape.loss(points)[:, -6:]
        falling = np.all(np.diff(tail, axis=1) < 0, axis=1) & (
            tail[:, -1] < UNBOUNDED_LOSS * loss_scales(landscape).loss
        )
    return False if bool(np.any(falling)) else None
