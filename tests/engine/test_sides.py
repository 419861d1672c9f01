"""The coordinate hyperplanes on which the loss is a constant at least a level: the floors that
tell which component of the global minima a flow below the level reaches.  Values worked out by
hand:

- ``L = xy + x² + sin²y + cos²y``: on ``x = 0``, ``L = sin²y + cos²y = 1``, a constant that only
  simplification shows; on ``y = 0``, ``L = x² + 1``, not a constant.
- The canonical model at ``(p, q) = (0.7, 0.6)``: on ``e = 0`` the model predicts the stationary
  distribution ``π = (q, p)/(p + q)`` at every position, so ``L = H(π)``, the entropy of ``π``
  in nats; on ``w = 0`` the loss still varies with ``e``.
"""

from __future__ import annotations

import math

import pytest

import gradflow
from gradflow._critical.sides import _constant_floors
from gradflow.systems import markov


@pytest.mark.parametrize(("level", "floors"), [(0.5, [(0, 1.0)]), (1.5, [])])
def test_a_hyperplane_constant_only_after_simplification(level, floors) -> None:
    model = gradflow.loss_model("x*y + x**2 + sin(y)**2 + cos(y)**2", ["x", "y"], name="trig")
    assert _constant_floors(model.bind(), level) == floors


def test_the_canonical_loss_on_e_0_is_the_entropy_of_pi() -> None:
    p, q = 0.7, 0.6
    pi = (q / (p + q), p / (p + q))
    entropy = -sum(x * math.log(x) for x in pi)
    ((index, value),) = _constant_floors(markov.canonical(p, q), 0.65)
    assert index == 0
    assert value == pytest.approx(entropy, rel=1e-12)
