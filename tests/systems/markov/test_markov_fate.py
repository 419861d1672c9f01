"""The fate map and the full flow it runs, checked against the mathematics of the embedding.

- The loss is invariant under the orthogonal maps of the residual stream that fix ``α`` and under
  permutations of the FFN's hidden units; the rank-one *family* is their fixed-point set, so at
  ``σ = 0`` the full gradient has no part outside it, all along a run.
- ``e0 = 0`` embeds every token and position as 0: the gradient of every weight but the bias
  vanishes there, the bias is already optimal, so the run stays at ``e = 0`` with loss ``H(π)``
  (fate ``local``).
- The loss never increases along a gradient flow.
- With the bias trained and ``e > 0`` the embedding's metric is the constant
  ``G = diag(1 + N/4, 8, 1)``, so the flow in it is the Euclidean flow of the rescaled
  coordinates ``√G θ``.
- ``∇L = Jᵀg`` (``g`` the full gradient) gives ``∇Lᵀ G⁻¹ ∇L = ‖P g‖² ≤ ‖g‖²``: the full flow's
  initial descent rate is at least the induced-metric reduced flow's.
- The same invariance holds for every piece of the loss on either side of a ReLU kink, and the
  sliding motion is the least element of their convex hull, which the invariant maps fix: a
  run that slides along a kink from ``σ = 0`` stays in the family too.
- A mismatch's reason follows the rules of :mod:`gradflow.systems.markov.fate`, worked out on
  hand-made outcomes and evidence.
"""

from __future__ import annotations

import dataclasses
import json

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

import gradflow as gf
from gradflow.systems.markov import fate_runs as markov_fate_runs
from gradflow.systems.markov.chain import entropy_rate, unigram_loss
from gradflow.systems.markov.chain import p as p_sym
from gradflow.systems.markov.chain import q as q_sym
from gradflow.systems.markov.checks import family_residual
from gradflow.systems.markov.fate import (
    FATES,
    FateConfig,
    FullRuns,
    fate_map,
    full_options,
    full_runs,
    references,
)
from gradflow.systems.markov.full_landscape import FullLandscape, embed_batch
from gradflow.systems.markov.full_model import full_model
from gradflow.systems.markov.transformer import prefix_preactivations

P, Q = 0.5, 0.8
LENGTH = 4


@pytest.fixture(scope="module")
def tiny_map():
    config = FateConfig(
        p=P, q=Q, grid=2, box=(-1.5, 0.5, 0.0, 0.9), sigma=(0.0,), length=LENGTH, t_max=200.0
    )
    return fate_map(config)


@pytest.mark.slow
def test_e0_zero_stays_local_and_fates_are_named(tiny_map):
    names = tiny_map.fate_names()
    assert names.shape == (1, 2, 2)
    assert list(names[0, 0]) == ["local", "local"]
    np.testing.assert_allclose(tiny_map.projected[0, 0, :, 0], 0.0, atol=1e-12)
    h_pi = float(unigram_loss.subs({p_sym: P, q_sym: Q}))
    np.testing.assert_allclose(tiny_map.losses[0, 0], h_pi, atol=1e-9)
    assert set(names.ravel()) <= set(FATES)
    assert list(tiny_map.steps[0, 0]) == [0, 0]
    shares = tiny_map.agreement()
    assert set(shares) == {"euclidean σ=0", "induced σ=0"}
    assert all(0.0 <= v <= 1.0 for v in shares.values())
    assert len(tiny_map.cells()) == 8 and {c.reason for c in tiny_map.cells() if c.agree} == {None}


