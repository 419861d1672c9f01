"""The shallow encoder's NTK: exact identities, derivatives, the limiting kernel, the linear flow.

Expected values come from the mathematics: ``K_O = τ1² F Fᵀ`` (so ``λ_min(K) ≥ τ1² α²``),
central differences, the arc-cosine kernels (computed here independently, by quadrature and by
their closed form), the Monte Carlo variance of the kernel at finite width, a bound on the
softmax of small scores, and the matrix exponential solving the linear flow.
"""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree
from scipy import integrate, stats

from gradflow.systems.shallow_ntk import limit as ntk_limit
from gradflow.systems.shallow_ntk import ntk
from gradflow.systems.shallow_ntk.dynamics import linearized_descent, linearized_flow, train_gd
from gradflow.systems.shallow_ntk.encoder import init_encoder, predict, synthetic_data
from gradflow.systems.shallow_ntk.sweep import run_width
from gradflow.systems.shallow_ntk.threshold import fit_slope

ORACLE_X = np.array(
    [
        [[1.0, 0.0], [1.0, 0.0]],
        [[0.0, 1.0], [0.0, 1.0]],
        [[0.5, math.sqrt(3) / 2], [0.5, math.sqrt(3) / 2]],
        [[-2.0, 0.0], [0.0, 0.0]],
    ]
)
"""The four inputs of the reference oracle (d = d_s = 2); their mean tokens are unit vectors at
angles 0, π/2, π/3 and π."""

ORACLE_TABLE = np.array(
    [
        [1, 0.159155, 0.471166, 0],
        [0.159155, 1, 0.801265, 0.159155],
        [0.471166, 0.801265, 1, -0.028834],
        [0, 0.159155, -0.028834, 1],
    ]
)
"""The limiting NTK-init kernel of the oracle inputs, to six decimals: for unit mean tokens at
angle θ, ``(sin θ + (π − θ) cos θ)/(2π) + cos θ (π − θ)/(2π)``, e.g. ``1/(2π) = 0.159155`` at
θ = π/2 (the test below recomputes every entry from that formula)."""

SHARED_SIZES = (4, 2, 3)
"""``(N, d_s, d)`` of the dynamics tests and of the CLI test, with ``d_m = 32`` and 10 steps:
shared shapes let them reuse one compiled program each (compilation dominates their time)."""


def two_layer_relu_ntk(xbar: np.ndarray) -> np.ndarray:
    """``‖u‖‖v‖ (sin θ + (π - θ) cos θ)/(2π) + uᵀv (π - θ)/(2π)`` for every pair of rows."""
    norms = np.linalg.norm(xbar, axis=1)
    dots = xbar @ xbar.T
    theta = np.arccos(np.clip(dots / np.outer(norms, norms), -1, 1))
    return np.outer(norms, norms) * (np.sin(theta) + (np.pi - theta) * np.cos(theta)) / (
        2 * np.pi
    ) + dots * (np.pi - theta) / (2 * np.pi)


def test_oracle_kernel_from_the_arc_cosine_formula():
    """The closed form reproduces the reference table, and the SymPy-derived kernel equals it."""
    expected = two_layer_relu_ntk(ORACLE_X.mean(axis=1))
    np.testing.assert_allclose(expected, ORACLE_TABLE, atol=5e-7)
    symbolic = ntk_limit.limit_kernel(ORACLE_X, "ntk", d_m=1)
    np.testing.assert_allclose(symbolic["total"], expected, atol=1e-6)
    np.testing.assert_allclose(symbolic["Q"] + symbolic["K"], 0.0)


