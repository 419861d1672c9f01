"""Gradient flows in a metric: ``dθ/dt = -G(θ)⁻¹ ∇L(θ)``.

A metric ``G(θ)`` (symmetric positive definite, shape ``(dim, dim)``) changes the flow's vector
field and nothing else: the flow is the steepest descent of ``L`` measured in the length
``‖dθ‖²_G = dθᵀ G dθ``.  Critical points are the same (``G⁻¹∇L = 0`` exactly where ``∇L = 0``),
and so are their kinds; basins, separatrices and conserved quantities are not.

The metric of a reduced model with a full model is the one its embedding induces,
``G = JᵀJ`` with ``J = ∂ embed/∂θ``: if the full model's gradient flow kept its weights on the
embedded manifold, their reduced coordinates would follow exactly this flow (the full gradient
pulled back is ``Jᵀ∇L_full = ∇L``, and ``J θ' = -P ∇L_full`` gives ``θ' = -(JᵀJ)⁻¹∇L``).

:func:`in_metric` turns a landscape and a metric (``"euclidean"``, ``"induced"`` or a callable
``G(θ, args)``) into the landscape whose :attr:`~gradflow.Landscape.field` is the metric flow's;
the integrators, basins, separatrices and portraits then run on it unchanged.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._compiled.store import Key, extended, key_of, label
from .._errors import GradflowError
from .base import MATRIX_CALL_SIZES, GradientField, Landscape, padded_call

__all__ = [
    "METRICS",
    "UNROLLED",
    "Metric",
    "MetricLandscape",
    "in_metric",
    "metric_field",
    "metric_key",
    "spd_solve",
    "velocity",
]

Metric = Callable[[jax.Array, Any], jax.Array]
"""``G(θ, args)``: a symmetric positive definite ``(dim, dim)`` matrix at ``θ`` of shape ``(dim,)``,
traceable by JAX; ``args`` are the landscape's (hyperparameters)."""

METRICS = ("euclidean", "induced")
"""The metrics named by a string; any callable :data:`Metric` is accepted as well."""


@functools.cache
def metric_field(field: GradientField, metric: Metric) -> GradientField:
    """The field whose ``grad`` is the gradient of ``L`` in the metric, ``G(θ)⁻¹ ∇L(θ)``.

    The integrators flow along ``-grad``, so they integrate ``dθ/dt = -G⁻¹∇L``; their
    steady-state test ``‖G⁻¹∇L‖ ≤ gtol`` holds at the same points as ``∇L = 0``.  Built once per
    ``(field, metric)`` pair, so the integrators compile once per pair; ``G`` is cast to the
    gradient's dtype (a float32 pass stays float32).
    """

    def grad(theta: jax.Array, args: Any) -> jax.Array:
        g = field.grad(theta, args)
        return spd_solve(metric(theta, args).astype(g.dtype), g)

    return GradientField(loss=field.loss, grad=grad, metric=metric)


def metric_key(field: GradientField, metric: Metric, dim: int, args: Any) -> Key | None:
    """The key of the programs of :func:`metric_field`'s field, or ``None`` where ``field``
    has none (:func:`gradflow._compiled.store.key_of`).

    A metric is a JAX function (the induced one is written in Python around the full model's
    embedding), so no expression names it; what it computes does.  The key is the base
    field's and the jaxpr of ``jacfwd(metric)`` at a point of shape ``(dim,)``, in float32 and
    in float64 (the basin map's first pass runs in float32), its constants by their bytes:
    that is the metric and its derivative as the flow's programs compute them (an implicit
    solver differentiates the field), after every custom derivative rule has been applied.
    The jaxpr is written with the values of its literals and without any memory address
    where the metric is plain JAX; a change to the embedding's code, a constant or a
    hyperparameter's role changes it.  Computing it traces the metric's derivative (0.4 s for
    the canonical model's induced metric), once per process, and only where a stored program
    is asked for.  A metric whose derivative JAX cannot trace names nothing (the key gives
    ``None``): its programs are compiled in each process.  A metric that reads mutable Python
    state while it is traced is outside what the key sees, as it is outside what ``jax.jit``'s
    own cache of traces sees.
    """
    base = key_of(field)
    if base is None:
        return None

    def traced() -> str | None:
        parts = []
        for dtype in (np.float32, np.float64):
            theta = jax.ShapeDtypeStruct((dim,), dtype)
            cast = jax.tree.map(lambda x, d=dtype: jax.ShapeDtypeStruct(np.shape(x), d), args)
            try:
                closed = jax.make_jaxpr(jax.jacfwd(metric))(theta, cast)
            except Exception:  # noqa: BLE001 - any metric JAX cannot differentiate: not kept
                return None
            parts.append(str(closed.jaxpr))
            for c in closed.consts:
                value = np.asarray(c)
                digest = hashlib.sha256(value.tobytes()).hexdigest()
                parts.append(f"{value.shape} {value.dtype} {digest}")
        return "\n".join(parts)

    def key() -> str | None:
        metric_part = traced()
        if metric_part is None:
            return None
        return extended(base, f"metric field, G⁻¹∇L\n{metric_part}")()

    return key