def test_cost_per_fate_adds_up_the_gradients_of_its_runs(hand_made_fate):
    """Seven full gradients per sliding-integrator step, one per descent step: a global run of
    10 steps and 30 descent steps (100 gradients), a global run of 300 descent steps, a local
    run of 20 steps and 460 descent steps (600), a kink of 1,000 steps and 2,000 descent steps
    (9,000): 10,000 gradients, global 4 % of them (most 300), local 6 %, kink 90 %; fates
    without runs are left out."""
    same = ["global", "kink", "local", "global"]
    fate = hand_made_fate(
        same,
        {"euclidean": same, "induced": same},
        steps=[10, 1000, 20, 0],
        descent=[30, 2000, 460, 300],
    )
    cost = fate.cost()
    assert set(cost) == {"global", "local", "kink"}
    assert cost["global"] == {"gradients": 400, "most": 300, "share": 0.04}
    assert cost["local"] == {"gradients": 600, "most": 600, "share": 0.06}
    assert cost["kink"] == {"gradients": 9000, "most": 9000, "share": 0.9}


def test_each_mismatch_gets_the_first_reason_that_holds(hand_made_fate):
    """Four runs, each predicted ``local`` in the induced metric (gap ``H(π) − H_rate`` = 0.1
    nats): one undecided (slow-corner), one global where the Euclidean map says global (metric),
    one global whose projection rose 0.05 nats up the reduced loss after its turn (> 0.01 × 0.1)
    leaving at cosine 0.8 with the unstable space of a full saddle (λ = −0.2 < 0; full-saddle),
    one global whose projection rose only 0.0005 nats (< 0.001: unexplained).  In the Euclidean
    group the second run agrees and the others have the same reasons: the induced map says
    local, not global, so no other metric explains them there either."""
    fates = ["undecided", "global", "global", "global"]
    reduced = {"euclidean": ["local", "global", "local", "local"], "induced": ["local"] * 4}
    fate = hand_made_fate(
        fates,
        reduced,
        rise=[0, 0, 0.05, 0.0005],
        saddle_rate=[0, 0, -0.2, -0.2],
        saddle_cos=[0, 0, 0.8, 0.8],
    )
    induced = [c.reason for c in fate.cells() if c.group == "induced σ=0"]
    euclidean = [c.reason for c in fate.cells() if c.group == "euclidean σ=0"]
    assert induced == ["slow-corner", "metric", "full-saddle", "unexplained"]
    assert euclidean == ["slow-corner", None, "full-saddle", "unexplained"]
    assert fate.agreement() == {"euclidean σ=0": 0.25, "induced σ=0": 0.0}
    assert fate.reasons() == {"slow-corner": 2, "metric": 1, "full-saddle": 2, "unexplained": 2}


def test_a_climb_up_the_reduced_loss_away_from_any_saddle_is_off_reduction(hand_made_fate):
    """Runs predicted ``local`` whose projections rose 0.05 nats up the reduced loss (gap 0.1):
    global at cosine 0.3 with the full saddle's unstable space (< 0.5), global beside a full
    minimum (no negative eigenvalue), and ``other`` (not the global minimum) at cosine 0.9: each
    ``off-reduction``; a run whose evidence was not recorded (``nan``) and started on the
    family is ``unexplained``.  The family distance alone names nothing: the last run ended 0.3
    off from 0."""
    fates = ["global", "global", "other", "global"]
    reduced = {"euclidean": ["local"] * 4, "induced": ["local"] * 4}
    fate = hand_made_fate(
        fates,
        reduced,
        rise=[0.05, 0.05, 0.05, np.nan],
        saddle_rate=[-0.2, 0.0, -0.2, np.nan],
        saddle_cos=[0.3, 0.9, 0.9, np.nan],
        off_end=[0.2, 0.2, 0.2, 0.3],
    )
    reasons = [c.reason for c in fate.cells() if c.group == "induced σ=0"]
    assert reasons == ["off-reduction", "off-reduction", "off-reduction", "unexplained"]


FULL_CONFIG = FateConfig(p=P, q=Q, grid=2, sigma=(0.0,), length=LENGTH, d=4, t_max=200.0)
"""The full runs of this module: one full model and one set of tolerances, so every run (the
recorded one, the steady state and the sliding run) uses the same compiled programs of
:func:`gradflow.slide`."""


