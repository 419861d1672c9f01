"""A small gradient is not a steady state where the flow escapes: starts beside a saddle.

Every expected value is worked out by hand from the closed-form flow, before running gradflow.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import gradflow
from gradflow import Outcome

SAXE = "(3 - a*b)**2/2"
"""A depth-2 linear network fitting 3 (Saxe, McClelland & Ganguli, ICLR 2014): a saddle at the
origin with Hessian [[0, -3], [-3, 0]] (eigenvalue -3 along (1, 1), +3 along (1, -1)), minima
on ab = 3, L ≥ 0.  On a = b = u the flow is u' = u(3 - u²), whose solution is
u² = 3Ce^{6t}/(1 + Ce^{6t}) with C = u0²/(3 - u0²): ln(u²/(3 - u²)) grows as 6t."""


@pytest.fixture(scope="module")
def saxe() -> gradflow.BoundModel:
    return gradflow.loss_model(SAXE, params=("a", "b")).bind()


@pytest.fixture(scope="module")
def well() -> gradflow.BoundModel:
    """(x² - 1)² + y²: a saddle at the origin (Hessian diag(-4, 2)), minima (±1, 0); on y = 0
    the flow is x' = 4x(1 - x²), x² = Ce^{8t}/(1 + Ce^{8t}) with C = x0²/(1 - x0²)."""
    return gradflow.loss_model("(x**2 - 1)**2 + y**2", params=("x", "y")).bind()


def test_a_start_on_the_unstable_direction_of_a_saddle_follows_saxes_curve(saxe) -> None:
    """From (1e-8, 1e-8), ‖∇L‖ = 3√2·1e-8 is far below any steady-state tolerance relative to
    the loss's gradient scale, yet it lies wholly along the unstable direction (1, 1): the flow
    leaves the plateau on the sigmoid u² = 3Ce^{6t}/(1 + Ce^{6t}), C = 1e-16/(3 - 1e-16)
    (each recorded point at the time t = (ln(u²/(3 - u²)) - ln C)/6 of the closed form,
    ln(1/C)/6 = ln(3e16 - 1)/6 = 6.3233 at u² = 3/2), and ends at (√3, √3).  It
    stops where ‖∇L‖ = √2·u·(3 - u²) first meets the tolerance: (3 - u²) = 3/(1 + Ce^{6t}),
    so at t* with √2·u·3/(1 + Ce^{6t*}) = gtol·g (g the loss's gradient scale), t* ≈ 9.7.
    The stop is tested at the ends of the solver's steps, so it is the first recorded point
    past t*: the point before it lies before t*, up to the error of the gradient computed
    there.  That gradient is ~10⁻⁷ of its start, below what the tolerances resolve (u is
    within rtol of √3): a relative error of up to 4 in it moves the time it meets gtol·g by
    ln(4)/6 ≈ 0.23, since it decays as e^{-6t}."""
    path = gradflow.flow(saxe, [1e-8, 1e-8])
    assert path.status is Outcome.CONVERGED and path.reached is Outcome.GLOBAL_MIN
    np.testing.assert_allclose(path.endpoint, [np.sqrt(3), np.sqrt(3)], rtol=1e-7)
    c = 1e-16 / (3 - 1e-16)
    a, b = path.thetas.T
    np.testing.assert_allclose(a, b, rtol=1e-12)
    rising = (a**2 > 0.03) & (a**2 < 2.97)
    exact = (np.log(a[rising] ** 2 / (3 - a[rising] ** 2)) - np.log(c)) / 6
    assert rising.sum() >= 10
    np.testing.assert_allclose(path.ts[rising], exact, atol=0.01)
    assert np.log(1 / c) / 6 == pytest.approx(6.3233, abs=1e-4)
    g = gradflow.loss_scales(saxe).gradient
    tolerance = gradflow.FlowOptions().gtol * g
    late = np.linspace(8, 12, 400001)
    v = 3 / (1 + c * np.exp(6 * late))
    t_star = late[np.argmax(np.sqrt(2) * np.sqrt(3 - v) * v <= tolerance)]
    assert t_star == pytest.approx(9.7, abs=0.3)
    assert path.ts[-2] <= t_star + 0.25 and t_star <= path.time


