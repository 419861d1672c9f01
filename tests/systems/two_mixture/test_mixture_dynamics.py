"""Two-mixture task: dynamics.  The closed score equations' sinh law, the conserved
W_Q W_Qᵀ − W_K W_Kᵀ, the reduced flow and descent against the full model's, the staged schedule,
stage detection and the ln(1/ω) fit."""

from __future__ import annotations

import dataclasses

import diffrax
import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest

from gradflow import PID, FlowOptions, GradflowError, GradientField, StopRule, flow
from gradflow.systems.two_mixture.reduced import infinite_width_state, score_velocity
from gradflow.systems.two_mixture.stages import detect_stages, fit_log_law, omega_sweep
from gradflow.systems.two_mixture.training import MixtureRun, TrainOptions, train, train_reduced
from gradflow.systems.two_mixture.transformer import (
    MixtureConfig,
    MixtureTransformer,
    init_transformer,
)


def _sinh_field(G: np.ndarray) -> GradientField:
    """The closed equations for (B, P_Q, P_K) of one head under a constant driving gradient G."""
    r = G.shape[0]
    G = jnp.asarray(G)

    def minus_velocity(theta, _):
        B, P_Q, P_K = theta.reshape(3, r, r)
        return -jnp.concatenate([v.ravel() for v in score_velocity(B, P_Q, P_K, G)])

    return GradientField(loss=lambda theta, _: jnp.zeros(()), grad=minus_velocity)


def test_score_grows_as_omega_squared_sinh_and_reaches_one_at_arcsinh_over_2gamma():
    """Derivation.  At the infinite-width initialization B = 0, P_Q = P_K = ω² I.  With
    G = −γ e_a e_bᵀ (a ≠ b) the equations dB/dt = −(G P_Q + P_K G), dP_Q/dt = −(Gᵀ B + Bᵀ G),
    dP_K/dt = −(G Bᵀ + B Gᵀ) keep every entry at its initial value except β = B[a, b],
    p = P_Q[b, b] and q = P_K[a, a], which obey dβ/dt = γ(p + q), dp/dt = dq/dt = 2γβ.  So
    p = q, dβ/dt = 2γp, dp/dt = 2γβ, β(0) = 0, p(0) = ω²: β = ω² sinh(2γt), p = ω² cosh(2γt).
    β reaches 1 at t* = arcsinh(ω⁻²)/(2γ); for γ = 0.7, ω = 0.05, t* = arcsinh(400)/1.4 = 4.7747."""
    gamma, omega, a, b = 0.7, 0.05, 2, 0
    config = MixtureConfig(K=2, d=8, m=16, omega=omega)
    state = infinite_width_state(config)
    assert np.array_equal(state.B[0], np.zeros((4, 4)))
    assert np.array_equal(state.P_Q[0], omega**2 * np.eye(4))
    G = np.zeros((4, 4))
    G[a, b] = -gamma
    t_star = np.arcsinh(omega**-2) / (2 * gamma)
    assert t_star == pytest.approx(4.7747, abs=5e-5)
    ts = np.array([0.0, 1.0, 2.5, 4.0, t_star])
    theta0 = np.concatenate([state.B[0].ravel(), state.P_Q[0].ravel(), state.P_K[0].ravel()])
    options = FlowOptions(
        solver=diffrax.Tsit5(),
        controller=PID(rtol=1e-11, atol=1e-14),
        stop=StopRule(gtol=1e-300, t_max=t_star),
    )
    path = flow(_sinh_field(G), theta0, options, ts=ts)
    B, P_Q, P_K = path.thetas.reshape(len(ts), 3, 4, 4).transpose(1, 0, 2, 3)
    assert np.allclose(B[:, a, b], omega**2 * np.sinh(2 * gamma * ts), rtol=1e-8, atol=1e-14)
    assert np.allclose(P_Q[:, b, b], omega**2 * np.cosh(2 * gamma * ts), rtol=1e-8)
    assert np.allclose(P_K[:, a, a], omega**2 * np.cosh(2 * gamma * ts), rtol=1e-8)
    others = np.ones((4, 4), bool)
    others[a, b] = False
    assert np.abs(B[:, others]).max() < 1e-14
    assert B[-1, a, b] == pytest.approx(1.0, rel=1e-8)


