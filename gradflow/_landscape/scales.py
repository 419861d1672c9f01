"""The scales a loss sets, to which every tolerance of the engine is relative.

``L`` and ``c·L`` (``c > 0``) have the same critical sets, kinds, Morse indices, attractors and
basins; the flow of ``c·L`` is the flow of ``L`` with time divided by ``c``.  So no tolerance may
be an absolute number of loss units: each is a pure number times one of the scales below, all
proportional to ``c``, and lengths are in parameter units, which ``c`` does not change.

- the **length** ``ℓ``: the root mean square of the half-widths of the landscape's default ranges
  (parameter units);
- the **gradient** scale ``g``: the median of ``‖∇L‖₂`` over a fixed lattice of those ranges
  (loss units per parameter unit);
- the **loss** scale ``g·ℓ`` and the **Hessian** scale ``g/ℓ``;
- the **time** scale ``ℓ/g`` (time units of the flow), the time a gradient of size ``g`` takes to
  move a point by ``ℓ``.

The flow's options (:class:`~gradflow.FlowOptions`) given to the landscape-level functions
(:func:`gradflow.flow`, :func:`gradflow.basins`) are read in these units: ``gtol`` in units of
``g`` and ``t_max`` in units of ``ℓ/g`` (:func:`gradflow._flow.flows.unit_flow`).
"""

from __future__ import annotations

import functools
import itertools
import weakref
from dataclasses import dataclass

import numpy as np

from .._compiled.store import extended, key_of, label
from .base import GradientField, Landscape

__all__ = ["LATTICE_POINTS", "LossScales", "loss_scales", "unit_field"]

LATTICE_POINTS = 4096
"""At most this many points of the default ranges set the gradient scale (a lattice of ``k``
values per parameter with ``k^dim`` at most this, 3 ≤ ``k`` ≤ 17; a seeded uniform sample of
this size where ``3^dim`` exceeds it)."""


@dataclass(frozen=True)
class LossScales:
    """The scales of a loss (see the module's docstring).

    Attributes:
        length: ``ℓ`` (parameter units).
        gradient: ``g`` (loss units per parameter unit).
    """

    length: float
    gradient: float

    @property
    def loss(self) -> float:
        """``g·ℓ`` (loss units)."""
        return self.gradient * self.length

    @property
    def hessian(self) -> float:
        """``g/ℓ`` (loss units per squared parameter unit)."""
        return self.gradient / self.length

    @property
    def time(self) -> float:
        """``ℓ/g`` (time units of the flow)."""
        return self.length / self.gradient


_CACHE: weakref.WeakKeyDictionary[Landscape, LossScales] = weakref.WeakKeyDictionary()


def loss_scales(landscape: Landscape) -> LossScales:
    """The scales of ``landscape``'s loss, from its default ranges (computed once per landscape),
    or those it declares (:attr:`~gradflow.Landscape.declared_scales`).

    Where ``∇L`` vanishes or is not finite at every lattice point (a constant loss), the gradient
    scale is 1.
    """
    try:
        return _CACHE[landscape]
    except (KeyError, TypeError):
        pass
    declared = landscape.declared_scales
    if declared is not None:
        return LossScales(length=float(declared[0]), gradient=float(declared[1]))
    bounds = np.array([landscape.bound(n) for n in landscape.param_names], dtype=float)
    half = 0.5 * (bounds[:, 1] - bounds[:, 0])
    length = float(np.sqrt(np.mean(half**2))) or 1.0
    with np.errstate(all="ignore"):
        norms = np.linalg.norm(landscape.grad(_lattice(bounds)), axis=-1)
    norms = norms[np.isfinite(norms) & (norms > 0)]
    gradient = float(np.median(norms)) if norms.size else 1.0
    scales = LossScales(length=length, gradient=gradient)
    try:
        _CACHE[landscape] = scales
    except TypeError:
        pass
    return scales


def _lattice(bounds: np.ndarray) -> np.ndarray:
    """The points that set the gradient scale, shape ``(n, dim)`` (see :data:`LATTICE_POINTS`)."""
    dim = len(bounds)
    k = min(17, int(np.floor(LATTICE_POINTS ** (1 / dim) + 1e-9)))
    if k >= 3:
        axes = [np.linspace(lo, hi, k) for lo, hi in bounds]
        return np.array(list(itertools.product(*axes)))
    rng = np.random.default_rng(0)
    return rng.uniform(bounds[:, 0], bounds[:, 1], size=(LATTICE_POINTS, dim))


@functools.cache
def unit_field(field: GradientField) -> GradientField:
    """The field of ``L/g``, called with arguments ``(args, g)``, in the metric of ``field``;
    one per field, so that its integrators compile once.  A field whose programs are kept
    (:func:`gradflow._compiled.store.label`) passes its key on: a field in a metric has a key
    only where it names the metric (:func:`gradflow._landscape.metric.metric_key`)."""
    metric = field.metric
    base = key_of(field)
    unit = GradientField(
        loss=lambda theta, a: field.loss(theta, a[0]) / a[1],
        grad=lambda theta, a: field.grad(theta, a[0]) / a[1],
        metric=None if metric is None else lambda theta, a: metric(theta, a[0]),
    )
    return label(unit, None if base is None else extended(base, "unit"))
