"""What the engine's algorithms need of a loss: the :class:`Landscape` base class.

A landscape is a loss ``L(θ)`` over a few named scalar parameters ``θ``.  Critical sets, flows,
basins, separatrices and portraits are written against this class alone, so they work the
same for a reduced model declared in SymPy (:class:`gradflow.BoundModel`), a loss written
directly in JAX (:class:`gradflow.JaxLandscape`) and a flow in a metric
(:class:`gradflow.MetricLandscape`).

For implementers: subclass :class:`Landscape` and provide its five abstract members,
``param_names``, ``loss``, ``grad``, ``hessian`` and ``field``; every other member has a
default here (a landscape that knows nothing more of its loss keeps them).
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from .._errors import GradflowError

jax.config.update("jax_enable_x64", True)

__all__ = [
    "DEFAULT_BOUND",
    "MATRIX_CALL_SIZES",
    "ClosedForm",
    "GradientField",
    "Kinks",
    "Landscape",
    "host_cast",
    "padded_call",
]

DEFAULT_BOUND = (-3.0, 3.0)
"""The range of a parameter whose landscape declares none."""


def host_cast(value: Any, dtype: Any) -> jax.Array:
    """``value`` as a device array of ``dtype``, cast on the host: a cast on the device is a
    program of its own per shape and type (traced, and compiled or loaded, every process)."""
    return jax.device_put(np.asarray(value, dtype))


@dataclass(frozen=True, eq=False)
class GradientField:
    """A loss on flat parameter vectors and its gradient, both called as ``f(θ, args)``.

    ``θ`` has shape ``(dim,)``; ``loss`` returns a scalar, ``grad`` an array of shape ``(dim,)``.
    The integrators compile once per field object, so build a field once and reuse it.
    ``metric``: where ``grad`` is the gradient in a metric, ``G⁻¹∇L``, the metric ``G(θ, args)``
    (shape ``(dim, dim)``, symmetric positive definite; :func:`gradflow.in_metric`), which the
    escape test of a steady state reads; ``None`` for the Euclidean gradient.
    """

    loss: Callable[[jax.Array, Any], jax.Array]
    grad: Callable[[jax.Array, Any], jax.Array]
    metric: Callable[[jax.Array, Any], jax.Array] | None = None

    @classmethod
    def from_loss(cls, loss: Callable[[jax.Array, Any], jax.Array]) -> GradientField:
        """The field of ``loss(θ, args)`` with ``grad = jax.grad(loss)``."""
        return cls(loss=loss, grad=jax.grad(loss))


@dataclass(frozen=True, eq=False)
class Kinks:
    """A loss with kinks on known surfaces: what :func:`gradflow.slide` needs of it.

    The loss is written with an explicit slope per kink: ``loss_at(θ, s, args)`` is ``L(θ)``
    where every ``s_k`` is the slope of the side of ``g_k(θ) = 0`` the point lies on
    (``lo_k`` where ``g_k < 0``, ``hi_k`` where ``g_k > 0``), and on ``g_k = 0`` it has the same
    value for every ``s_k`` in ``[lo_k, hi_k]``.  ``|u|`` is ``s·u`` with slopes ``[-1, 1]``;
    ``max(0, u)`` and a ReLU are ``s·u`` with ``[0, 1]``; ``max(a, b)`` is
    ``b + s·(a - b)`` with ``[0, 1]`` on ``g = a - b``.  Its gradient in ``θ`` at fixed slopes
    is the gradient of the smooth piece, and on a surface the convex hull of those of the
    pieces that meet there (the Clarke subdifferential, where each kink enters the loss once).

    Attributes:
        surfaces: ``g(θ, args)``, shape ``(K,)`` for ``θ`` of shape ``(dim,)``: kink ``k``
            lies on ``g_k = 0``.
        loss_at: ``L_s(θ, s, args)``, a scalar, ``s`` of shape ``(K,)``.
        lo, hi: the slopes on the negative and the positive side, shape ``(K,)``.
        names: a name per kink for reports (``"Abs(x)"``), or empty.
    """

    surfaces: Callable[[jax.Array, Any], jax.Array]
    loss_at: Callable[[jax.Array, jax.Array, Any], jax.Array]
    lo: np.ndarray
    hi: np.ndarray
    names: tuple[str, ...] = field(default=())

    def slopes(self, g: jax.Array) -> jax.Array:
        """The slope of each kink on the side of its surface ``g`` lies on (``lo`` at 0)."""
        return jnp.where(g > 0, jnp.asarray(self.hi, g.dtype), jnp.asarray(self.lo, g.dtype))

    def loss(self, theta: jax.Array, args: Any) -> jax.Array:
        """``L(θ)``."""
        return self.loss_at(theta, self.slopes(self.surfaces(theta, args)), args)

    def grad_at(self, theta: jax.Array, s: jax.Array, args: Any) -> jax.Array:
        """``∇_θ L_s(θ)`` at fixed slopes ``s``."""
        return jax.grad(self.loss_at)(theta, s, args)


def padded_call(
    fn: Callable[[jax.Array, Any], jax.Array],
    theta: Any,
    dim: int,
    tail: tuple[int, ...],
    args: Any,
    sizes: tuple[int, ...] | None = None,
) -> np.ndarray:
    """Apply a batched, jitted JAX function ``fn(θ (B, dim), args)`` to points of shape
    ``(..., dim)``.

    The points are padded to the smallest batch size in ``sizes`` that holds them, and cut into
    chunks of the largest (default :data:`CALL_SIZES`: 512 and 16,384 points), so
    that calls with different numbers of points share a few compiled shapes instead of tracing
    and compiling one each (a trace costs tens of milliseconds, evaluating 16,384 points of a
    small loss less than one).  Returns shape ``(...) + tail``.

    Sizes whose call would hold more than :data:`CALL_ENTRIES` numbers (``dim`` or the tail's
    size per point, whichever is larger) are left out; where none is left, the points go in
    chunks of the largest power of two that fits, four points at a time for the Hessian of a
    full model of 825 weights (512 of them asked XLA for 160 GB).
    """
    sizes = _fitting(CALL_SIZES if sizes is None else sizes, max(dim, math.prod(tail)))
    arr = np.asarray(theta, dtype=np.float64)
    flat = arr.reshape(-1, dim)
    n = flat.shape[0]
    size = next((s for s in sizes if s >= n), sizes[-1])
    out = []
    for start in range(0, max(n, 1), size):
        part = flat[start : start + size]
        if len(part) < size:
            part = np.concatenate([part, np.zeros((size - len(part), dim))])
        out.append(np.asarray(fn(part, args)))
    return np.concatenate(out)[:n].reshape(arr.shape[:-1] + tail)


def _fitting(sizes: tuple[int, ...], per_point: int) -> tuple[int, ...]:
    """The ``sizes`` whose calls hold at most :data:`CALL_ENTRIES` numbers of ``per_point``
    each, or the largest power of two that does."""
    fit = max(1, CALL_ENTRIES // per_point)
    kept = tuple(s for s in sizes if s <= fit)
    return kept or (1 << (fit.bit_length() - 1),)


CALL_ENTRIES = 1 << 22
"""The most numbers one call of :func:`padded_call` may return (32 MB in float64); the memory
XLA uses to compute them is several times that (a full model's Hessians, each a
forward-mode derivative through the whole transformer)."""
CALL_SIZES = (512, 1 << 14)
"""The batch sizes :func:`padded_call` pads to; the largest is also the size of its chunks.
None smaller than 512: a portrait or a map makes a few dozen calls of under 16 points, and a
batch size costs a trace (and a compilation when the cache is cold) while 512 points of a
small loss take microseconds.  None larger than 16,384: a larger batch is one more program per
function (the critical search's samples of a 2-parameter loss took a third, of 65,536
points), while chunks of 16,384 points are no slower: ``∇L`` of a two-parameter loss at a
million points took 16 ms in chunks of 16,384 against 18 ms in chunks of 65,536, warm, on
two cores."""
MATRIX_CALL_SIZES = (512,)
"""The one batch size of Hessians and metric tensors, a single point's included
(:meth:`Landscape.point_hessian`): one program per loss, whose bits do not depend on how many
points share a call.  A Hessian program of a symbolic loss takes about a second to compile and
each batch size is compiled on its own.  Warm, on two cores, a call of 512 points of the
canonical model costs about as much as one of a single point (0.23 ms, most of it the call
itself), while 1,344 points in chunks of 16 took 9.7 ms against 0.6 ms in chunks of 512: the
critical sets of a model of three parameters took 2.5 times as long in chunks of 16."""


class ClosedForm(Protocol):
    """A critical set known in closed form: a graph ``θ_dependent = g(θ_free)`` on a condition.

    Attributes:
        name: short name for reports (``"Γ*"``).
        equation: human-readable equation, or ``None``.
        free: indices of the free parameters (their number is the set's dimension).
        dependent: indices of the parameters given by ``g``.
    """

    name: str
    equation: str | None
    free: tuple[int, ...]
    dependent: tuple[int, ...]

    def complete(self, free_points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Full points ``(n, dim)`` from free coordinates ``(n, len(free))``, and a boolean
        ``(n,)`` saying where the point is on the set (condition true, values real)."""
        ...


class Landscape(abc.ABC):
    """A loss ``L(θ)`` over named scalar parameters; batched evaluation in NumPy.

    Points are arrays of shape ``(..., dim)`` in the order of :attr:`param_names`; ``loss``
    returns shape ``(...)``, ``grad`` ``(..., dim)``, ``hessian`` ``(..., dim, dim)``.

    Abstract: :attr:`param_names`, :meth:`loss`, :meth:`grad`, :meth:`hessian` and
    :attr:`field`, what every loss must provide; the other members are what a loss may know
    of itself (closed-form critical sets, conserved quantities, kinks, ranges, names), with
    defaults that claim nothing.
    """

    @property
    @abc.abstractmethod
    def param_names(self) -> tuple[str, ...]:
        """Parameter names in the order of ``θ``."""

    @abc.abstractmethod
    def loss(self, theta: Any) -> np.ndarray:
        """``L(θ)``, shape ``(...)``."""

    @abc.abstractmethod
    def grad(self, theta: Any) -> np.ndarray:
        """``∇L(θ)``, shape ``(..., dim)``."""

    @abc.abstractmethod
    def hessian(self, theta: Any) -> np.ndarray:
        """``∇²L(θ)``, shape ``(..., dim, dim)``; may hold NaN where the loss is not twice
        differentiable in floating point (the classification then falls back)."""

    def point_grad(self, theta: np.ndarray) -> np.ndarray:
        """``∇L`` at one point ``θ`` of shape ``(dim,)``: the per-point path of root finders,
        which call it thousands of times (override it where a faster path exists)."""
        return self.grad(theta)

    def point_hessian(self, theta: np.ndarray) -> np.ndarray:
        """``∇²L`` at one point ``θ`` of shape ``(dim,)``, shape ``(dim, dim)``: the Jacobian of
        :meth:`point_grad` for root finders (override it where a faster path exists)."""
        return self.hessian(theta)

    @property
    @abc.abstractmethod
    def field(self) -> GradientField:
        """The loss and gradient as JAX functions of ``(θ, args)`` for the integrators (the
        flow's: in a metric, ``grad`` is ``G⁻¹∇L``)."""

    @property
    def args(self) -> Any:
        """What ``field`` takes besides ``θ`` (hyperparameters, data)."""
        return None

    @property
    def dim(self) -> int:
        """Number of parameters."""
        return len(self.param_names)

    @property
    def name(self) -> str:
        """A short name for reports and titles."""
        return "loss"

    @property
    def induced_metric(self) -> Callable[[jax.Array, Any], jax.Array] | None:
        """``G(θ, args) = JᵀJ``, the metric the embedding into a full model induces
        (``J = ∂ embed/∂θ``), or ``None`` for a landscape without a full model."""
        return None

    @property
    def hyperparameters(self) -> Mapping[str, float]:
        """Hyperparameter values by name (empty for a landscape without any)."""
        return {}

    @property
    def references(self) -> Mapping[str, float]:
        """Closed-form reference quantities at these hyperparameters (``entropy_rate``,
        ``global_min_loss``, in the loss's unit) that reports print; empty by default."""
        return {}

    @property
    def metric_name(self) -> str:
        """The metric of the flow ``dθ/dt = -G⁻¹∇L`` that :attr:`field` integrates:
        ``"euclidean"`` (``G = I``) unless the landscape is a flow in a metric."""
        return "euclidean"

    @property
    def plane(self) -> tuple[str, str]:
        """The two parameters drawn on portraits, horizontal axis first."""
        names = self.param_names
        if len(names) < 2:
            raise GradflowError(f"{self.name} has one parameter ({names[0]}); a plane needs two")
        return (names[0], names[1])

    def index(self, name: str) -> int:
        """Position of parameter ``name`` in ``θ``.

        Raises:
            GradflowError: unknown name (the message lists the parameters).
        """
        try:
            return self.param_names.index(name)
        except ValueError:
            raise GradflowError(
                f"unknown parameter {name!r} of {self.name}; "
                f"parameters are {', '.join(self.param_names)}"
            ) from None

    def bound(self, name: str) -> tuple[float, float]:
        """The default range ``(lo, hi)`` of parameter ``name``."""
        self.index(name)
        return DEFAULT_BOUND

    def search_box(
        self,
        bounds: Mapping[str, tuple[float, float]] | None = None,
        fixed: Mapping[str, float] | None = None,
        widen: float = 0.0,
    ) -> np.ndarray:
        """A box of parameter space by name: what :func:`gradflow.critical_sets` searches.

        Args:
            bounds: ``{name: (lo, hi)}`` for some parameters; every other keeps its default
                range (:meth:`bound`).
            fixed: ``{name: value}``: parameters pinned at a value (``lo == hi``), a slice.
            widen: each free range widened by this many times its width on each side.

        Returns:
            shape ``(dim, 2)``, rows ``(lo, hi)`` in the order of :attr:`param_names`.

        Raises:
            GradflowError: ``bounds`` not a mapping of ``name: (lo, hi)``, an unknown name,
                ``lo ≥ hi`` or a bound that is not finite, or a fixed value that is not finite.
        """
        from .region import check_range

        ranges = _bounds_mapping(self, bounds)
        for name in [*ranges, *(fixed or {})]:
            self.index(name)
        box = np.array([ranges.get(n, self.bound(n)) for n in self.param_names], dtype=float)
        for name, (lo, hi) in zip(self.param_names, box):
            check_range(name, lo, hi)
        box += widen * (box[:, 1] - box[:, 0])[:, None] * np.array([-1.0, 1.0])
        for name, value in (fixed or {}).items():
            if not np.isfinite(float(value)):
                raise GradflowError(f"fixed {name} = {value!r} must be a finite number")
            box[self.index(name)] = float(value)
        return box

    @property
    def declared_scales(self) -> tuple[float, float] | None:
        """``(ℓ, g)``, the length and gradient scales the landscape fixes itself instead of
        having them measured on its default ranges (:func:`gradflow.loss_scales`), or ``None``.
        A full model declares ``(1, 1)``: its flow time and tolerances are the absolute ones of
        the reduced loss it embeds, whatever its weights' ranges."""
        return None

    @property
    def invariant_names(self) -> tuple[str, ...]:
        """Names of known conserved quantities of the flow."""
        return ()

    def invariant(self, name: str, theta: Any) -> np.ndarray:
        """Conserved quantity ``name`` at ``θ``, shape ``(...)``."""
        raise GradflowError(f"{self.name} declares no conserved quantity {name!r}")

    @property
    def closed_forms(self) -> Sequence[ClosedForm]:
        """Critical sets known in closed form."""
        return ()

    @property
    def set_families(self) -> Mapping[str, str]:
        """Each closed-form set's name → a name that is the same at every hyperparameter value
        (what follows the set across a sweep); by default the name itself."""
        return {piece.name: piece.name for piece in self.closed_forms}

    @property
    def global_min_loss(self) -> float | None:
        """A proven lower bound of ``L`` that is attained (``inf L``), or ``None``."""
        return None

    @property
    def sublevel_shortcut(self) -> bool:
        """Whether a trajectory may be decided once its loss is below every non-global
        critical value (see :func:`gradflow.basins`); only landscapes that prove it say so."""
        return False

    @property
    def critical_sets_complete(self) -> bool:
        """Whether :attr:`closed_forms` hold every critical point (proven by the landscape's
        author), so that no numerical search for others is needed."""
        return False

    @property
    def symbolic_caveats(self) -> tuple[str, ...]:
        """What the report must say about symbolic steps that ran out of their time budget
        (``sympy.solve`` on a rational loss, say); none for a landscape without SymPy."""
        return ()

    @property
    def nonsmooth_terms(self) -> tuple[str, ...]:
        """Terms where ``L`` has kinks (``Abs(x)``, ``Max(0, x)``), empty for a smooth loss."""
        return ()

    def kinks_at(self, theta: np.ndarray) -> list[str]:
        """The non-smooth terms whose kink passes through the point ``θ`` (shape ``(dim,)``)."""
        return []

    def kink_values(self, theta: Any) -> tuple[np.ndarray, np.ndarray]:
        """The kink function ``k`` of each of :attr:`nonsmooth_terms` (``u`` for ``|u|``,
        ``a - b`` for ``max(a, b)``: zero on the kink) and its gradient, at points of shape
        ``(..., dim)``: shapes ``(..., K)`` and ``(..., K, dim)``, ``K`` the number of terms."""
        theta = np.asarray(theta, dtype=float)
        shape = theta.shape[:-1]
        return np.zeros((*shape, 0)), np.zeros((*shape, 0, theta.shape[-1]))

    @property
    def kinks(self) -> Kinks | None:
        """The loss written with a slope per kink and the surfaces the kinks lie on
        (:class:`gradflow.Kinks`), for the flow that slides along them
        (:func:`gradflow.slide`); ``None`` for a smooth loss or one whose kinks are not
        described so."""
        return None

    @property
    def title(self) -> str:
        """``name, h1 = v1, h2 = v2`` for figure titles."""
        hyper = ", ".join(f"{k} = {v:g}" for k, v in self.hyperparameters.items())
        return f"{self.name}, {hyper}" if hyper else self.name

    @property
    def loss_unit(self) -> str:
        """The unit of ``L`` for labels (``"nats"`` for cross-entropies), or ``""``."""
        return ""

    def describe(self) -> dict[str, Any]:
        """JSON-ready record of what the landscape is (name, parameters, hyperparameters)."""
        return {
            "model": self.name,
            "parameters": list(self.param_names),
            "hyperparameters": dict(self.hyperparameters),
        }


def _bounds_mapping(
    landscape: Landscape, bounds: Mapping[str, tuple[float, float]] | None
) -> dict[str, tuple[float, float]]:
    """``bounds`` checked to be ``{name: (lo, hi)}`` with two numbers each.

    Raises:
        GradflowError: anything else, in one line that shows the expected form with this
            landscape's names (a plane box ``(xmin, xmax, ymin, ymax)``, the box of a
            :class:`gradflow.Region`, is named as such).
    """
    names = landscape.param_names
    example = "{" + ", ".join(f"{n!r}: (-3, 3)" for n in names[:2]) + "}"
    if bounds is None:
        return {}
    if not isinstance(bounds, Mapping):
        plane = (
            "; a plane box (xmin, xmax, ymin, ymax) is the box of a Region"
            if isinstance(bounds, (tuple, list))
            and len(bounds) == 4
            and all(isinstance(v, (int, float)) for v in bounds)
            else ""
        )
        raise GradflowError(
            f"bounds must map parameter names to (lo, hi), e.g. {example}; got {bounds!r}{plane}"
        )
    out = {}
    for name, pair in bounds.items():
        try:
            lo, hi = (float(v) for v in pair)
        except (TypeError, ValueError):
            raise GradflowError(
                f"bounds[{name!r}] = {pair!r}: expected (lo, hi), e.g. {example}"
            ) from None
        out[name] = (lo, hi)
    return out