FLOW_CONFIG = MixtureConfig(K=2, d=5, m=3, d_head=3, omega=1.0, basis="random", seed=2)
FLOW_OPTIONS = TrainOptions(method="flow", t_max=12.0, records=4, rtol=1e-11, atol=1e-13)


def _active_init(config: MixtureConfig) -> MixtureTransformer:
    """The random initialization with 6(c_1 + c_2) added to every neuron.

    Every sample holds its c_k token with sign +1, so ⟨w, u⟩ ≥ 6·(attention mass on c_k)/L − |⟨w_rand, u⟩|
    stays positive over the short horizon: no neuron meets a ReLU kink, the flow is smooth and
    the integrator meets its tolerances (at a kink an adaptive solver's steps collapse).
    """
    model = init_transformer(config)
    U = config.frame()
    shift = 6.0 * (U[:, 0] + U[:, 1])
    return eqx.tree_at(lambda m: [h.W for h in m.heads], model, [h.W + shift for h in model.heads])


@pytest.fixture(scope="module", params=["difference", pytest.param("tied", marks=pytest.mark.slow)])
def flow_runs(request) -> tuple[MixtureRun, MixtureRun]:
    config = dataclasses.replace(FLOW_CONFIG, combine=request.param)
    init = _active_init(config)
    return (
        train(config, FLOW_OPTIONS, init, progress=False),
        train_reduced(config, FLOW_OPTIONS, init, progress=False),
    )


def test_query_key_gram_difference_is_conserved_along_the_full_flow(flow_runs):
    """d/dt W_Q W_Qᵀ = −W_K U G Uᵀ W_Qᵀ − W_Q U Gᵀ Uᵀ W_Kᵀ = d/dt W_K W_Kᵀ, per head."""
    full, _ = flow_runs
    assert full.status == "horizon" and full.ts[-1] == FLOW_OPTIONS.t_max
    assert full.conservation.max() < 1e-6
    moved = np.abs(full.scores[-1] - full.scores[0]).max()
    assert moved > 0.05  # the attention state did move: the invariant is not trivially constant


def test_reduced_flow_matches_the_full_flow_on_the_signal_span(flow_runs):
    full, reduced = flow_runs
    assert reduced.status == "horizon"
    assert np.abs(full.loss[-1] - full.loss[0]) > 0.01
    assert np.abs(full.scores - reduced.scores).max() < 1e-9
    assert np.abs(full.neurons - reduced.neurons).max() < 1e-9
    assert np.abs(full.loss - reduced.loss).max() < 1e-10


@pytest.mark.slow
def test_reduced_descent_is_the_projection_of_full_descent_under_the_staged_schedule():
    """Full descent S_Q ← S_Q − η S_K G, S_K ← S_K − η S_Q Gᵀ maps B, P_Q, P_K by the exact
    second-order map of ReducedMixture.descent_step: the projected runs agree to rounding."""
    config = MixtureConfig(K=2, d=6, m=4, omega=0.8, basis="random", seed=1)
    options = TrainOptions(
        schedule="staged", t_max=30.0, lr=0.25, records=12, stage_times=(10.0, 20.0)
    )
    full = train(config, options, progress=False)
    reduced = train_reduced(config, options, progress=False)
    assert np.abs(full.scores - reduced.scores).max() < 1e-11
    assert np.abs(full.neurons - reduced.neurons).max() < 1e-11
    assert np.allclose(full.neuron_norms, reduced.neuron_norms, rtol=1e-11)
    stage1, stage2, stage3 = slice(0, 5), slice(4, 9), slice(8, 13)
    for frozen in (stage1, stage3):  # attention frozen, neurons move
        assert np.array_equal(
            full.scores[frozen], np.broadcast_to(full.scores[frozen][:1], full.scores[frozen].shape)
        )
        assert np.abs(np.diff(full.neurons[frozen], axis=0)).max() > 1e-4
    assert np.array_equal(
        full.neurons[stage2], np.broadcast_to(full.neurons[stage2][:1], full.neurons[stage2].shape)
    )
    assert np.abs(np.diff(full.scores[stage2], axis=0)).max() > 1e-6


