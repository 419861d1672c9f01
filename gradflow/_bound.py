"""A reduced model at fixed hyperparameter values: the object users work with."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jax.numpy as jnp
import numpy as np
import sympy as sp

from ._compiled import CompiledModel, compile_model
from ._model import ReducedModel

if TYPE_CHECKING:
    from ._basins import BasinMap
    from ._critical import CriticalSet
    from ._flow import FlowOptions, Trajectory
    from ._portrait import Portrait

__all__ = ["BoundModel"]


@dataclass(frozen=True, eq=False)
class BoundModel:
    """A :class:`ReducedModel` at validated hyperparameter values.

    Build it with ``model.bind(p=0.7, q=0.6)`` or a model's factory such as
    ``gradflow.models.markov.canonical(p=0.7, q=0.6)``.  Its methods are thin wrappers over the
    engine's free functions (:func:`gradflow.critical_sets`, :func:`gradflow.flow`,
    :func:`gradflow.basins`, :func:`gradflow.portrait`).
    """

    model: ReducedModel
    values: Mapping[str, float]

    @property
    def h(self) -> jnp.ndarray:
        """Hyperparameter values as a float64 array, in the order of ``model.hyperparams``."""
        return jnp.asarray([self.values[n] for n in self.model.hyperparam_names], dtype=jnp.float64)

    @property
    def compiled(self) -> CompiledModel:
        """The model's compiled JAX functions (shared by all hyperparameter values)."""
        return compile_model(self.model)

    @functools.cached_property
    def references(self) -> dict[str, float]:
        """The model's closed-form reference quantities at these hyperparameters (e.g. nats)."""
        subs = {s: self.values[s.name] for s in self.model.hyperparams}
        out = {name: float(expr.subs(subs)) for name, expr in self.model.references.items()}
        if self.model.global_min_loss is not None:
            out.setdefault("global_min_loss", float(self.model.global_min_loss.subs(subs)))
        return out

    @functools.cached_property
    def notes(self) -> list[str]:
        """The model's notes whose condition holds at these hyperparameters."""
        subs = {s: self.values[s.name] for s in self.model.hyperparams}
        return [text for text, cond in self.model.notes.items() if bool(cond.subs(subs))]

    @property
    def global_min_loss(self) -> float | None:
        """``inf L`` in closed form, nats, or ``None`` if the model does not declare it."""
        if self.model.global_min_loss is None:
            return None
        subs = {s: self.values[s.name] for s in self.model.hyperparams}
        return float(sp.N(self.model.global_min_loss.subs(subs)))

    def loss(self, theta: Any) -> np.ndarray:
        """``L(θ)`` in nats for ``θ`` of shape ``(..., dim)``."""
        return self._evaluate(self.compiled.loss, theta, ())

    def grad(self, theta: Any) -> np.ndarray:
        """``∇L(θ)``, shape ``(..., dim)``."""
        return self._evaluate(self.compiled.grad, theta, (self.model.dim,))

    def hessian(self, theta: Any) -> np.ndarray:
        """``∇²L(θ)``, shape ``(..., dim, dim)``."""
        return self._evaluate(self.compiled.hessian, theta, (self.model.dim, self.model.dim))

    def invariant(self, name: str, theta: Any) -> np.ndarray:
        """Conserved quantity ``name`` at ``θ``, shape ``(...)``."""
        return self._evaluate(self.compiled.invariants[name], theta, ())

    def _evaluate(self, fn: Any, theta: Any, tail: tuple[int, ...]) -> np.ndarray:
        """Apply a compiled function to points of shape ``(..., dim)``.

        The points are padded to a power-of-two batch so that calls with different numbers of
        points share a few compiled shapes instead of compiling one each.
        """
        arr = np.asarray(theta, dtype=np.float64)
        flat = arr.reshape(-1, self.model.dim)
        n = flat.shape[0]
        size = max(16, 1 << max(n - 1, 0).bit_length())
        padded = np.zeros((size, self.model.dim))
        padded[:n] = flat
        out = np.asarray(fn(jnp.asarray(padded), self.h))[:n]
        return out.reshape(arr.shape[:-1] + tail)

    def critical_points(self, **kwargs: Any) -> list[CriticalSet]:
        """Critical sets, classified; see :func:`gradflow.critical_sets`."""
        from ._critical import critical_sets

        return critical_sets(self, **kwargs)

    def flow(self, theta0: Any, options: FlowOptions | None = None) -> Trajectory:
        """One trajectory to convergence; see :func:`gradflow.flow`."""
        from ._flow import flow

        return flow(self, theta0, options)

    def basins(self, **kwargs: Any) -> BasinMap:
        """Basin map on a grid; see :func:`gradflow.basins`."""
        from ._basins import basins

        return basins(self, **kwargs)

    def portrait(self, **kwargs: Any) -> Portrait:
        """Phase portrait; see :func:`gradflow.portrait`."""
        from ._portrait import portrait

        return portrait(self, **kwargs)

    def __repr__(self) -> str:
        hyper = ", ".join(f"{k}={v:g}" for k, v in self.values.items())
        return f"{self.model.name}({hyper})"