UNROLLED = 4
"""Metrics of at most this dimension are solved by an unrolled Cholesky factorization."""


def spd_solve(matrix: jax.Array, vector: jax.Array) -> jax.Array:
    """``G⁻¹ v`` for a symmetric positive definite ``G`` of shape ``(n, n)``, ``v`` of shape
    ``(n,)``.

    For ``n ≤`` :data:`UNROLLED`, Cholesky ``G = LLᵀ`` and the two triangular solves written
    out in scalar operations, which vectorize over a batch of trajectories: ``jnp.linalg.solve``
    calls LAPACK once per matrix of the batch, and in the canonical model's induced-metric flow
    that call took 5 of the 9.3 ms a field evaluation of 16,384 points cost; unrolled, the
    evaluation takes 2.0 ms (a basin map in that metric was 20× the Euclidean one warm, most of
    it there; docs/performance.md).  Larger ``n``: ``jnp.linalg.solve``.
    """
    n = vector.shape[0]
    if n > UNROLLED:
        return jnp.linalg.solve(matrix, vector)
    low: list[list[Any]] = [[None] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1):
            rest = matrix[i, j] - sum((low[i][k] * low[j][k] for k in range(j)), 0.0)
            low[i][j] = jnp.sqrt(rest) if i == j else rest / low[j][j]
    y: list[Any] = []
    for i in range(n):
        y.append((vector[i] - sum((low[i][k] * y[k] for k in range(i)), 0.0)) / low[i][i])
    x: list[Any] = [None] * n
    for i in reversed(range(n)):
        x[i] = (y[i] - sum((low[k][i] * x[k] for k in range(i + 1, n)), 0.0)) / low[i][i]
    return jnp.stack(x)


def _forwarded(name: str) -> property:
    """The member ``name`` of the base landscape, read through (a method comes back bound to the
    base, so ``wrapper.loss(θ)`` is ``wrapper.base.loss(θ)``)."""
    return property(lambda self: getattr(self.base, name), doc=f"The base landscape's ``{name}``.")


class MetricLandscape(Landscape):
    """A landscape whose gradient flow runs in a metric: ``dθ/dt = -G(θ)⁻¹ ∇L(θ)``.

    Everything but the flow is the base landscape's, each member forwarded by name: ``loss``,
    ``grad`` (the Euclidean ``∇L``), ``hessian``, critical sets and their kinds, ranges, kinks.
    Its own: :attr:`field` (``G⁻¹∇L``), :attr:`metric_name`, :attr:`title`, :meth:`describe`,
    and no conserved quantity (those of the Euclidean flow are not conserved in another
    metric).

    Args:
        base: the landscape.
        metric: ``G(θ, args)``.
        metric_name: how reports name the metric (``"induced"``).
    """

    def __init__(self, base: Landscape, metric: Metric, metric_name: str) -> None:
        self.base = base
        self.metric = metric
        self._metric_name = metric_name

    @property
    def metric_name(self) -> str:
        """How reports name the metric (``"induced"``)."""
        return self._metric_name

    param_names = _forwarded("param_names")
    loss = _forwarded("loss")
    grad = _forwarded("grad")
    hessian = _forwarded("hessian")
    point_grad = _forwarded("point_grad")
    point_hessian = _forwarded("point_hessian")
    args = _forwarded("args")
    dim = _forwarded("dim")
    name = _forwarded("name")
    induced_metric = _forwarded("induced_metric")
    hyperparameters = _forwarded("hyperparameters")
    references = _forwarded("references")
    plane = _forwarded("plane")
    index = _forwarded("index")
    bound = _forwarded("bound")
    search_box = _forwarded("search_box")
    declared_scales = _forwarded("declared_scales")
    closed_forms = _forwarded("closed_forms")
    set_families = _forwarded("set_families")
    global_min_loss = _forwarded("global_min_loss")
    sublevel_shortcut = _forwarded("sublevel_shortcut")
    critical_sets_complete = _forwarded("critical_sets_complete")
    symbolic_caveats = _forwarded("symbolic_caveats")
    nonsmooth_terms = _forwarded("nonsmooth_terms")
    kinks_at = _forwarded("kinks_at")
    kink_values = _forwarded("kink_values")
    loss_unit = _forwarded("loss_unit")

    @property
    def field(self) -> GradientField:
        """The flow's field: ``grad`` is ``G⁻¹∇L`` (see :func:`metric_field`), its programs
        kept between processes where the base field's are (:func:`metric_key`)."""
        field = metric_field(self.base.field, self.metric)
        if key_of(field) is None:
            label(field, metric_key(self.base.field, self.metric, self.base.dim, self.base.args))
        return field

    @property
    def invariant_names(self) -> tuple[str, ...]:
        return ()

    @property
    def kinks(self) -> None:
        """None: the flow in a metric does not slide along kinks (only the Euclidean one)."""
        return None

    def invariant(self, name: str, theta: Any) -> np.ndarray:
        raise GradflowError(
            f"{self.base.name} declares no quantity conserved by the flow in the "
            f"{self.metric_name} metric ({name!r} is conserved in the Euclidean one)"
        )

    @property
    def title(self) -> str:
        return f"{self.base.title}, {self.metric_name} metric"

    def describe(self) -> dict[str, Any]:
        return {**self.base.describe(), "metric": self.metric_name}

    def metric_at(self, theta: Any) -> np.ndarray:
        """``G`` at points of shape ``(..., dim)``, shape ``(..., dim, dim)``."""
        dim = self.base.dim
        return padded_call(
            _batched(self.metric), theta, dim, (dim, dim), self.base.args, MATRIX_CALL_SIZES
        )

    def check(self, theta: np.ndarray) -> None:
        """Check ``G`` at one point ``θ`` (shape ``(dim,)``): shape, symmetry, positive definite.

        Raises:
            GradflowError: ``G`` is not a finite symmetric positive definite ``(dim, dim)``
                matrix there.
        """
        dim = self.base.dim
        g = np.asarray(self.metric(jnp.asarray(theta, jnp.float64), self.base.args))
        where = ", ".join(f"{n} = {v:g}" for n, v in zip(self.base.param_names, theta))
        if g.shape != (dim, dim):
            raise GradflowError(
                f"the metric must return a ({dim}, {dim}) matrix, got shape {g.shape} at {where}"
            )
        scale = max(float(np.max(np.abs(g))), np.finfo(float).tiny)
        if not np.all(np.isfinite(g)) or np.max(np.abs(g - g.T)) > 1e-10 * scale:
            raise GradflowError(f"the metric must be finite and symmetric; it is not at {where}")
        if np.linalg.eigvalsh(g)[0] <= 0:
            raise GradflowError(f"the metric must be positive definite; it is not at {where}")


