"""Runs that crossed a surface where the Hessian jumps, integrated again more tightly.

On ``L = 2y|y| + (x + 0.3)²`` the gradient ``(2(x + 0.3), 4|y|)`` is continuous (``L`` is C¹), but
the Hessian jumps across ``y = 0``: from ``y > 0`` the flow decays as ``y = y₀e^{-4t}`` and never
reaches ``y = 0`` (the field is Lipschitz, the line invariant), while below it ``y`` grows as
``e^{4t}``.  A solver whose absolute tolerance allows an error of ``atol`` steps across once
``y < atol`` and the run diverges.  A run whose start and end lie on strictly opposite sides of
such a surface — the zero set of the argument of an ``Abs``, ``sign`` or ``Heaviside`` in
``∇L`` — is integrated again with the absolute tolerance :data:`TIGHT` times smaller, which
resolves ``y`` relative to itself down to ``atol·TIGHT``.  A run that crosses a kink for real
crosses it again, and keeps its end.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import numpy as np
import sympy as sp

from .._critical.interval_system import _clean
from .._landscape.base import Landscape
from .._symbolic.kept import kept_value, written
from .._symbolic.lowering import lambdify_numpy
from .._symbolic.model import BoundModel, ReducedModel
from .options import PID, FlowOptions

__all__ = ["TIGHT", "crossed", "tightened"]

TIGHT = 1e-12
"""The factor by which a crossing run's absolute tolerance shrinks."""


@functools.cache
def _surfaces(model: ReducedModel) -> Callable[..., np.ndarray] | None:
    """The arguments of the ``Abs`` in ``∇L`` (written without spurious signs: ``y·sign(y)`` is
    ``|y|``) whose zero set no ``sign`` or ``Heaviside`` of ``∇L`` jumps across, as one NumPy
    function of ``(θ, h)``, or ``None`` where there are none: there ``∇L`` is continuous and
    only the Hessian jumps (a kink across which ``∇L`` jumps is the sliding flow's).  The
    arguments are kept between processes (:func:`gradflow._symbolic.kept.kept_value`)."""
    parts = [sp.srepr(model.params), written(model.loss)]
    args = kept_value("surfaces", parts, lambda: _abs_arguments(model.params, model.loss), list)
    if not args:
        return None
    return lambdify_numpy([*model.params, *model.hyperparams], args)


def _abs_arguments(params: tuple[sp.Symbol, ...], loss: sp.Expr) -> list[sp.Expr]:
    """The arguments of :func:`_surfaces`, worked out in SymPy."""
    grad = [_clean(sp.diff(loss, s), params) for s in params]
    jumps = {atom.args[0] for g in grad for atom in g.atoms(sp.sign, sp.Heaviside)}
    args = []
    for g in grad:
        for atom in g.atoms(sp.Abs):
            arg = atom.args[0]
            if arg.free_symbols & set(params) and arg not in args and arg not in jumps:
                args.append(arg)
    return args


def crossed(landscape: Landscape, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Whether each run (starts and ends of shape ``(n, dim)``) ends on the strictly opposite
    side of a surface where the Hessian jumps from its start; shape ``(n,)``."""
    out = np.zeros(len(starts), dtype=bool)
    if not isinstance(landscape, BoundModel) or not len(starts):
        return out
    surfaces = _surfaces(landscape.model)
    if surfaces is None:
        return out
    hyper = [float(landscape.values[s.name]) for s in landscape.model.hyperparams]
    with np.errstate(all="ignore"):
        before = np.atleast_2d(np.asarray(surfaces(*starts.T, *hyper), dtype=float))
        after = np.atleast_2d(np.asarray(surfaces(*ends.T, *hyper), dtype=float))
    before = np.broadcast_to(before, (before.shape[0], len(starts)))
    after = np.broadcast_to(after, (after.shape[0], len(starts)))
    return np.any(before * after < 0, axis=0)


def tightened(options: FlowOptions) -> FlowOptions | None:
    """``options`` with the absolute tolerance :data:`TIGHT` times smaller, or ``None`` where
    its steps are not error-controlled (gradient descent, a constant step)."""
    controller = options.controller
    if options.descent or not isinstance(controller, PID):
        return None
    return dataclasses.replace(
        options, controller=dataclasses.replace(controller, atol=controller.atol * TIGHT)
    )
