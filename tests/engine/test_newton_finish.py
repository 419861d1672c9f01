"""The Newton endpoint of a member stalled beside a nondegenerate minimum, against answers worked
out by hand.

- ``x⁴/4 − a x²/2 + y²/2`` at ``a = 1/2``: minima ``(±1/√2, 0)`` with Hessian ``diag(2a, 1) = I``,
  a saddle at the origin.  Started on the saddle's unstable manifold ``y = 0``, Tsit5's steps
  grow to its stability limit at the minimum and the iterate hovers ``rtol·|x| ≈ 7e-7`` from it,
  above the steady-state test, for the whole 2,000-step budget of the first stage.
- ``x⁴/4 − x²/2 + y²/2`` from ``x0 = 1/2``: ``f'(1/2) = −3/8``, ``f''(1/2) = −1/4``, so one
  Newton step lands exactly on the minimum ``x = −1`` although the flow goes to ``x = +1``.
- ``x⁴ + y²``: its minimum is degenerate (``f''(0) = 0``); ``x² − y²``: a saddle.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from gradflow import (
    FlowOptions,
    GradientField,
    Outcome,
    StopRule,
    default_basin_options,
    flow_endpoints,
    loss_model,
)
from gradflow._flow.newton_finish import newton_finish

GTOL = 1e-8
OPTIONS = FlowOptions(solver="Tsit5", stop=StopRule(gtol=1.0))


def _well(t: jnp.ndarray) -> jnp.ndarray:
    return t[0] ** 4 / 4 - t[0] ** 2 / 2 + t[1] ** 2 / 2


FIELDS: dict = {}
"""One field per loss, so that its test compiles once."""


def _finish(loss, points: list[list[float]]) -> tuple[np.ndarray, np.ndarray]:
    field = FIELDS.setdefault(loss, GradientField.from_loss(lambda t, _: loss(t)))
    test = newton_finish(field, OPTIONS)
    ok, x = test(jnp.asarray(points, dtype=float), None, -jnp.inf, GTOL)
    return np.asarray(ok), np.asarray(x)


def test_a_member_stalled_at_the_stability_limit_ends_on_the_minimum() -> None:
    """Without the test these members spend the first stage's 2,000 steps and finish in the
    implicit stage within ``gtol`` of the minimum; with it they stop on it to rounding."""
    pitchfork = loss_model("x**4/4 - a*x**2/2 + y**2/2", ["x", "y"], ["a"]).bind(a=0.5)
    starts = np.array([[0.15, 0.0], [-0.15, 0.0]])
    result = flow_endpoints(pitchfork, starts, default_basin_options(), progress=False)
    np.testing.assert_array_equal(result.status, [Outcome.CONVERGED] * 2)
    ends = np.array([[np.sqrt(0.5), 0.0], [-np.sqrt(0.5), 0.0]])
    np.testing.assert_allclose(result.endpoints, ends, rtol=0, atol=1e-12)
    assert result.steps.max() < default_basin_options()[0].max_steps


def test_near_a_nondegenerate_minimum_the_limit_is_the_minimum() -> None:
    ok, x = _finish(_well, [[1 + 1e-6, 2e-6]])
    assert ok[0]
    np.testing.assert_allclose(x[0], [1.0, 0.0], rtol=0, atol=1e-15)


@pytest.mark.parametrize(
    ("loss", "point"),
    [
        pytest.param(lambda t: t[0] ** 4 + t[1] ** 2, [1e-3, 1e-6], id="degenerate minimum"),
        pytest.param(lambda t: t[0] ** 2 - t[1] ** 2, [1e-6, 1e-6], id="saddle"),
        pytest.param(_well, [0.5, 0.0], id="Newton lands on the other well"),
        pytest.param(_well, [0.7, 0.0], id="too far for the test"),
    ],
)
def test_the_limit_is_refused_where_the_flow_may_end_elsewhere(loss, point) -> None:
    """A degenerate minimum or a saddle fails the positive-definite Hessian; from ``x0 = 1/2``
    Newton reaches ``−1`` but the Hessian at the start is ``−1/4``; from ``x0 = 0.7`` the flow
    does end at ``+1``, but the ball the test needs, ``ρ² = 8·0.357·0.3/2``, reaches
    ``x ≈ 0.35`` where ``f'' = 3x² − 1 < 0``: the test is conservative, never wrong."""
    ok, _ = _finish(loss, [point])
    assert not ok[0]
