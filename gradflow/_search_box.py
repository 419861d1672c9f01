"""Where critical sets are searched, and whether the loss is bounded below there: the box of every
parameter (a fixed one pinned), and the probe of ``L → -∞`` along rays.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ._errors import GradflowError
from ._landscape import Landscape
from ._scales import loss_scales

__all__ = ["RAY_DIRECTIONS", "UNBOUNDED_LOSS", "bounded_below", "search_box"]
UNBOUNDED_LOSS = -1e6
"""``L`` below this times the loss scale far out along a ray, and still falling, is read as
``L → -∞``."""
RAY_DIRECTIONS = 32
"""Random directions (besides the ± coordinate axes) probed for ``L → -∞``."""


def search_box(
    landscape: Landscape,
    overrides: Mapping[str, tuple[float, float]] | None,
    fixed: Mapping[str, float] | None = None,
) -> np.ndarray:
    """Bounds as an array of shape ``(dim, 2)``; a fixed parameter has ``lo == hi``.

    Raises:
        GradflowError: ``overrides`` not a mapping of ``name: (lo, hi)``, an unknown name,
            ``lo ≥ hi``, or a fixed value that is not finite.
    """
    overrides = _bounds_mapping(landscape, overrides)
    for name in overrides:
        landscape.index(name)
    box = np.array(
        [overrides.get(n, landscape.bound(n)) for n in landscape.param_names], dtype=float
    )
    for name, (lo, hi) in zip(landscape.param_names, box):
        if not lo < hi:
            raise GradflowError(f"box: {name} min {lo:g} must be below {name} max {hi:g}")
    for name, value in (fixed or {}).items():
        if not np.isfinite(float(value)):
            raise GradflowError(f"fixed {name} = {value!r} must be a finite number")
        box[landscape.index(name)] = float(value)
    return box


def _bounds_mapping(
    landscape: Landscape, bounds: Mapping[str, tuple[float, float]] | None
) -> dict[str, tuple[float, float]]:
    """``bounds`` checked to be ``{name: (lo, hi)}`` with two finite-or-infinite numbers each.

    Raises:
        GradflowError: anything else, in one line that shows the expected form with this
            landscape's names (a plane box ``(xmin, xmax, ymin, ymax)``, which ``basins`` and
            ``portrait`` take as ``box``, is named as such).
    """
    names = landscape.param_names
    example = "{" + ", ".join(f"{n!r}: (-3, 3)" for n in names[:2]) + "}"
    if bounds is None:
        return {}
    if not isinstance(bounds, Mapping):
        plane = (
            "; a plane box (xmin, xmax, ymin, ymax) is the box= of basins and portrait"
            if isinstance(bounds, (tuple, list))
            and len(bounds) == 4
            and all(isinstance(v, (int, float)) for v in bounds)
            else ""
        )
        raise GradflowError(
            f"bounds must map parameter names to (lo, hi), e.g. bounds={example}; "
            f"got {bounds!r}{plane}"
        )
    out = {}
    for name, pair in bounds.items():
        try:
            lo, hi = (float(v) for v in pair)
        except (TypeError, ValueError):
            raise GradflowError(
                f"bounds[{name!r}] = {pair!r}: expected (lo, hi), e.g. bounds={example}"
            ) from None
        out[name] = (lo, hi)
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
    if landscape.global_min_loss is not None:
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