@pytest.fixture(scope="module")
def full_run():
    """A recorded full run of the fate map's integrator from ``embed(0.8, -1.2)`` at ``σ = 0``,
    to its steady state."""
    full = FULL_CONFIG.full()
    h = jnp.asarray([P, Q])
    land = FullLandscape(full, h)
    flat, unravel = ravel_pytree(full.embed(jnp.asarray([0.8, -1.2]), h))
    run = gf.slide(land.kinks, np.asarray(flat), h, full_options(FULL_CONFIG), record=True)
    return full, h, land, run, unravel


def test_full_flow_stays_in_the_rank_one_family(full_run):
    full, h, _, run, unravel = full_run
    rows = np.linspace(0, len(run.thetas) - 1, 6).astype(int)
    for row in rows:
        params = unravel(jnp.asarray(run.thetas[row]))
        grads = jax.grad(full.loss)(params, h)
        assert float(family_residual(grads, full.direction)) <= 1e-12


def test_loss_never_increases_along_a_full_run(full_run):
    _, _, land, run, _ = full_run
    losses = land.loss(run.thetas)
    assert run.status == gf.Outcome.CONVERGED and len(losses) > 10
    assert np.all(np.diff(losses) <= 1e-13)
    rate = float(entropy_rate.subs({p_sym: P, q_sym: Q}))
    assert losses[-1] < losses[0] and losses[-1] >= rate - 1e-12


def test_initial_full_rate_is_at_least_the_induced_reduced_rate():
    full = full_model("canonical-attention", length=LENGTH, d=4)
    h = jnp.asarray([0.2, 0.3])
    rng = np.random.default_rng(3)
    for theta in rng.uniform([0.2, -1.5, -0.5], [1.5, 1.5, 0.5], size=(4, 3)):
        t = jnp.asarray(theta)
        g = jax.grad(full.loss)(full.embed(t, h), h)
        full_rate = sum(float(jnp.sum(x**2)) for x in jax.tree.leaves(g))
        grad = full.value.pulled_gradient(t, h)
        reduced_rate = float(grad @ jnp.linalg.solve(full.metric(t, h), grad))
        assert full_rate >= reduced_rate * (1 - 1e-12) and reduced_rate > 0


def test_a_full_steady_state_is_one_in_absolute_units(full_run):
    """The full model's tolerances are absolute (nats per weight unit), not relative to a
    gradient scale measured on its weights' default ranges, which says nothing about the flow:
    a run called converged has ``‖∇L_full‖ ≤ gtol`` and took flow time to get there."""
    full, h, land, _, _ = full_run
    assert gf.loss_scales(land) == gf.LossScales(length=1.0, gradient=1.0)
    start = np.asarray(ravel_pytree(full.embed(jnp.asarray([0.85, -0.3]), h))[0])
    result = gf.slide(land.kinks, start, h, full_options(FULL_CONFIG))
    assert result.status == gf.Outcome.CONVERGED and result.time > 1.0
    assert np.linalg.norm(land.grad(result.endpoint)) <= FULL_CONFIG.gtol


def test_the_kinks_on_the_ansatz(full_run):
    """With ``a = 0`` the residual stream of token ``x`` is ``±(e/2)α`` and every hidden unit's
    pre-activation is ``±|w|κ e/2`` (``κ = 1/√d = 1/2``): ``±2·½·¼ = ±¼`` at
    ``(e, w) = (0.5, -2)``, every one of them at ``e = 0``, where every prefix sits on a kink."""
    full, h, _, _, _ = full_run
    at = np.asarray(prefix_preactivations(full.embed(jnp.asarray([0.5, -2.0]), h)))
    np.testing.assert_allclose(np.abs(at), 0.25, atol=1e-12)
    assert at.shape == (2 ** (LENGTH + 1) - 2, 4 * 4)
    zero = np.asarray(prefix_preactivations(full.embed(jnp.asarray([0.0, -2.0]), h)))
    np.testing.assert_allclose(zero, 0.0, atol=1e-15)


