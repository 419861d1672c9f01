"""The evidence of a flow's end: converged to a set only where proven, never a kind without a
critical point, escapes proven by interval arithmetic, and a divergence radius relative to the
problem.  Every answer is worked out by hand in the test's docstring."""

from __future__ import annotations

import json
import math

import jax.numpy as jnp
import numpy as np
import pytest

import gradflow
from gradflow import Outcome


def model(text: str) -> gradflow.BoundModel:
    return gradflow.loss_model(text, params=("x", "y")).bind()


def test_an_infimum_at_infinity_is_no_convergence() -> None:
    """L = e^{-x} + y²: ∂L/∂x = -e^{-x} never vanishes, so there is no critical point at all.
    From (0, 1): x' = e^{-x}, so e^x = 1 + t, and y = e^{-2t} → 0.  The run meets the
    relative steady-state test long before its budget ends (‖∇L‖ = 1/(1 + t)); it must not
    say converged: not_converged, proven to escape (∂L/∂x < 0 on every box), and run on past
    the false stop along e^x = 1 + t."""
    path = gradflow.flow(model("exp(-x) + y**2"), [0.0, 1.0])
    assert path.reached is Outcome.NOT_CONVERGED and path.attractor is None
    assert path.evidence.proven and "escaping" in path.evidence.reason
    x, y = path.endpoint
    assert x == pytest.approx(math.log1p(path.time), abs=1e-3) and abs(y) < 1e-6
    assert path.time > 1e6


def test_logistic_loss_of_a_product_has_no_minimum() -> None:
    """L = log(1 + e^{-xy}): ∇L = -σ(-xy)(y, x) vanishes only at the origin, where
    L = log 2 > L(1, 0.5) = log(1 + e^{-1/2}) ≈ 0.474, so {L ≤ L(θ₀)} holds no critical point;
    x x' = y y' = xy σ(-xy) conserves x² - y² = 0.75 while xy → ∞ (Soudry et al., JMLR 2018:
    the infimum is at infinity)."""
    path = gradflow.flow(model("log(1 + exp(-x*y))"), [1.0, 0.5])
    assert path.reached is Outcome.NOT_CONVERGED and path.evidence.proven
    x, y = path.endpoint
    assert x * x - y * y == pytest.approx(0.75, rel=1e-4) and x * y > 10


def test_separable_logistic_loss_from_the_origin() -> None:
    """L = log(1 + e^{-x}) + log(1 + e^{-y}): each partial is -σ(-·) < 0, no critical point;
    from (0, 0) the two coordinates stay equal and grow without bound."""
    path = gradflow.flow(model("log(1 + exp(-x)) + log(1 + exp(-y))"), [0.0, 0.0])
    assert path.reached is Outcome.NOT_CONVERGED and path.evidence.proven
    x, y = path.endpoint
    assert x == pytest.approx(y, rel=1e-9) and x > 10


def test_the_ghost_of_a_saddle_node_diverges_when_the_tangent_says() -> None:
    """L = (x - 1)³/3 + εx + y²/2, ε = 10⁻⁸: ∂L/∂x = (x - 1)² + ε > 0, no critical point.
    With u = x - 1: u' = -(u² + ε), so u(t) = √ε tan(atan(u₀/√ε) - √ε t) from u₀ = 1: it
    passes the ghost at u = 0 slowly (‖∇L‖ ≈ ε there, which meets the steady-state test) and
    blows up to -∞ where the tangent's argument reaches -π/2, at
    t* = (atan(10⁴) + π/2)/10⁻⁴ = π·10⁴ - 1 + O(10⁻⁸) ≈ 31414.93.  It reaches the divergence
    radius R a time ≈ 1/R before t*.  Beside the ghost u moves at ε = 10⁻⁸, so a step's
    error δ in u moves the time by δ/ε: at the default atol = 10⁻⁹, 0.1 a step over the
    ghost's tens of steps; at atol = 10⁻¹¹ (rtol = 10⁻⁹), 10⁻³ a step, well within 0.5."""
    tight = gradflow.FlowOptions(controller=gradflow.PID(rtol=1e-9, atol=1e-11))
    path = gradflow.flow(model("(x - 1)**3/3 + 1e-8*x + y**2/2"), [2.0, 0.0], tight)
    blow_up = (math.atan(1e4) + math.pi / 2) / 1e-4
    assert blow_up == pytest.approx(31414.93, abs=0.01)
    assert path.reached is Outcome.DIVERGED and path.evidence.proven
    assert path.time == pytest.approx(blow_up, abs=0.5)