def _synthetic_run(ts, loss, max_score, span) -> MixtureRun:
    """A run whose three stage signals are given: scores with max |B| = max_score, and neurons
    with a span cosine = span (one neuron per head, norm 1)."""
    T = len(ts)
    scores = np.zeros((T, 2, 4, 4))
    scores[:, 1, 3, 0] = -np.asarray(max_score)
    neurons = np.zeros((T, 2, 1, 4))
    neurons[:, :, 0, 2] = np.asarray(span)[:, None]
    return MixtureRun(
        config=MixtureConfig(m=1),
        options=TrainOptions(),
        kind="reduced",
        ts=np.asarray(ts, float),
        loss=np.asarray(loss, float),
        loss_hard=np.asarray(loss, float),
        loss_consistent=np.asarray(loss, float),
        scores=scores,
        neurons=neurons,
        neuron_norms=np.ones((T, 2, 1)),
        conservation=np.zeros((T, 0)),
        status="horizon",
    )


def test_stage_detection_reads_the_first_crossing_of_each_level():
    ts = np.arange(6) * 10.0
    run = _synthetic_run(
        ts,
        loss=[0.69, 0.5, 0.3, 0.1, 0.04, 0.01],
        max_score=[1e-4, 1e-3, 0.5, 1.0, 3.0, 0.2],
        span=[0.7, 0.995, 0.98, 0.999, 1.0, 1.0],
    )
    stages = detect_stages(run)
    assert (stages.t_align, stages.t_attention, stages.t_fit) == (10.0, 30.0, 40.0)
    assert stages.attention_duration == 20.0
    assert np.allclose(run.span_cosine, [0.7, 0.995, 0.98, 0.999, 1.0, 1.0])
    never = detect_stages(run, score_level=10.0, loss_level=1e-3)
    assert (
        np.isnan(never.t_attention) and np.isnan(never.t_fit) and np.isnan(never.attention_duration)
    )


def test_log_law_fit_recovers_an_exact_law_and_rejects_too_few_points():
    omegas = np.array([1e-3, 1e-2, 1e-1, 0.3])
    law = fit_log_law(omegas, 120.0 * np.log(1 / omegas) + 40.0)
    assert law.slope == pytest.approx(120.0) and law.intercept == pytest.approx(40.0, abs=1e-9)
    assert law.r2 == pytest.approx(1.0) and law.max_residual < 1e-9
    with pytest.raises(GradflowError, match="at least two"):
        fit_log_law([1e-3, 1e-2], [100.0, float("nan")])


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"schedule": "cyclic"}, "schedule"),
        ({"method": "adam"}, "method"),
        ({"t_max": 0.0}, "t_max"),
        ({"lr": -0.1}, "lr"),
        ({"records": 0}, "records"),
        ({"lr": 0.07}, "whole number"),
        ({"schedule": "staged", "stage_times": (105.0, 500.0)}, "record grid"),
        ({"schedule": "staged", "stage_times": (600.0, 500.0)}, "0 < t_1 < t_2"),
    ],
)
def test_bad_training_options_raise_one_line_errors(kwargs, named):
    with pytest.raises(GradflowError, match=named) as info:
        TrainOptions(**kwargs)
    assert "\n" not in str(info.value)


@pytest.mark.slow
def test_attention_stage_grows_like_log_one_over_omega():
    """The attention stage of the joint run lengthens linearly in ln(1/ω) (reduced dynamics,
    whose descent is the exact projection of full descent).  The fit time is not asserted after
    the escape: at small ω the neurons alone, which can read the group from c_k, bring the loss
    to 0.05 about when the scores reach 1 (docs/systems/two-mixture.md)."""
    config = MixtureConfig(K=2, d=8, m=64)
    omegas = [1e-3, 1e-2, 1e-1]
    times, law = omega_sweep(
        config, omegas, TrainOptions(t_max=2000.0, records=200), progress=False
    )
    durations = [t.attention_duration for t in times]
    assert np.all(np.isfinite(durations)) and np.all(np.diff(durations) < 0)
    assert law.slope > 0 and law.r2 > 0.97
    for t in times:
        assert t.t_align < t.t_attention