def test_a_start_beside_a_saddle_escapes_and_one_on_its_stable_manifold_does_not(well) -> None:
    """Other numbers, the double well: from (1e-9, 0) the flow leaves along x on
    x² = Ce^{8t}/(1 + Ce^{8t}), C = 1e-18/(1 - 1e-18) (each recorded point at the time
    t = (ln(x²/(1 - x²)) - ln C)/8 of the closed form, ln(1/C)/8 = 5.1808 at x² = 1/2), and
    ends at (1, 0); from (1e-9, 1e-9) (mostly stable y, some
    unstable x) too; from (0, 0.5), on the invariant line x = 0 (the saddle's stable
    manifold), it ends at the saddle."""
    out = gradflow.flow(well, [1e-9, 0.0])
    assert out.reached is Outcome.GLOBAL_MIN
    np.testing.assert_allclose(out.endpoint, [1.0, 0.0], atol=1e-8)
    c = 1e-18 / (1 - 1e-18)
    x2 = out.thetas[:, 0] ** 2
    rising = (x2 > 0.01) & (x2 < 0.99)
    exact = (np.log(x2[rising] / (1 - x2[rising])) - np.log(c)) / 8
    assert rising.sum() >= 10
    np.testing.assert_allclose(out.ts[rising], exact, atol=0.01)
    mixed = gradflow.flow(well, [1e-9, 1e-9])
    assert mixed.reached is Outcome.GLOBAL_MIN
    np.testing.assert_allclose(mixed.endpoint, [1.0, 0.0], atol=1e-8)
    on = gradflow.flow(well, [0.0, 0.5])
    assert on.reached is Outcome.SADDLE and on.status is Outcome.CONVERGED
    np.testing.assert_allclose(on.endpoint, [0.0, 0.0], atol=1e-7)


def test_the_escape_does_not_depend_on_the_loss_scale(saxe) -> None:
    """1000·L has the flow of L with time divided by 1000: the same escape, the same end."""
    scaled = gradflow.loss_model(f"1000*{SAXE}", params=("a", "b")).bind()
    one, big = gradflow.flow(saxe, [1e-8, 1e-8]), gradflow.flow(scaled, [1e-8, 1e-8])
    assert big.reached is one.reached is Outcome.GLOBAL_MIN
    np.testing.assert_allclose(big.endpoint, one.endpoint, rtol=1e-7)
    assert big.time * 1000 == pytest.approx(one.time, rel=1e-3)


def test_a_batch_of_starts_beside_a_saddle(saxe) -> None:
    """The batched integrator's stops are audited: (1e-8, 1e-8) ends at (√3, √3), (-1e-8,
    -1e-8) at (-√3, -√3), (1e-8, -0.5e-8) (unstable share 1/3 of the displacement) at
    (√3, √3), since a² - b² = 0.75e-16 is conserved; (1e-8, -1e-8) lies on the invariant
    line a = -b, the stable manifold, and ends at the saddle."""
    starts = np.array([[1e-8, 1e-8], [-1e-8, -1e-8], [1e-8, -0.5e-8], [1e-8, -1e-8]])
    out = gradflow.flow_endpoints(saxe, starts, gradflow.default_basin_options(), progress=False)
    assert np.all(out.status == Outcome.CONVERGED)
    r = np.sqrt(3)
    np.testing.assert_allclose(out.endpoints[:3], [[r, r], [-r, -r], [r, r]], rtol=1e-6)
    np.testing.assert_allclose(out.endpoints[3], [0.0, 0.0], atol=1e-7)


def test_the_command_line_flow_leaves_the_plateau(cli, saxe) -> None:
    """The command line's flow from (1e-8, 1e-8) is the Python flow of the first test: the
    same stop, past t* ≈ 9.7, at (√3, √3)."""
    code, out, _ = cli(
        "flow", "--loss", SAXE, "--params", "a,b", "--init", "1e-8", "1e-8", "--json"
    )
    result = json.loads(out)
    assert code == 0 and result["reached"] == "global_min" and result["converged"]
    np.testing.assert_allclose(result["endpoint"], [np.sqrt(3), np.sqrt(3)], rtol=1e-7)
    assert result["time"] == gradflow.flow(saxe, [1e-8, 1e-8]).time >= 9.7 - 0.3


def test_an_unstable_direction_counts_only_if_it_acts_within_the_budget() -> None:
    """x²/2 - εy²/2 from (0, 1e-3): the gradient (0, -ε·1e-3) lies wholly along the unstable
    direction y, which grows as e^{εt}.  With ε = 1, y reaches the divergence radius 1e4 at
    t = ln(1e7) ≈ 16: diverged.  With ε = 1e-12 it grows by e^{εT} - 1 ≈ 1e-7 over the whole
    budget T = 1e5·ℓ/g (ℓ = 3 on the default ranges [-3, 3]², g = median ‖∇L‖ = O(1)): the
    start is a steady state within the budget, converged at t = 0.  (One loss with ε a
    hyperparameter: one compiled flow for both.)"""
    loss = gradflow.loss_model("x**2/2 - eps*y**2/2", params=("x", "y"), hyperparams=("eps",))
    fast, slow = loss.bind(eps=1.0), loss.bind(eps=1e-12)
    out = gradflow.flow(fast, [0.0, 1e-3])
    assert out.status is Outcome.DIVERGED
    assert out.time == pytest.approx(np.log(1e7), rel=0.05)
    still = gradflow.flow(slow, [0.0, 1e-3])
    assert still.status is Outcome.CONVERGED and still.time == 0.0