@pytest.fixture(scope="module")
def sliding_run():
    """A run of the full model at ``p + q < 1`` from ``embed(0.4, -2.5)`` (``σ = 0``): the
    residual stream after a 1 is driven to 0 and the run slides along that kink of the ReLU."""
    p, q = 0.2, 0.3
    config = dataclasses.replace(FULL_CONFIG, p=p, q=q)
    full = config.full()
    h = jnp.asarray([p, q])
    land = FullLandscape(full, h)
    refs = references(config)
    level = refs["entropy_rate"] + 0.5 * (refs["unigram_loss"] - refs["entropy_rate"])
    flat, unravel = ravel_pytree(full.embed(jnp.asarray([0.4, -2.5]), h))
    start = np.asarray(flat)
    run = gf.slide(land.kinks, start, h, full_options(config), decide_below=level)
    return full, h, land, start, run, level, unravel


def test_a_run_that_slides_along_a_kink_stays_in_the_rank_one_family(sliding_run):
    full, h, _, _, run, _, unravel = sliding_run
    assert run.sliding_time > 1.0 and run.surfaces >= 1
    params = unravel(jnp.asarray(run.endpoint))
    assert float(family_residual(params, full.direction)) <= 1e-12
    grads = jax.grad(full.loss)(params, h)
    assert float(family_residual(grads, full.direction)) <= 1e-12


def test_a_sliding_run_descends_to_its_decision(sliding_run):
    """The loss never increases along the flow, sliding or not; this run is decided global."""
    _, _, land, start, run, level, _ = sliding_run
    assert run.status == gf.Outcome.GLOBAL_MIN
    assert land.loss(run.endpoint) < level < land.loss(start)


@pytest.mark.slow
def test_constant_induced_metric_is_the_euclidean_flow_of_rescaled_coordinates():
    full = full_model("canonical-bias", length=LENGTH, d=4)
    bound = full.reduced.bind(p=P, q=Q)
    scale = np.array([1 + LENGTH / 4, 8.0, 1.0])
    rng = np.random.default_rng(5)
    starts = rng.uniform([0.3, -2.0, -1.0], [1.5, 1.0, 1.0], size=(6, 3))
    for theta in starts:
        np.testing.assert_allclose(
            full.metric(jnp.asarray(theta), bound.h), np.diag(scale), atol=1e-14
        )

    def rescaled(u, h):
        return bound.field.loss(u / jnp.sqrt(jnp.asarray(scale)), h)

    land = gf.JaxLandscape(rescaled, ("u_e", "u_w", "u_b"), fn_args=bound.h)
    options = gf.FlowOptions(
        solver=diffrax.Tsit5(),
        controller=gf.PID(rtol=1e-10, atol=1e-12),
        stop=gf.StopRule(t_max=2e3),
    )
    induced = gf.flow_endpoints(bound, starts, options, metric=full.metric)
    euclid = gf.flow_endpoints(land, starts * np.sqrt(scale), options)
    np.testing.assert_array_equal(induced.status, euclid.status)
    np.testing.assert_allclose(induced.endpoints, euclid.endpoints / np.sqrt(scale), atol=1e-5)


TINY = ["--p", "0.5", "--q", "0.8", "--grid", "2", "--box", "-1.5", "0.5", "0", "0.9"]
TINY += ["--sigma", "0", "--length", "4", "--t-max", "200"]
"""The settings of the ``tiny_map`` fixture, so the command reuses its compiled flows."""


@pytest.mark.parametrize(
    "argv, message",
    [
        (["fate", "--p", "0.5", "--q", "0.8", "--grid", "1"], "grid = 1 must be an integer ≥ 2"),
        (["fate", "--p", "0.5", "--q", "0.8", "--sigma", "-0.1"], "must be finite numbers ≥ 0"),
        (["fate", "--p", "0", "--q", "0.8"], "p = 0 is outside the valid range (0, 1)"),
        (["fate", "--lr", "0"], "lr = 0.0 must be in (0, t_max = 300)"),
        (["fate", "--p", "0.5", "--q", "0.8", "--length", "15"], "too long for exact"),
    ],
)
def test_fate_bad_input_is_one_line_exit_2(argv, message, cli):
    cli.assert_rejected(argv, message)


