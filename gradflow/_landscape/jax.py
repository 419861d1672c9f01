"""A loss written directly in JAX, as a :class:`~gradflow.Landscape`.

Critical sets (numerical search only: there is no symbolic form), flows, basins, separatrices
and portraits then work on it as on a reduced model declared in SymPy.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from .._errors import GradflowError
from .base import DEFAULT_BOUND, MATRIX_CALL_SIZES, GradientField, Landscape, padded_call

__all__ = ["JaxLandscape"]


@dataclass(frozen=True, eq=False)
class JaxLandscape(Landscape):
    """A JAX loss ``fn(θ, args) -> scalar`` over flat parameters ``θ`` of shape ``(dim,)``.

    The gradient and Hessian come from automatic differentiation (``jax.grad``, ``jax.hessian``),
    compiled once per landscape object.

    Args:
        fn: the loss.
        names: the parameter names, in the order of ``θ``.
        fn_args: what ``fn`` takes besides ``θ`` (data, hyperparameters).
        label: a name for reports.
        ranges: ``{name: (lo, hi)}`` default ranges (others ``(-3, 3)``).
        lower_bound: a proven lower bound of ``fn`` that is attained, if known: sets with this
            loss are reported as global minima (nothing else is).
        scales: ``(ℓ, g)``, the length and gradient scales every tolerance and flow time is
            read in (:func:`gradflow.loss_scales`), where they should not be measured on the
            default ranges: a full model compared with the reduced loss it embeds takes that
            loss's scales, so that their flows have one budget of time (measured on its
            weights' default ranges, a full model's gradients are huge and its time unit tiny).

    Raises:
        GradflowError: no or repeated parameter names, an unknown name in ``ranges``, an
            ``fn`` that cannot be called as ``fn(θ, args)`` on ``len(names)`` parameters (it
            reads ``θ[k]`` past the last name, or takes one argument), or names past the last
            parameter ``fn`` reads (where it reads ``θ`` only by indexing: ``θ[0]``, ``θ[1:3]``; a
            parameter before it that the loss does not read is allowed: ``½y²`` over ``(x, y)``),
            or ``scales`` that are not two positive finite numbers.
    """

    fn: Callable[[jax.Array, Any], jax.Array]
    names: Sequence[str]
    fn_args: Any = None
    label: str = "JAX loss"
    ranges: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    lower_bound: float | None = None
    scales: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if self.scales is not None and not (
            len(self.scales) == 2 and all(0 < float(v) < float("inf") for v in self.scales)
        ):
            raise GradflowError(
                f"scales = {self.scales!r} must be two positive finite numbers (ℓ, g)"
            )
        names = tuple(self.names)
        if not names or len(set(names)) != len(names):
            raise GradflowError(f"parameter names must be distinct and not empty, got {names}")
        object.__setattr__(self, "names", names)
        for name in self.ranges:
            self.index(name)
        read = _read_indices(self.fn, len(names), self.fn_args)
        if read is not None and max(read, default=-1) < len(names) - 1:
            shown = ", ".join(f"θ[{i}]" for i in sorted(read)) or "no parameter"
            raise GradflowError(
                f"names has {len(names)} entries ({', '.join(names)}) but the loss reads only "
                f"{shown}: give one name per parameter, in the order of θ"
            )

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(self.names)

    @property
    def name(self) -> str:
        return self.label

    @property
    def args(self) -> Any:
        return self.fn_args

    @property
    def global_min_loss(self) -> float | None:
        return self.lower_bound

    @property
    def declared_scales(self) -> tuple[float, float] | None:
        return None if self.scales is None else (float(self.scales[0]), float(self.scales[1]))

    def bound(self, name: str) -> tuple[float, float]:
        self.index(name)
        lo, hi = self.ranges.get(name, DEFAULT_BOUND)
        return (float(lo), float(hi))

    @functools.cached_property
    def field(self) -> GradientField:
        return GradientField.from_loss(self.fn)

    @functools.cached_property
    def _batched(self) -> tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]:
        f = self.field
        return (
            jax.jit(jax.vmap(f.loss, in_axes=(0, None))),
            jax.jit(jax.vmap(f.grad, in_axes=(0, None))),
            jax.jit(jax.vmap(jax.jacfwd(f.grad), in_axes=(0, None))),
        )

    @functools.cached_property
    def _at_point(self) -> tuple[Callable[..., Any], Callable[..., Any]]:
        f = self.field
        return jax.jit(f.grad), jax.jit(jax.jacfwd(f.grad))

    def point_grad(self, theta: np.ndarray) -> np.ndarray:
        return np.asarray(self._at_point[0](np.asarray(theta, np.float64), self.fn_args))

    def point_hessian(self, theta: np.ndarray) -> np.ndarray:
        """``∇²L`` at one point, through a program of one point: a JAX loss may be a full
        model, whose Hessian padded to the batch of :data:`MATRIX_CALL_SIZES` points would
        cost one Hessian per padded point."""
        return np.asarray(self._at_point[1](np.asarray(theta, np.float64), self.fn_args))

    def loss(self, theta: Any) -> np.ndarray:
        return padded_call(self._batched[0], theta, self.dim, (), self.fn_args)

    def grad(self, theta: Any) -> np.ndarray:
        return padded_call(self._batched[1], theta, self.dim, (self.dim,), self.fn_args)

    def hessian(self, theta: Any) -> np.ndarray:
        return padded_call(
            self._batched[2], theta, self.dim, (self.dim, self.dim), self.fn_args, MATRIX_CALL_SIZES
        )


def _read_indices(fn: Callable[..., Any], n: int, args: Any) -> set[int] | None:
    """The indices of ``θ`` (shape ``(n,)``) that ``fn(θ, args)`` reads, where it reads ``θ``
    only through slices (``θ[0]``, ``θ[1:3]``); ``None`` where it uses the whole array
    (``θ @ θ``: every index counts as read).

    Raises:
        GradflowError: ``fn`` cannot be traced on ``n`` parameters: it is not called as
            ``fn(θ, args)``, or it indexes ``θ`` past ``n``.
    """
    try:
        try:
            fn(np.zeros(n), args)  # NumPy refuses an index past n, which JAX clamps
        except IndexError:
            raise
        except Exception:  # noqa: BLE001  (anything else is the traced call's to report)
            pass
        closed = jax.make_jaxpr(lambda theta: fn(theta, args))(jax.numpy.zeros(n))
    except (TypeError, IndexError, ValueError) as error:
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise GradflowError(
            f"the JAX loss cannot be called as fn(θ, args) with θ of {n} parameters "
            f"(one per name): {detail}"
        ) from None
    jaxpr = closed.jaxpr
    theta = jaxpr.invars[0]
    if any(v is theta for v in jaxpr.outvars):
        return None
    read: set[int] = set()
    for eqn in jaxpr.eqns:
        if not any(v is theta for v in eqn.invars):
            continue
        if eqn.primitive.name != "slice":
            return None
        start, stop = eqn.params["start_indices"][0], eqn.params["limit_indices"][0]
        strides = eqn.params.get("strides")
        read.update(range(start, stop, strides[0] if strides else 1))
    return read
