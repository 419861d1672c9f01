"""Names in a loss written as text, and the names of the critical sets found.

- ``lambda`` is a Python keyword: it cannot name a symbol, and the error says so.
- ``E`` is Euler's number in a loss: a parameter named ``E`` clashes with it, and the error
  names the clash; ``I`` is an ordinary real symbol.
- ``∇(x² + y²)⁴ = 8(x² + y²)³(x, y)`` vanishes where ``x² + y² = 0``; ``sympy.solve`` writes
  that as the complex line ``y = −i x``, whose only real point is the origin: the set is the
  point ``x = 0, y = 0``, a global minimum (``L ≥ 0`` is proven and ``L(0) = 0``).
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow


def test_a_keyword_is_named_as_one() -> None:
    with pytest.raises(gradflow.GradflowError, match="'lambda' is a Python keyword"):
        gradflow.loss_model("x**2 + lambda*y**2")
    with pytest.raises(gradflow.GradflowError, match="'lambda' is a Python keyword"):
        gradflow.loss_model("x**2 + y**2", params=("x", "lambda"))


def test_a_parameter_named_e_clashes_with_euler_s_number() -> None:
    with pytest.raises(gradflow.GradflowError, match="E clashes with Euler's number"):
        gradflow.loss_model("E**2 + I**2", params=("E", "I"))
    model = gradflow.loss_model("(I - 1)**2 + x**2", params=("x", "I"))
    assert [s.name for s in model.params] == ["x", "I"]


def test_a_complex_line_with_one_real_point_is_named_as_the_point() -> None:
    model = gradflow.loss_model("(x**2 + y**2)**4", params=("x", "y")).bind()
    sets = gradflow.critical_sets(model, starts=8)
    (origin,) = sets
    assert origin.kind == "global_min"
    assert (origin.equation or origin.name) == "x = 0, y = 0"
    np.testing.assert_allclose(origin.sample, 0.0, atol=1e-12)
    assert origin.evidence.proven and "L ≥ 0" in origin.evidence.reason