@functools.cache
def _batched(fn: Callable[[jax.Array, Any], jax.Array]) -> Callable[[jax.Array, Any], jax.Array]:
    """``fn`` vmapped over a batch of points and jitted, once per function."""
    return jax.jit(jax.vmap(fn, in_axes=(0, None)))


def in_metric(
    landscape: Landscape,
    metric: str | Metric | None = None,
    *,
    at: Any = None,
    name: str | None = None,
) -> Landscape:
    """The landscape whose gradient flow runs in ``metric``.

    Args:
        landscape: the loss.
        metric: ``None`` (the landscape as given: a :class:`MetricLandscape` keeps its metric,
            any other flows in the Euclidean one), ``"euclidean"`` (``G = I``), ``"induced"`` (the
            metric ``JᵀJ`` its embedding into a full model induces,
            :attr:`~gradflow.Landscape.induced_metric`), or a callable ``G(θ, args)``.
        at: a point of shape ``(dim,)`` at which the metric is checked.
        name: how reports and legends name a callable ``metric`` (default its ``__name__``):
            ``"induced"`` for the metric of a full model of another length than the
            landscape's own embedding.

    Raises:
        GradflowError: an unknown metric name, ``"induced"`` for a landscape without an
            embedding, or a metric that is not symmetric positive definite at ``at``.
    """
    if metric is None:
        return landscape
    if isinstance(landscape, MetricLandscape):
        landscape = landscape.base
    if isinstance(metric, str):
        if metric not in METRICS:
            raise GradflowError(
                f"metric = {metric!r} must be one of {', '.join(METRICS)} or a callable G(θ, args)"
            )
        if metric == "euclidean":
            return landscape
        induced = landscape.induced_metric
        if induced is None:
            raise GradflowError(
                f"{landscape.name} has no embedding into a full model, so no induced metric; "
                "use metric='euclidean' or pass G(θ, args)"
            )
        wrapped = MetricLandscape(landscape, induced, "induced")
    elif callable(metric):
        wrapped = MetricLandscape(landscape, metric, name or getattr(metric, "__name__", "custom"))
    else:
        raise GradflowError(
            f"metric must be one of {', '.join(METRICS)} or a callable G(θ, args), got {metric!r}"
        )
    if at is not None:
        wrapped.check(np.asarray(at, np.float64))
    return wrapped


def velocity(landscape: Landscape, theta: Any) -> np.ndarray:
    """The flow's velocity ``-grad`` of ``landscape.field`` at points ``(..., dim)``: ``-∇L``, or
    ``-G⁻¹∇L`` for a :class:`MetricLandscape`."""
    if not isinstance(landscape, MetricLandscape):
        return -landscape.grad(theta)
    field = landscape.field
    return -padded_call(
        _batched(field.grad), theta, landscape.dim, (landscape.dim,), landscape.args
    )