@pytest.mark.slow
def test_fate_command_writes_the_map_and_resumes(cli, tmp_path, tiny_map):
    code, out, _ = cli("fate", *TINY, "--json")
    assert code == 0
    record = json.loads(out)
    assert record["counts"]["local"] >= 2 and sum(record["counts"].values()) == 4
    assert set(record["agreement"]) == {"euclidean σ=0", "induced σ=0"}
    assert record["system"] == "canonical" and record["cells"] == 8
    assert (tmp_path / "fate.npz").exists() and not (tmp_path / "fate.runs").exists()
    with np.load(tmp_path / "fate.npz") as data:
        np.testing.assert_array_equal(data["fates"], tiny_map.fates)
    folder = tmp_path / "resume"
    first = fate_map(tiny_map.config, checkpoint=folder)
    (folder / "runs" / "sigma0_seed0_row001.npz").unlink()
    again = fate_map(tiny_map.config, checkpoint=folder)
    np.testing.assert_array_equal(first.fates, again.fates)
    np.testing.assert_array_equal(first.losses, again.losses)
    np.testing.assert_array_equal(first.fates, tiny_map.fates)


def test_a_start_far_off_the_family_is_outside_the_reductions_assumption(hand_made_fate):
    """Runs predicted ``local`` that end ``global`` with no climb recorded: one that started
    0.5 off the family is outside the reduction's assumption (> 0.2); one that started 0.5 off
    and climbed 0.05 nats up the reduced loss (gap 0.1) left the reduced dynamics
    (off-reduction comes first); one that started 0.1 off is unexplained."""
    fates = ["global", "global", "global", "local"]
    reduced = {"euclidean": ["local"] * 4, "induced": ["local"] * 4}
    fate = hand_made_fate(
        fates, reduced, off_start=[0.5, 0.5, 0.1, 0], rise=[np.nan, 0.05, np.nan, np.nan]
    )
    reasons = [c.reason for c in fate.cells() if c.group == "induced σ=0"]
    assert reasons == ["assumption", "off-reduction", "unexplained", None]