@pytest.mark.parametrize("angle", [0.0, 0.4, np.pi / 2, 2.5, np.pi])
def test_arc_cosine_kernels_against_quadrature(angle):
    """κ0, κ1 from the SymPy integration equal the Gaussian expectations by 1-D quadrature.

    With ``a = wᵀu`` and ``b = wᵀv = a cos θ + z sin θ`` (``a, z`` independent standard
    Gaussians), conditioning on ``a`` gives ``P(b > 0 | a) = Φ(a cot θ)`` and
    ``E[ReLU(b) | a] = μ Φ(μ/s) + s φ(μ/s)`` with ``μ = a cos θ``, ``s = sin θ``.
    """
    kappa0, kappa1 = ntk_limit.arc_cosine_kernels()
    c, s = math.cos(angle), math.sin(angle)

    def positive(a: float) -> float:
        return stats.norm.cdf(a * c / s) if s > 1e-12 else float(a * c > 0)

    def relu(a: float) -> float:
        mu = a * c
        return (
            mu * stats.norm.cdf(mu / s) + s * stats.norm.pdf(mu / s) if s > 1e-12 else max(mu, 0.0)
        )

    both = integrate.quad(lambda a: stats.norm.pdf(a) * positive(a), 0, np.inf, epsabs=1e-12)[0]
    relus = integrate.quad(lambda a: stats.norm.pdf(a) * a * relu(a), 0, np.inf, epsabs=1e-12)[0]
    assert float(kappa0.subs(ntk_limit.theta, angle)) == pytest.approx(both, abs=1e-9)
    assert float(kappa1.subs(ntk_limit.theta, angle)) == pytest.approx(relus, abs=1e-9)


@pytest.mark.parametrize("init", ["lecun", "he", "ntk"])
@pytest.mark.parametrize("scaling", ["sqrt", "linear"])
@pytest.mark.parametrize("hidden", [False, True])
def test_lambda_min_at_least_tau1_squared_alpha_squared(init, scaling, hidden):
    """``K_O = τ1² F_pre F_preᵀ`` exactly, so ``λ_min(K) ≥ τ1² σ_min(F_pre)²`` at any width."""
    X, _ = synthetic_data(jax.random.PRNGKey(3), 6, 3, 5)
    for d_m in (4, 32):
        model = init_encoder(
            jax.random.PRNGKey(d_m), 5, d_m, init=init, scaling=scaling, hidden=hidden
        )
        blocks = ntk.empirical_ntk(model, X)
        F = ntk.feature_matrix(model, X)
        tau1 = float(model.tau1)
        scale = np.abs(blocks["total"]).max()
        np.testing.assert_allclose(blocks["O"], tau1**2 * F @ F.T, atol=1e-12 * scale)
        lam_min = np.linalg.eigvalsh(blocks["total"])[0]
        assert lam_min >= tau1**2 * ntk.alpha(F) ** 2 - 1e-10 * scale
        assert np.linalg.eigvalsh(F @ F.T)[0] == pytest.approx(ntk.alpha(F) ** 2, abs=1e-10 * scale)


def _trained_attributes(model) -> list[str]:
    """The trained weights (the multipliers τ are not trained)."""
    return [a for a in ntk.BLOCKS.values() if getattr(model, a) is not None]


@pytest.mark.parametrize("hidden", [False, True])
def test_jacobian_against_central_differences(hidden):
    """Autodiff Jacobian = central differences to 1e-8 (float64), and ``K = J Jᵀ`` per block."""
    X, _ = synthetic_data(jax.random.PRNGKey(0), 3, 3, 3)
    model = init_encoder(jax.random.PRNGKey(1), 3, 5, init="he", scaling="sqrt", hidden=hidden)
    attributes = _trained_attributes(model)
    flat, unravel = ravel_pytree([getattr(model, a) for a in attributes])

    @jax.jit
    def f(theta: jax.Array) -> jax.Array:
        weights = lambda m: [getattr(m, a) for a in attributes]  # noqa: E731
        return predict(eqx.tree_at(weights, model, unravel(theta)), X)

    h = 1e-5
    basis = np.eye(flat.size)
    fd = np.stack(
        [(np.asarray(f(flat + h * e)) - np.asarray(f(flat - h * e))) / (2 * h) for e in basis],
        axis=1,
    )
    ad = np.asarray(jax.jacobian(f)(flat))
    np.testing.assert_allclose(ad, fd, atol=1e-8)
    sizes = [getattr(model, a).size for a in attributes]
    blocks = ntk.empirical_ntk(model, X)
    names = [b for b, a in ntk.BLOCKS.items() if a in attributes]
    for name, part in zip(names, np.split(fd, np.cumsum(sizes)[:-1], axis=1)):
        np.testing.assert_allclose(blocks[name], part @ part.T, atol=1e-8)