def test_a_minimum_far_from_the_origin_is_no_divergence() -> None:
    """L = ((x - 10⁴)² + (y - 10⁴)²)/2 from (9999, 10001): the flow is θ* + (θ₀ - θ*)e^{-t},
    converging to (10⁴, 10⁴), a non-degenerate minimum (Hessian I) whose certified box holds
    the endpoint: proven.  A fixed radius of 10⁴ called it diverged at t = 0."""
    path = gradflow.flow(model("((x - 10000)**2 + (y - 10000)**2)/2"), [9999.0, 10001.0])
    assert path.reached is Outcome.GLOBAL_MIN
    np.testing.assert_allclose(path.endpoint, [1e4, 1e4], atol=1e-5)
    assert path.evidence.proven and "certified region" in path.evidence.reason


def test_a_well_of_a_double_well_is_proven() -> None:
    """L = (x² - 1)² + y² from (0.5, 0.5): x' = -4x(x² - 1) > 0 on (0, 1), so x → 1, y → 0:
    the minimum (1, 0), Hessian diag(8, 2), non-degenerate, hence a certified region of
    attraction the endpoint lies in."""
    landscape = model("(x**2 - 1)**2 + y**2")
    critical = gradflow.critical_sets(landscape, box=np.array([[-2.0, 2.0], [-2.0, 2.0]]))
    path = gradflow.flow(landscape, [0.5, 0.5], critical=critical)
    assert path.reached is Outcome.GLOBAL_MIN
    np.testing.assert_allclose(path.attractor.point, [1.0, 0.0], atol=1e-9)
    assert path.evidence.proven
    assert path.metadata()["evidence"] == {"evidence": "proven", "reason": path.evidence.reason}


def test_the_command_line_says_escaping_not_converged(cli) -> None:
    """`gradflow flow` on e^{-x} + y² from (0, 1) (first test): not converged, proven, in the
    JSON and in the text."""
    argv = ["flow", "--loss", "exp(-x) + y**2", "--params", "x,y", "--init", "0", "1"]
    code, out, _ = cli(*argv, "--json")
    result = json.loads(out)
    assert code == 0 and result["reached"] == "not_converged" and not result["converged"]
    assert result["evidence"]["evidence"] == "proven"
    assert "escaping" in result["evidence"]["reason"]


def test_a_flow_of_many_parameters_converges_without_refinement() -> None:
    """``½‖θ − c‖²`` over 100 parameters from the origin: the flow converges to ``c`` and is
    neither refined nor classified (a dense Hessian per Levenberg–Marquardt step), so it ends
    ``CONVERGED`` with numerical evidence that says why."""
    from gradflow._flow.reached import REFINED_DIM

    dim = REFINED_DIM + 36
    c = np.linspace(-1.0, 1.0, dim)
    names = [f"t{i}" for i in range(dim)]
    landscape = gradflow.JaxLandscape(lambda th, _: 0.5 * jnp.sum((th - c) ** 2), names)
    path = gradflow.flow(landscape, np.zeros(dim), gradflow.FlowOptions(solver="Tsit5"))
    assert path.reached is Outcome.CONVERGED and not path.evidence.proven
    assert f"{dim} parameters is not refined" in str(path.evidence)
    np.testing.assert_allclose(path.endpoint, c, atol=1e-6)