def test_runs_with_noise_descend_hand_over_and_end_where_descent_alone_ends(monkeypatch):
    """Runs with noise (σ = 0.01, η = 0.05, flow-time budget 300, half of it for descent), each
    compared with gradient descent alone from the same start (no handover to the sliding
    integrator):

    - a run that descent decides keeps its stop: no step of the sliding integrator, flow time
      0.05 per descent step;
    - a run handed over at a small gradient ends with the same fate, at the same loss to
      1e-10 nats (both reach the full ``gtol`` beside the local set), after fewer descent
      steps;
    - a handover whose step budget runs out (one step here) is undone: the run descends on
      from its handover state, to the iterate, flow time and descent steps of descent alone,
      plus the one step tried;
    - descent alone still undecided at t = 150 is continued by the sliding integrator from
      there;
    - a run called global ended below the decision level, and every run ended below its
      starting loss."""
    config = FateConfig(
        p=P,
        q=Q,
        grid=2,
        box=(-1.5, 0.5, 0.05, 1.5),
        sigma=(0.01,),
        seeds=1,
        length=LENGTH,
        d=4,
        t_max=300.0,
        lr=0.05,
    )
    cell = FullRuns(config, 0.01, 0, (0, 1))
    runs = full_runs(cell)
    monkeypatch.setattr(markov_fate_runs, "HANDOVERS", ())
    alone = full_runs(cell)
    monkeypatch.setattr(markov_fate_runs, "HANDOVERS", ((config.gtol * 1e3, 1),))
    undone = full_runs(cell)

    fates, losses = np.asarray(FATES)[runs["fates"]], runs["losses"]
    np.testing.assert_array_equal(runs["fates"], alone["fates"])
    np.testing.assert_allclose(losses, alone["losses"], rtol=0, atol=1e-10)
    decided = runs["steps"] == 0
    assert decided.any() and set(fates[decided]) <= {"global", "local", "other"}
    np.testing.assert_allclose(runs["times"][decided], 0.05 * runs["descent"][decided])
    np.testing.assert_array_equal(runs["descent"][decided], alone["descent"][decided])
    handed = (runs["steps"] > 0) & (fates == "local")
    assert handed.any() and np.all(runs["descent"][handed] < alone["descent"][handed])
    sliding = alone["descent"] == 3000
    assert sliding.any() and np.all(alone["times"][sliding] > 150)

    np.testing.assert_array_equal(undone["descent"], alone["descent"])
    np.testing.assert_array_equal(undone["losses"], alone["losses"])
    np.testing.assert_array_equal(undone["times"], alone["times"])
    np.testing.assert_array_equal(undone["steps"] - alone["steps"], handed.astype(int))

    refs = references(config)
    level = refs["entropy_rate"] + 0.5 * (refs["unigram_loss"] - refs["entropy_rate"])
    assert np.all(losses[fates == "global"] < level)
    full = config.full()
    h = full.reduced.bind(p=P, q=Q).h
    land = FullLandscape(full, h)
    thetas = config.region().points().reshape(-1, 2)
    base = np.asarray(embed_batch(full)(jnp.asarray(thetas), h))
    noise = np.random.default_rng([0, 2]).standard_normal(base.shape)
    assert np.all(losses < land.loss(base + 0.01 * noise))


def test_quick_is_a_small_map_without_noise_and_keeps_the_options_given():
    """``--quick``: 4 × 4 runs at σ = 0 (16 runs, the ≤ 60 s map), whatever the defaults; an
    option given (the grid, p and q) wins over the quick settings."""
    from gradflow.systems.fate import quick_config

    quick = quick_config(FateConfig())
    assert (quick.grid, quick.sigma, quick.seeds) == (4, (0.0,), 1)
    assert len(quick.runs()) == 1 and (quick.p, quick.q) == (0.5, 0.8)
    given = quick_config(FateConfig(p=0.2, q=0.3, grid=3))
    assert (given.grid, given.p, given.q, given.sigma) == (3, 0.2, 0.3, (0.0,))


def test_batched_programs_of_the_full_model_serve_every_batch_with_few_programs(caplog):
    """``project`` is a left inverse of ``embed`` (for ``e > 0``), so ``project(embed(θ)) = θ``
    and the distance from the family is 0 on it; the batched programs give that at batches of
    1 to 40 points, padded to :data:`FULL_CALL_SIZES` (16 and 64 here): no program is lowered
    for the batch sizes themselves."""
    from gradflow.systems.markov.full_landscape import (
        FULL_CALL_SIZES,
        off_family,
        project_batch,
    )

    full = full_model("canonical", length=3, d=4)
    h = jnp.asarray([P, Q])
    thetas = np.random.default_rng(3).uniform([0.2, -2.0], [1.5, 2.0], size=(40, 2))
    with jax.log_compiles(True), caplog.at_level("WARNING"):
        for n in (1, 3, 16, 17, 40):
            weights = embed_batch(full)(thetas[:n], h)
            np.testing.assert_allclose(project_batch(full)(weights), thetas[:n], atol=1e-12)
            np.testing.assert_allclose(off_family(full)(weights, h), 0.0, atol=1e-12)
    lowered = " ".join(r.getMessage() for r in caplog.records)
    assert FULL_CALL_SIZES[:2] == (16, 64)
    width = weights.shape[1]
    assert f"float64[16,{width}]" in lowered and f"float64[64,{width}]" in lowered
    for n in (1, 3, 17, 40):
        assert f"float64[{n},2]" not in lowered and f"float64[{n},{width}]" not in lowered