def test_kernel_methods_agree():
    """The three implementations give the same matrices up to rounding."""
    X, _ = synthetic_data(jax.random.PRNGKey(5), 5, 4, 3)
    model = init_encoder(jax.random.PRNGKey(6), 3, 32, init="lecun", scaling="sqrt", hidden=True)
    reference = ntk.empirical_ntk(model, X, "jacobian")
    for method in ("per-sample", "ntvp"):
        other = ntk.empirical_ntk(model, X, method)
        for name, K in reference.items():
            np.testing.assert_allclose(
                other[name], K, atol=1e-12 * np.abs(reference["total"]).max()
            )


def test_empirical_kernel_tends_to_the_limit_like_inverse_sqrt_width():
    """NTK init, ``τ0 = d_m^{-1}``: the error to the oracle kernel is within ``C d_m^{-1/2}``.

    ``C``: for unit mean tokens the kernel is ``(1/d_m) Σ_r Z_r`` with
    ``Z = ReLU(g)ReLU(g') + a² 1[g>0] 1[g'>0] x̄ᵀx̄'`` (``g, g', a`` standard Gaussians), whose
    variance is largest on the diagonal: ``E Z² - (E Z)² = (3/2 + 1 + 3/2) - 1 = 3``.  The
    largest of the entries' errors averaged over seeds stays below three such standard deviations.
    """
    expected = two_layer_relu_ntk(ORACLE_X.mean(axis=1))
    widths, errors = np.array([256, 1024, 4096]), []
    for d_m in widths:
        per_seed = [
            np.abs(
                ntk.empirical_ntk(
                    init_encoder(jax.random.PRNGKey(s), 2, int(d_m), init="ntk", scaling="linear"),
                    ORACLE_X,
                )["total"]
                - expected
            ).max()
            for s in range(8)
        ]
        errors.append(np.mean(per_seed))
    errors = np.array(errors)
    assert np.all(errors <= 3 * math.sqrt(3) / np.sqrt(widths))
    assert -0.8 < fit_slope(widths, errors) < -0.25


def test_limit_blocks_match_the_empirical_blocks():
    """Per block at ``d_m = 4096`` (NTK init): ``K_V → x̄ᵀx̄' κ0``, ``K_O → κ1``, ``K_Q, K_K → 0``."""
    limit = ntk_limit.limit_kernel(ORACLE_X, "ntk", 4096)
    blocks = ntk.empirical_ntk(
        init_encoder(jax.random.PRNGKey(0), 2, 4096, init="ntk", scaling="linear"), ORACLE_X
    )
    for name in ("V", "O"):
        np.testing.assert_allclose(blocks[name], limit[name], atol=4 * math.sqrt(1.5 / 4096))
    assert np.abs(blocks["Q"]).max() + np.abs(blocks["K"]).max() < 1e-2


def test_attention_tends_to_uniform_under_linear_scaling():
    """``τ0 = d_m^{-1}``: if every score has ``|s| ≤ ε`` then ``|softmax - 1/d_s| ≤ (e^{2ε} - 1)/d_s``;
    the scores are averages of ``d_m`` independent zero-mean products, so ε ∝ d_m^{-1/2}."""
    X, _ = synthetic_data(jax.random.PRNGKey(2), 8, 5, 4)
    largest_score = jax.jit(lambda model: jnp.max(jnp.abs(jax.vmap(model.scores)(X))))
    deviations = {}
    for d_m in (64, 1024, 16384):
        devs = []
        for s in range(4):
            model = init_encoder(jax.random.PRNGKey(s), 4, d_m, init="ntk", scaling="linear")
            eps = float(largest_score(model))
            dev = ntk.softmax_deviation(model, X)
            assert dev <= (math.exp(2 * eps) - 1) / 5 + 1e-15
            devs.append(dev)
        deviations[d_m] = np.mean(devs)
    assert deviations[16384] < deviations[1024] < deviations[64]
    assert deviations[16384] < deviations[64] / 8  # √(16384 / 64) = 16 expected


