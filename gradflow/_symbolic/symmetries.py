"""Sign symmetries of a loss: sign patterns ``s ∈ {±1}ᵈ`` with ``L(s ⊙ θ) = L(θ)`` identically.

The image of a critical point under such a symmetry is a critical point of the same kind and
loss, so the numerical search adds the images of what it finds (the two mirror-image minima of
three Lennard-Jones atoms in a plane, ``(1.122462, 0.561231, ±0.972081)``).  A pattern is first
screened at seeded random points (cheap, rejects nearly all), then proven in SymPy: the
difference ``L(s ⊙ θ) − L(θ)`` simplifies to zero (expanded, for a polynomial; else
``sympy.simplify``), within :data:`SYMMETRY_SECONDS` of CPU time per model; a pattern not proven
in time is not used.  Hyperparameters stay symbols: a symmetry holds at every value.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
import sympy as sp

from .._errors import GradflowError
from .budget import OutOfTime, within
from .lowering import lambdify_numpy
from .model import ReducedModel

__all__ = ["MAX_DIM", "SYMMETRY_SECONDS", "sign_symmetries"]

MAX_DIM = 10
"""Sign patterns are looked for up to this many parameters (``2ᵈ − 1`` candidates)."""
SYMMETRY_SECONDS = 2.0
"""CPU seconds the symbolic proofs of a model's sign symmetries may take together."""
SCREEN_POINTS = 4
"""Seeded random points at which a candidate pattern is screened numerically."""


@functools.cache
def sign_symmetries(model: ReducedModel) -> tuple[tuple[int, ...], ...]:
    """The sign patterns ``s ≠ (1, …, 1)`` with ``L(s ⊙ θ) ≡ L(θ)``, each a tuple of ``±1`` of
    length ``dim``, proven in SymPy (module docstring); none beyond :data:`MAX_DIM` parameters
    or where the proofs run out of time."""
    params, hyper = list(model.params), list(model.hyperparams)
    if len(params) > MAX_DIM:
        return ()
    try:
        loss = lambdify_numpy([*params, *hyper], [model.loss])
    except GradflowError:
        return ()
    rng = np.random.default_rng(0)
    points = rng.uniform(0.3, 1.7, size=(SCREEN_POINTS, len(params) + len(hyper)))
    points *= rng.choice([-1.0, 1.0], size=points.shape)
    with np.errstate(all="ignore"):
        base = np.array([np.asarray(loss(*p), dtype=float).ravel()[0] for p in points])
    candidates = []
    for signs in itertools.product((1, -1), repeat=len(params)):
        if all(s == 1 for s in signs):
            continue
        flipped = points.copy()
        flipped[:, : len(params)] *= signs
        with np.errstate(all="ignore"):
            values = np.array([np.asarray(loss(*p), dtype=float).ravel()[0] for p in flipped])
        close = np.isclose(values, base, rtol=1e-9, atol=1e-12) | (
            ~np.isfinite(values) & ~np.isfinite(base)
        )
        if np.all(close):
            candidates.append(signs)
    if not candidates:
        return ()
    try:
        return within(
            "the sign symmetries of L", _proven, model, tuple(candidates), seconds=SYMMETRY_SECONDS
        )
    except OutOfTime:
        return ()


def _proven(
    model: ReducedModel, candidates: tuple[tuple[int, ...], ...]
) -> tuple[tuple[int, ...], ...]:
    """The candidates whose difference ``L(s ⊙ θ) − L(θ)`` SymPy reduces to zero."""
    out = []
    polynomial = model.loss.is_polynomial(*model.params)
    for signs in candidates:
        flip = {p: -p for p, s in zip(model.params, signs) if s < 0}
        difference = model.loss.xreplace(flip) - model.loss
        reduced = sp.expand(difference) if polynomial else sp.simplify(difference)
        if reduced == 0:
            out.append(signs)
    return tuple(out)
