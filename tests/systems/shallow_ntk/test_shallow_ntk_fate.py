"""The shallow encoder's fate map and the mathematics under it.

Expected values are worked out by hand: the law of one unit's contribution to a diagonal entry of
the kernel (so the exact mean and variance of the squared error at every width), the exact
invariance of the uniform-attention family and of zero-padded units, the dependence of the
kernel on ``τ0`` at uniform attention, thresholds and exponents of outcome patterns built to have
them, and the theorem's assumptions at sizes chosen to break each.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gradflow import GradflowError
from gradflow.systems.fate import REASONS
from gradflow.systems.shallow_ntk import ntk
from gradflow.systems.shallow_ntk.config import OUTCOMES, NtkFateConfig
from gradflow.systems.shallow_ntk.dynamics import train_gd
from gradflow.systems.shallow_ntk.encoder import init_encoder, pad_width, predict, synthetic_data
from gradflow.systems.shallow_ntk.fate import failed_assumptions, fate_map, judge
from gradflow.systems.shallow_ntk.threshold import (
    bootstrap_exponent,
    fit_exponent,
    fit_slope,
    width_thresholds,
)

IDENTICAL_TOKENS = np.array(
    [
        [[1.0, 0.0], [1.0, 0.0]],
        [[0.0, 1.0], [0.0, 1.0]],
        [[0.5, math.sqrt(3) / 2], [0.5, math.sqrt(3) / 2]],
        [[-1.0, 0.0], [-1.0, 0.0]],
    ]
)
"""Four samples whose two tokens are equal: unit mean tokens at angles 0, π/2, π/3 and π."""


def test_the_diagonal_kernel_error_has_variance_three_over_width_exactly():
    """NTK init, ``τ0 = d_m^{-1}``, samples of identical tokens.

    Every attention row then averages equal values, so the attention drops out exactly:
    ``K_Q = K_K = 0`` and ``K = (1/d_m) Σ_r Z_r`` with i.i.d. units.  On the diagonal, for a
    unit mean token, ``Z_ii = ReLU(g)² + a² 1[g > 0] = 1[g > 0] (g² + a²)`` with ``g, a``
    standard Gaussians: a fair coin times an independent exponential of mean 2, so
    ``E Z^k = ½ 2^k k!``: ``E Z = 1 = K∞_ii``, ``Var Z = 4 - 1 = 3``, and the fourth central
    moment is ``192 - 4·24 + 6·4 - 4 + 1 = 117``.  Hence ``q = d_m (K_ii - 1)²`` has mean 3 at
    every width: the error falls like ``d_m^{-1/2}``, a slope of exactly ``-1`` for the mean
    squared error.  Its variance is ``(117 - 9)/d_m + 2·9 (1 - 1/d_m) = 18 + 90/d_m`` (a sum of
    ``d_m`` i.i.d. terms), which bounds that of the average over the four correlated diagonal
    entries; the tolerances are four such standard errors over ``S`` draws.
    """
    draws, widths = 128, np.array([16, 64, 256, 1024])
    batched = eqx.filter_jit(eqx.filter_vmap(ntk.kernel_blocks, in_axes=(0, None)))
    means = []
    keys = jax.random.split(jax.random.PRNGKey(0), draws)
    for d_m in widths:  # padded with zero units to one shape: the same kernels, one program

        def draw(key: jax.Array, d_m: int = int(d_m)) -> Any:
            return pad_width(init_encoder(key, 2, d_m, init="ntk", scaling="linear"), 1024)

        models = jax.vmap(draw)(keys)
        blocks = batched(models, IDENTICAL_TOKENS)
        assert float(jnp.max(jnp.abs(blocks["Q"]) + jnp.abs(blocks["K"]))) < 1e-12
        diagonal = np.diagonal(np.asarray(blocks["V"] + blocks["O"]), axis1=1, axis2=2)
        means.append(np.mean(d_m * (diagonal - 1.0) ** 2))
    means = np.array(means)
    standard_errors = np.sqrt((18 + 90 / widths) / draws)
    assert np.all(np.abs(means - 3.0) <= 4 * standard_errors)
    logs = np.log(widths)
    slope_error = np.max(standard_errors / 3.0) / np.sqrt(np.sum((logs - logs.mean()) ** 2))
    slope = fit_slope(widths, means / widths)  # the mean squared error, E = 3 / d_m
    assert abs(slope + 1.0) <= 4 * slope_error
    assert abs(slope / 2 + 0.5) <= 0.5 * 4 * slope_error  # the error itself: d_m^{-1/2}


def test_padding_with_zero_units_changes_nothing():
    """Units with zero weights add nothing to scores, outputs or gradients, and stay zero under
    GD: outputs, kernel blocks and a GD run equal those of the narrow network."""
    X, y = synthetic_data(jax.random.PRNGKey(0), 5, 3, 4)
    for init, scaling in (("lecun", "sqrt"), ("ntk", "linear")):
        narrow = init_encoder(jax.random.PRNGKey(1), 4, 6, init=init, scaling=scaling)
        wide = pad_width(narrow, 16)
        np.testing.assert_allclose(predict(wide, X), predict(narrow, X), rtol=1e-13, atol=1e-15)
        for b, K in ntk.empirical_ntk(narrow, X).items():
            np.testing.assert_allclose(ntk.empirical_ntk(wide, X)[b], K, rtol=1e-12, atol=1e-15)
        a = train_gd(narrow, X, y, lr=0.05, steps=20)
        b = train_gd(wide, X, y, lr=0.05, steps=20)
        np.testing.assert_allclose(b.losses, a.losses, rtol=1e-12)
        for name in ("W_Q", "W_K", "W_V", "w_O"):
            assert not np.any(np.asarray(getattr(b.model, name))[6:])
    with pytest.raises(GradflowError, match="width = 4 must be ≥ d_m = 6"):
        pad_width(narrow, 4)


def test_a_run_started_on_uniform_attention_stays_there_and_is_the_mean_token_network():
    """With ``W_Q = W_K = 0`` the scores are 0, and the gradient on ``W_Q`` carries ``W_K`` (and
    back), so both stay exactly 0 under GD: the off-family share of the gradient is 0.  The run
    is then GD of ``f = τ1 w_Oᵀ ReLU(W_V x̄)`` on the mean tokens, whose gradients are written
    out here by hand (``∂f/∂w_O = τ1 ReLU(W_V x̄)``, ``∂f/∂W_V = τ1 (w_O ⊙ 1[W_V x̄ > 0]) x̄ᵀ``)."""
    X, y = synthetic_data(jax.random.PRNGKey(2), 5, 3, 4)  # the shapes of the padding test
    model = init_encoder(jax.random.PRNGKey(3), 4, 6, init="he", scaling="sqrt")
    model = eqx.tree_at(lambda m: (m.W_Q, m.W_K), model, replace_fn=jnp.zeros_like)
    lr, steps = 0.05, 20
    run = train_gd(model, X, y, lr=lr, steps=steps)
    assert not np.any(np.asarray(run.model.W_Q)) and not np.any(np.asarray(run.model.W_K))

    xbar, targets = np.asarray(X).mean(axis=1), np.asarray(y)
    V, w, tau1 = np.asarray(model.W_V), np.asarray(model.w_O), float(model.tau1)
    losses = []
    for _ in range(steps + 1):
        g = xbar @ V.T  # (N, d_m)
        residual = tau1 * np.maximum(g, 0) @ w - targets
        losses.append(0.5 * residual @ residual)
        grad_w = tau1 * np.maximum(g, 0).T @ residual
        grad_V = tau1 * ((residual[:, None] * (g > 0)) * w[None]).T @ xbar
        V, w = V - lr * grad_V, w - lr * grad_w
    np.testing.assert_allclose(run.losses, losses, rtol=1e-10)

    grads = eqx.filter_grad(lambda m: 0.5 * jnp.sum((predict(m, X) - y) ** 2))(run.model)
    off = np.sqrt(sum(float(jnp.sum(getattr(grads, a) ** 2)) for a in ("W_Q", "W_K")))
    total = np.sqrt(
        sum(
            float(jnp.sum(getattr(grads, a) ** 2))
            for a in ntk.BLOCKS.values()
            if getattr(grads, a) is not None
        )
    )
    assert off <= 1e-12 * total


def test_tau0_enters_the_kernel_only_through_the_attention_blocks():
    """At ``W_Q = 0`` the attention is uniform whatever ``τ0``: ``K_V`` and ``K_O`` do not
    depend on it, ``K_K = 0`` (its gradient carries ``W_Q x = 0``) and ``K_Q`` is ``τ0²`` times a
    matrix of the weights (its gradient is ``τ0 d_s (W_K Σ_j c_j x_j) x̄ᵀ``), so ``K_Q`` under
    ``τ0 = d_m^{-1/2}`` is ``d_m`` times ``K_Q`` under ``d_m^{-1}``."""
    X, _ = synthetic_data(jax.random.PRNGKey(4), 5, 3, 4)
    d_m = 12
    blocks = {}
    for scaling in ("sqrt", "linear"):
        model = init_encoder(jax.random.PRNGKey(5), 4, d_m, init="ntk", scaling=scaling)
        model = eqx.tree_at(lambda m: m.W_Q, model, replace_fn=jnp.zeros_like)
        blocks[scaling] = ntk.empirical_ntk(model, X)
    scale = np.abs(blocks["sqrt"]["total"]).max()
    for b in ("V", "O"):
        np.testing.assert_allclose(blocks["sqrt"][b], blocks["linear"][b], atol=1e-13 * scale)
    assert np.abs(blocks["sqrt"]["K"]).max() == 0.0
    np.testing.assert_allclose(blocks["sqrt"]["Q"], d_m * blocks["linear"]["Q"], atol=1e-13 * scale)
    assert np.abs(blocks["sqrt"]["Q"]).max() > 1e-3 * scale


def test_threshold_of_a_step_pattern_lies_halfway_and_the_exponent_is_exact():
    """Widths ``2^k``; at ``N = 2^j`` every draw converges exactly above ``2^(α j + ½)``.  The
    share jumps from 0 to 1 between ``2^(α j)`` and ``2^(α j + 1)``, so the interpolated
    threshold is ``2^(α j + ½)`` and the fit gives ``α`` and ``c = √2``.  The grid only says
    ``log₂ d_m* = α j + δ_j``, ``δ_j ∈ [0, 1]``: the slope is ``α + Σ (j − j̄) δ_j / Σ (j − j̄)²``
    with ``j − j̄ = −1.5, −0.5, 0.5, 1.5`` and ``Σ (j − j̄)² = 5``, so it ranges over
    ``α ± (0.5 + 1.5)/5 = α ± 0.4``; identical draws add nothing, so the interval is that range."""
    widths, ns = 2.0 ** np.arange(0, 12), 2.0 ** np.arange(1, 5)
    for alpha in (1.0, 2.0):
        edge = 2.0 ** (alpha * np.log2(ns) + 0.5)
        converged = np.repeat((widths[None, :] > edge[:, None])[..., None], 3, axis=-1)
        np.testing.assert_allclose(width_thresholds(widths, converged), edge, rtol=1e-12)
        fit = bootstrap_exponent(ns, widths, converged, draws=50)
        assert fit.alpha == pytest.approx(alpha, abs=1e-12)
        assert fit.c == pytest.approx(math.sqrt(2), rel=1e-12)
        assert (fit.grid_low, fit.grid_high) == pytest.approx((alpha - 0.4, alpha + 0.4), abs=1e-12)
        assert (fit.low, fit.high) == pytest.approx((alpha - 0.4, alpha + 0.4), abs=1e-12)
        assert fit.usable == 1.0


def test_threshold_interpolates_shares_and_says_where_it_is_censored():
    """Converged draws out of three at widths 1, 4, 16, 64, worked out by hand:

    - ``(1, 3, 3, 3)``: ½ lies a quarter of the way from ⅓ to 1, so ``d_m* = 4^{1/4} = √2``;
    - ``(3, 0, 3, 3)``: converged at 1 by chance, then not: the threshold lies past 4, halfway
      (in log) to 16: ``8``;
    - ``(3, 3, 3, 3)``: below the grid (``-inf``); ``(0, 0, 3, 1)``: the widest fails, above it
      (``+inf``).
    """
    widths = np.array([1.0, 4.0, 16.0, 64.0])
    counts = {
        (1, 3, 3, 3): math.sqrt(2),
        (3, 0, 3, 3): 8.0,
        (3, 3, 3, 3): -np.inf,
        (0, 0, 3, 1): np.inf,
    }
    converged = np.array([[[s < k for s in range(3)] for k in row] for row in counts])
    np.testing.assert_allclose(width_thresholds(widths, converged), list(counts.values()))
    assert all(np.isnan(fit_exponent([4, 8], [-np.inf, 8.0])))


def test_the_theorem_s_assumptions_fail_where_their_sizes_say():
    """``N = 8``, ``d = 16``: the sufficient width is ``N² = 64`` under ``τ0 = d_m^{-1/2}`` and
    ``N = 8`` under ``d_m^{-1}``; Proposition 1's bound needs ``α_0² ≥ d_m λ*/4``, which ``α_0 = 0``
    (any ``d_m < N``) never meets; ``N = 32 > d`` makes the mean tokens dependent."""
    assert failed_assumptions(8, 64, 16, "sqrt", 1.0, 0.01) == []
    assert failed_assumptions(8, 8, 16, "linear", 1.0, 0.01) == []
    (width,) = failed_assumptions(8, 8, 16, "sqrt", 1.0, 0.01)
    assert width.startswith("width: d_m = 8 < N^2 = 64")
    (features,) = failed_assumptions(8, 8, 16, "linear", 0.1, 0.01)  # 0.01 < 8 · 0.01 / 4
    assert features.startswith("features: α0² = 0.01 < d_m λ*/4 = 0.02")
    failed = failed_assumptions(32, 4, 16, "linear", 0.0, 0.001)
    assert [f.split(":")[0] for f in failed] == ["width", "features", "tokens"]


@pytest.mark.parametrize(
    ("measured", "failed", "expected"),
    [
        ({"outcome": 0, "bound_held": True}, [], ("converges", "converged", True, None)),
        (
            {"outcome": 0, "bound_held": True},
            ["width: …"],
            ("no guarantee", "converged", False, "assumption"),
        ),
        ({"outcome": 1}, ["width: …"], ("no guarantee", "stalled", True, None)),
        ({"outcome": 1, "descending": True}, [], ("converges", "stalled", False, "slow-corner")),
        (
            {"outcome": 1, "kernel_change": 2.0},
            [],
            ("converges", "stalled", False, "off-reduction"),
        ),
        ({"outcome": 2}, [], ("converges", "diverged", False, "off-reduction")),
        ({"outcome": 1}, [], ("converges", "stalled", False, "unexplained")),
        (
            {"outcome": 0, "bound_held": False},
            [],
            ("converges", "converged under the guaranteed rate", False, "unexplained"),
        ),
    ],
)
def test_each_outcome_is_judged_against_the_theorem(measured, failed, expected):
    base = {
        "outcome": 0,
        "stop": 10,
        "bound_held": True,
        "kernel_change": 0.1,
        "descending": False,
        "rate": 0.1,
        "rate_bound": 0.01,
    }
    reduced, full, agree, reason, _ = judge({**base, **measured}, failed)
    assert (reduced, full, agree, reason) == expected
    assert reason is None or reason in REASONS


SMALL = {
    "n_samples": (4,),
    "widths": (2, 4, 8),
    "seeds": 2,
    "steps": 60,
    "inits": ("lecun", "ntk"),
}
"""A map of one shape (``N = 4``, every width padded to 16): compiled once."""


@pytest.fixture(scope="module")
def small_map(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fate") / "runs"
    return fate_map(NtkFateConfig(**SMALL), checkpoint=folder, progress=False), folder


def test_every_cell_obeys_the_kernel_bound_and_names_its_failed_assumptions(small_map):
    """``λ_min(K_0) ≥ τ1² α_0²`` in every cell (``K_O = τ1² F Fᵀ``); ``α_0 = 0`` exactly where
    ``d_m = 2 < N = 4``, where Proposition 1's bound fails; at ``d_m = N = 4`` it fails too
    (here the sufficient width of ``τ0 = d_m^{-1}`` is met), and the output says so."""
    result, _ = small_map
    v = result.values
    scale = v["lambda_max"]
    assert np.all(v["lambda_min"] >= v["tau1"] ** 2 * v["alpha0"] ** 2 - 1e-10 * scale)
    assert np.all(v["alpha0"][:, :, 0] == 0.0)
    for p, (_, scaling) in enumerate(result.config.pairs()):
        for s in range(2):
            at_n = [f.split(":")[0] for f in result.failed[p, 0, 1, s]]
            assert "features" in at_n
            assert ("width" in at_n) == (scaling == "sqrt")
    for cell in result.cells():
        assert cell.agree or cell.reason in REASONS
        if cell.reason == "assumption":
            assert cell.reduced == "no guarantee" and cell.full == "converged"
    assert set(np.unique(v["outcome"])) <= set(range(len(OUTCOMES)))


def test_the_map_resumes_from_its_checkpoint_and_reports_through_the_contract(small_map):
    """A second run on the checkpoint folder loads every cell (the same arrays); the record has
    agreement per (init, scaling), the mismatches with their reasons, the fitted exponents."""
    result, folder = small_map
    again = fate_map(NtkFateConfig(**SMALL), checkpoint=folder, progress=False)
    for name, array in result.values.items():
        np.testing.assert_array_equal(again.values[name], array)
    record = result.metadata()
    assert record["system"] == "shallow-ntk" and record["axes"] == ["N", "d_m", "seed"]
    assert set(record["agreement"]) == {"lecun/sqrt", "lecun/linear", "ntk/sqrt", "ntk/linear"}
    assert record["cells"] == 2 * 2 * 3 * 2
    assert record["exponents"]["ntk/linear"]["alpha"] is None  # one N: nothing to fit
    assert "width threshold d_m* = c N^α" in result.text()
    with pytest.raises(GradflowError, match="another computation"):
        fate_map(NtkFateConfig(**{**SMALL, "steps": 61}), checkpoint=folder, progress=False)


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--widths", "0,4"], "every width must be a positive integer"),
        (["--eps", "2"], "eps = 2.0 must be in (0, 1)"),
        (["--init", "xavier"], "xavier"),
        (["--n-samples", "4,x"], "every sample count N must be a positive integer"),
        (["--widths", "4,1000000", "--n-samples", "4096"], "GiB of memory"),
    ],
)
def test_bad_fate_options_are_one_line_exit_2(argv, named, cli, tmp_path: Path):
    out = tmp_path / "fate.npz"
    code, _, err = cli("fate", "--model", "shallow-ntk", *argv, "--out", str(out))
    assert code == 2 and named in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_the_command_writes_the_map_and_its_record(cli):
    """``gradflow fate --model shallow-ntk --json``: exit 0, the NPZ, the JSON and the picture,
    and on stdout agreement per (init, scaling) and every mismatch with its reason."""
    import json

    code, out, err = cli(
        "fate", "--model", "shallow-ntk", "--n-samples", "4", "--widths", "2,8", "--seeds", "1",
        "--steps", "60", "--init", "lecun,ntk", "--json", "--out", "fate.npz",
    )  # fmt: skip
    assert code == 0, err
    record = json.loads(out)
    assert record["system"] == "shallow-ntk" and len(record["agreement"]) == 4
    assert all(m["reason"] in REASONS for m in record["mismatches"])
    assert {p.name for p in cli.folder.iterdir()} == {
        "fate.npz",
        "fate.json",
        "fate.png",
        "fate.csv",
    }