def test_linearized_flow_is_the_matrix_exponential():
    """The engine's flow of ``½‖f0 + Φz - y‖²`` gives ``f(t) = y + e^{-Kt}(f0 - y)``."""
    rng = np.random.default_rng(0)
    B = rng.normal(size=(4, 3))
    K = B @ B.T + np.diag([0.0, 0, 0, 1e-3])
    f0, y = rng.normal(size=4), rng.normal(size=4)
    ts = np.linspace(0.0, 3.0, 11)
    f, loss = linearized_flow(K, f0, y, ts)
    lam, U = np.linalg.eigh(K)
    exact = y + np.einsum("ij,tj,kj,k->ti", U, np.exp(-np.outer(ts, lam)), U, f0 - y)
    np.testing.assert_allclose(f, exact, atol=1e-8)
    np.testing.assert_allclose(loss, 0.5 * np.sum((exact - y) ** 2, axis=1), atol=1e-8)


def test_linearized_descent_is_the_power_of_the_step_matrix():
    """``r_k = (I - γK)^k r_0``."""
    rng = np.random.default_rng(1)
    B = rng.normal(size=(4, 4))
    K, r0, lr = B @ B.T, rng.normal(size=4), 0.05
    losses = linearized_descent(K, r0, lr, 7)
    r = r0.copy()
    for k in range(8):
        assert losses[k] == pytest.approx(0.5 * r @ r, rel=1e-12)
        r = r - lr * K @ r


def test_fit_slope_of_a_power_law():
    widths = np.array([64, 64, 256, 256, 1024, 1024])
    values = 3.0 * widths**-0.5 * np.array([2, 0.5, 2, 0.5, 2, 0.5])
    assert fit_slope(widths, values) == pytest.approx(-0.5, abs=1e-12)
    assert math.isnan(fit_slope(widths, -values))
    assert math.isnan(fit_slope(np.array([64, 64]), np.array([1.0, 2.0])))


def test_one_gd_step_moves_the_outputs_by_minus_lr_K_residual():
    """``f_1 - f_0 = -γ K_0 (f_0 - y) + O(γ²)``: GD in parameter space is kernel GD to first order."""
    X, y = synthetic_data(jax.random.PRNGKey(7), *SHARED_SIZES)
    model = init_encoder(jax.random.PRNGKey(8), SHARED_SIZES[-1], 32, init="lecun", scaling="sqrt")
    K = ntk.empirical_ntk(model, X)["total"]
    residual = np.asarray(predict(model, X) - y)
    errors = []
    for lr in (1e-3, 1e-4):
        outputs = train_gd(model, X, y, lr=lr, steps=10).outputs
        errors.append(np.abs(outputs[1] - outputs[0] + lr * K @ residual).max())
    assert errors[1] < errors[0] / 50  # second order: a 10× smaller step gives a 100× smaller error


def test_run_width_bound_covers_linearized_descent():
    """With ``γ ≤ 1/λ_max`` linearized GD satisfies ``ℓ_k ≤ (1 - γλ_min)^{2k} ℓ_0``, and
    ``λ_min ≥ τ1²α_0²`` makes that at most the bound ``(1 - γτ1²α_0²/2)^k ℓ_0``."""
    X, y = synthetic_data(jax.random.PRNGKey(9), *SHARED_SIZES)
    run = run_width(X, y, 32, init="ntk", scaling="linear", steps=10)
    assert np.all(run.linearized_gd <= run.bound * (1 + 1e-12))
    assert run.losses[0] == pytest.approx(run.linearized_gd[0]) == pytest.approx(run.linearized[0])
    assert run.lambda_min >= run.tau1**2 * run.alpha0**2 - 1e-12
    assert np.isfinite(run.limit_error) and run.limit_flow.shape == run.losses.shape
