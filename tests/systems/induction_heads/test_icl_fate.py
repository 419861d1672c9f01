"""The induction-head fate map: the mathematics its comparisons rest on, its bookkeeping on
hand-built histories, and the command end to end.

- On a sample closed under relabelling the family ``W = aI + b11ᵀ`` is invariant under the
  minimal model's gradient (the symmetry argument), so gradient descent, heavy-ball momentum and
  Adam (whose per-entry normalization is the same on every diagonal entry and on every
  off-diagonal one) started on it stay on it to rounding; and the reduced field is the minimal
  model's gradient expressed in ``(a, b)``.
- The first push on ``(a, b)`` at ``θ = 0`` tends to ``(D_a, D_b)``, which vanishes for every
  doubly-stochastic chain and has closed forms for i.i.d. tokens and for ``k = 2``.
- The stages of a history and the fate map's comparisons, built by hand.
"""

from __future__ import annotations

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
import sympy as sp

from gradflow.systems.fate import FATE_SYSTEMS, REASONS, config_type, quick_config
from gradflow.systems.induction_heads import data as d
from gradflow.systems.induction_heads import minimal as mm
from gradflow.systems.induction_heads import reduction as R
from gradflow.systems.induction_heads.config import ICLFateConfig, RunSpec
from gradflow.systems.induction_heads.drive import leading_field, unigram_escape, unigram_point
from gradflow.systems.induction_heads.fate import ICLFateMap, fate_map, response
from gradflow.systems.induction_heads.phases import stages
from gradflow.systems.induction_heads.train import (
    minimal_setup,
    minimal_start,
    train,
    training_step,
)


@pytest.fixture(scope="module")
def symmetric():
    """A relabelling-closed sample: 16 sequences of length 12, k = 3, × 3! relabellings."""
    return mm.relabel_all(d.sample(jax.random.key(31), d.Dirichlet(), 16, 3, 12))


@pytest.mark.parametrize(
    "trainer",
    [
        optax.sgd(2.0),
        optax.sgd(1.0, momentum=0.9),
        optax.adam(0.05, b1=0.9, b2=0.95),
    ],
    ids=["gd", "momentum", "adam"],
)
def test_a_minimal_run_started_on_the_family_stays_on_it(symmetric, trainer):
    theta0 = jnp.concatenate(
        [jnp.array([0.7, -0.4]), 0.3 * jax.random.normal(jax.random.key(2), (11,))]
    )
    params = mm.embed(theta0, 3)
    state = trainer.init(params)

    @jax.jit
    def step(params, state):
        grads = jax.grad(mm.minimal_loss)(params, symmetric, "softmax")
        updates, state = trainer.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    for _ in range(40):
        params, state = step(params, state)
        W = params.W
        assert float(mm.family_residual(W)) <= 1e-12 * float(jnp.linalg.norm(W))
    assert float(jnp.linalg.norm(params.W - mm.embed(theta0, 3).W)) > 0.1  # it moved


def test_reduced_field_is_the_minimal_gradient_in_a_b_coordinates(symmetric):
    """At a point of the family, ``∇_W L = α I + β 11ᵀ`` exactly, and the reduced field's
    ``(a, b)`` part is ``(α, β)`` (``G⁻¹ ∇_{(a,b)} L``); its ``v`` part is ``∇_v L``."""
    theta = jnp.concatenate(
        [jnp.array([1.3, 0.6]), 0.5 * jax.random.normal(jax.random.key(3), (11,))]
    )
    grad = jax.grad(mm.minimal_loss)(mm.embed(theta, 3), symmetric, "softmax")
    field = mm.reduced_field("softmax").grad(theta, symmetric)
    scale = float(jnp.abs(grad.W).max())
    np.testing.assert_allclose(
        mm.embed(jnp.concatenate([field[:2], field[2:]]), 3).W, grad.W, atol=1e-12 * scale
    )
    np.testing.assert_allclose(field[2:], grad.v, atol=1e-14)


def test_reduced_sgd_is_the_minimal_sgd_on_relabelling_closed_batches():
    """The reduction trained by SGD on the minimal model's batches equals the projection of
    the minimal model trained by SGD on the same batches closed under relabelling (which stays
    on the family), step for step, from a start on the family."""
    spec = RunSpec(
        model="minimal",
        k=3,
        T=10,
        batch=8,
        steps=24,
        lr=2.0,
        eval_every=6,
        eval_n=16,
        seed=3,
        a0=0.4,
        b0=-0.1,
    )
    reduced = train(dataclasses.replace(spec, model="reduced", solver="sgd"), progress=False)
    loss, params, trainer, draw = minimal_setup(spec)
    step = jax.jit(training_step(loss, trainer, lambda key: mm.relabel_all(draw(key))))
    state = (params, trainer.init(params), jax.random.key(spec.seed))
    path = [mm.project(params)]
    for i in range(1, spec.steps + 1):
        state, _ = step(state, None)
        assert float(mm.family_residual(state[0].W)) <= 1e-12 * float(jnp.linalg.norm(state[0].W))
        if i % spec.eval_every == 0:
            path.append(mm.project(state[0]))
    np.testing.assert_allclose(reduced.traces["theta"], np.stack(path), atol=1e-12)
    assert abs(reduced.traces["theta"][-1, 0] - 0.4) > 0.05  # it moved


def test_leading_drive_vanishes_on_doubly_stochastic_chains_and_has_closed_forms():
    P = np.asarray(d.DoublyStochastic().matrices(jax.random.key(4), 200, 3))
    assert np.abs(R.leading_drive(P)).max() < 1e-15
    # i.i.d. tokens: every row is π, so Pπ = ‖π‖² 1.
    pi = np.asarray(d.Unigram().matrices(jax.random.key(5), 50, 4))[:, 0]
    rows = np.broadcast_to(pi[:, None, :], (50, 4, 4))
    square = (pi**2).sum(-1)
    np.testing.assert_allclose(
        R.leading_drive(rows), np.stack([square * (square - 0.25), square - 0.25], -1), atol=1e-15
    )


def test_leading_drive_for_two_states_equals_sympy():
    """k = 2, P = [[1-p, p], [q, 1-q]], π = (q, p)/(p+q): D_b = (p-q)²/(2(p+q)²), and D_a from
    its definition in SymPy."""
    p, q = sp.symbols("p q", positive=True)
    P = sp.Matrix([[1 - p, p], [q, 1 - q]])
    pi = sp.Matrix([q, p]) / (p + q)
    P_pi = P * pi
    D_a = sum(pi[i] ** 2 * (P_pi[i] - sp.Rational(1, 2)) for i in range(2))
    D_b = sum(pi[i] ** 2 for i in range(2)) - sp.Rational(1, 2)
    assert sp.simplify(D_b - (p - q) ** 2 / (2 * (p + q) ** 2)) == 0
    for pv, qv in ((0.2, 0.7), (0.9, 0.35), (0.5, 0.5)):
        values = {p: pv, q: qv}
        numeric = R.leading_drive(np.array([[1 - pv, pv], [qv, 1 - qv]]))
        np.testing.assert_allclose(
            numeric, [float(D_a.subs(values)), float(D_b.subs(values))], atol=1e-15
        )


@pytest.mark.slow
def test_unigram_point_is_the_minimum_of_the_convex_loss_in_b():
    """``L(0, b, 0)`` is convex in ``b`` (logits ``b C``, cross-entropy convex in the logits):
    Newton's root of ``∂L/∂b`` is its minimum, below the loss a little to either side."""
    prior = d.Dirichlet()
    b_star = unigram_point(prior, 3, 12, 64, seed=3)
    data = d.sample(jax.random.key(3), prior, 64, 3, 12)

    def loss(b):
        return mm.reduced_loss(jnp.stack([0.0, b, 0.0]), data, "softmax")

    assert abs(float(jax.grad(loss)(b_star))) < 1e-12
    assert float(jax.grad(jax.grad(loss))(b_star)) > 0
    assert float(loss(b_star)) < min(float(loss(b_star - 0.1)), float(loss(b_star + 0.1)))
    assert b_star > 0  # Dirichlet data carry a unigram signal: b* > 0 fits it


def test_leading_field_of_the_doubly_stochastic_prior_is_zero():
    assert np.abs(leading_field(d.DoublyStochastic(), 3, 500).mean).max() < 1e-15
    dirichlet = leading_field(d.Dirichlet(), 3, 20_000)
    assert np.all(dirichlet.mean > 5 * dirichlet.se)  # both coordinates pushed up


def test_at_the_unigram_point_the_positional_vector_has_no_push_and_no_self_coupling():
    """Softmax mixing: ``∂f/∂v = a ∂U/∂v``, so at ``a = 0`` ``dv_1/dt = 0`` and
    ``∂(dv_1/dt)/∂v_1 = 0``, whatever ``b`` (to rounding: the softmax rows sum to 1 within
    an ulp); ``b*`` is the unigram point."""
    escape = unigram_escape(d.Dirichlet(), 3, 12, 32, seed=5)
    scale = abs(escape.source[0]) + np.abs(escape.jacobian).max()
    assert abs(escape.source[1]) <= 1e-14 * scale and abs(escape.jacobian[1, 1]) <= 1e-14 * scale
    assert escape.b_star == unigram_point(d.Dirichlet(), 3, 12, 32, seed=5)
    assert escape.growth == pytest.approx(float(np.max(np.linalg.eigvals(escape.jacobian).real)))


def test_a_start_on_the_family_projects_to_its_coordinates():
    spec = RunSpec(model="minimal", k=3, T=12, a0=1.5, b0=-0.25)
    np.testing.assert_allclose(np.asarray(mm.project(minimal_start(spec)))[:2], [1.5, -0.25])
    noisy = minimal_start(RunSpec(model="minimal", k=3, T=12, init_scale=0.1, seed=4))
    assert float(mm.family_residual(noisy.W)) > 0.01  # σ > 0 starts off the family


def _distances(labels: list[int]) -> np.ndarray:
    """Distances whose nearest strategy at each evaluation is ``labels`` (0 uniform, 1 unigram,
    2 bigram)."""
    out = np.ones((len(labels), 3))
    out[np.arange(len(labels)), labels] = 0.0
    return out


def test_stages_of_a_hand_built_history():
    steps = np.arange(11) * 10.0
    # uniform ×2, unigram ×3, a one-evaluation flicker back to uniform, unigram, bigram ×3
    st = stages(steps, _distances([0, 0, 1, 1, 1, 0, 1, 1, 2, 2, 2]))
    assert st.order == ("uniform", "unigram", "bigram") and st.final == "bigram"
    assert (st.uniform_time, st.unigram_onset, st.transition_step) == (20.0, 20.0, 80.0)
    assert st.unigram_time == 60.0 and st.outcome == "uniform→unigram→bigram"
    # a return to uniform for two evaluations counts; the one-evaluation unigram after it not
    kept = stages(steps, _distances([0, 0, 1, 1, 1, 0, 0, 1, 2, 2, 2]))
    assert kept.order == ("uniform", "unigram", "uniform", "bigram")
    direct = stages(steps[:4], _distances([0, 0, 2, 2]))
    assert direct.order == ("uniform", "bigram") and direct.unigram_time == 0.0
    stuck = stages(steps[:4], _distances([0, 0, 0, 0]))
    assert stuck.uniform_time is None and stuck.transition_step is None and stuck.final == "uniform"


def _run(labels: list[int], every: float, off: float = 0.0) -> dict[str, np.ndarray]:
    n = len(labels)
    return {
        "steps": np.arange(n) * every,
        "distance_mean": _distances(labels),
        "test_mean": np.zeros(n),
        "theta": np.zeros((n, 3)),
        "off_family": np.full(n, off),
    }


def _toy_map(censored: bool = False, off: float | None = None, solver: str = "sgd") -> ICLFateMap:
    """Shares 0 and 1 at one scale.  Transformer (every 20 steps): ρ = 0 u u 1 1 1 1 2 2
    (transition 120), ρ = 1 u u u 2 2 2 2 2 (60), or stuck at uniform; minimal and reduced
    (every 4): ρ = 0 u 1 1 1 2 2 2 2 (16), ρ = 1 u u u u u u 2 2 (24); with ``off`` given the
    reduction at ρ = 0 goes u u 2 … instead and the minimal runs are ``off`` off the family."""
    config = ICLFateConfig(shares=(0.0, 1.0), scales=(0.02,), reduced_solver=solver)
    slow = [0, 0, 0, 0, 0, 0, 2, 2]
    base = [0, 1, 1, 1, 2, 2, 2, 2]
    runs = {
        ("transformer", 0.0, 0.02, 0): _run([0, 0, 1, 1, 1, 1, 2, 2], 20),
        ("transformer", 1.0, 0.02, 0): _run([0] * 8 if censored else [0, 0, 0, 2, 2, 2, 2, 2], 20),
        ("minimal", 0.0, 0.02, 0): _run(base, 4, off or 0.0),
        ("minimal", 1.0, 0.02, 0): _run(slow, 4, off or 0.0),
        ("reduced", 0.0, 0.02, 0): _run(base if off is None else [0, 0, 2, 2, 2, 2, 2, 2], 4),
        ("reduced", 1.0, 0.02, 0): _run(slow, 4),
    }
    return ICLFateMap(config, runs)


def test_fate_map_comparisons_by_hand():
    fate = _toy_map()
    assert fate.agreement() == {
        "reduced vs transformer": 1.0,
        "minimal vs transformer": 1.0,
        "reduced vs minimal": 1.0,
        "ρ-response": 0.0,
    }
    (mismatch,) = fate.mismatches()
    assert (mismatch["reduced"], mismatch["full"], mismatch["reason"]) == (
        "later",
        "sooner",
        "assumption",
    )
    ratio = fate.ratios("reduced")  # 16/120 and 24/60; later by 8 steps, two evaluations
    assert ratio["runs"] == 2 and ratio["median"] == pytest.approx((16 / 120 + 24 / 60) / 2)
    record = fate.metadata()
    assert record["system"] == "induction-heads" and record["cells"] == 7
    assert set(record["reasons"]) <= set(REASONS)


def test_a_run_out_of_budget_is_a_slow_corner_and_off_family_drift_is_named():
    stuck = _toy_map(censored=True)
    found = {(m["group"], m["reason"]) for m in stuck.mismatches()}
    assert found == {
        ("reduced vs transformer", "slow-corner"),
        ("minimal vs transformer", "slow-corner"),
        ("ρ-response", "slow-corner"),
    }
    for off, solver, named in (
        (0.5, "gd", "off-reduction"),  # W far off the family at the transition
        (0.01, "gd", "assumption"),  # near the family: the fixed sample
        (0.01, "sgd", "off-reduction"),  # same batches: only the off-family part differs
    ):
        found = _toy_map(off=off, solver=solver).mismatches()
        assert ("reduced vs minimal", named) in {(m["group"], m["reason"]) for m in found}


def test_a_map_where_no_run_reaches_bigram_claims_no_response():
    """Every run stays in the unigram stage (a budget too short, as a quick map's): the stage
    orders agree (uniform → unigram on both sides), but there is no transition to compare, so
    the ρ-response is no agreement — a slow corner — and the ratios say that no pair settled."""
    fate = _stuck_map()
    assert fate.agreement()["ρ-response"] == 0.0
    assert fate.agreement()["reduced vs transformer"] == 1.0
    assert {m["reason"] for m in fate.mismatches()} == {"slow-corner"}
    assert "nan" not in fate.text() and "no pair of runs both settled" in fate.text()


def test_from_the_unigram_point_orders_are_compared_from_the_unigram_stage_on():
    """With ``start = "unigram"`` the minimal model and the reduction begin in the unigram
    stage; the transformer's uniform stage before it is not compared."""
    config = ICLFateConfig(shares=(0.0,), scales=(0.02,), start="unigram")
    transformer = [0, 0, 1, 1, 1, 1, 2, 2]
    from_unigram = [1, 1, 1, 2, 2, 2, 2, 2]
    runs = {
        ("transformer", 0.0, 0.02, 0): _run(transformer, 20),
        ("minimal", 0.0, 0.02, 0): _run(from_unigram, 4),
        ("reduced", 0.0, 0.02, 0): _run(from_unigram, 4),
    }
    fate = ICLFateMap(config, runs)
    assert set(fate.agreement().values()) == {1.0}
    zero = ICLFateMap(dataclasses.replace(config, start="zero"), runs)
    assert zero.agreement()["reduced vs transformer"] == 0.0


def test_response_band():
    assert response(100.0, 100.0) == "same" and response(104.0, 100.0) == "same"
    assert response(92.0, 100.0) == "sooner" and response(108.0, 100.0) == "later"
    assert response(108.0, 100.0, interval=10.0) == "same"  # within one evaluation
    assert response(None, 100.0) == "censored"


def test_configuration_is_checked_and_quick_is_small():
    assert config_type("induction-heads") is ICLFateConfig and "induction-heads" in FATE_SYSTEMS
    quick = quick_config(ICLFateConfig())
    assert quick.shares == (0.0, 1.0) and quick.T == 32
    with pytest.raises(Exception, match="optimizer"):
        RunSpec(model="reduced", optimizer="adam")
    with pytest.raises(Exception, match="give its lr"):
        RunSpec(model="minimal", optimizer="adam")
    with pytest.raises(Exception, match="evaluate_on"):
        RunSpec(model="minimal", evaluate_on="test")
    with pytest.raises(Exception, match="start"):
        ICLFateConfig(start="random")


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--shares", "0,1.5"], "[0, 1]"),
        (["--shares", "0,0"], "each value once"),
        (["--scales", "0.02,0"], "init scale 0.0"),
        (["--k", "5"], "k = 5"),
        (["--transformer-steps", "0"], "steps = 0"),
        (["--start", "random"], "invalid choice"),
    ],
)
def test_bad_input_is_one_line_exit_2(cli, argv, match):
    cli.assert_rejected(["fate", "--model", "induction-heads", *argv], match)


@pytest.mark.slow
def test_quick_map_runs_from_the_command_line_and_resumes(cli, tmp_path):
    """The map computed into a checkpoint folder, then the command resumes from it (every
    cell already there, nothing trained again) and writes the same agreement."""
    quick = quick_config(ICLFateConfig())
    first = fate_map(quick, checkpoint=tmp_path / "fate.runs")
    for model in ("transformer", "minimal", "reduced"):  # the quick map is not empty
        assert np.isfinite(first.transitions(model)).all(), model
    out = tmp_path / "fate.npz"
    run = cli("fate", "--model", "induction-heads", "--quick", "--json", "--out", str(out))
    assert run.code == 0
    record = json.loads(run.out)
    assert record["system"] == "induction-heads" and record["cells"] == 7
    assert record["agreement"] == first.agreement()
    assert set(record["agreement"]) == {
        "reduced vs transformer",
        "minimal vs transformer",
        "reduced vs minimal",
        "ρ-response",
    }
    assert all(m["reason"] in REASONS for m in record["mismatches"])
    assert (tmp_path / "fate.png").exists() and not (tmp_path / "fate.runs").exists()
    with np.load(out) as data:
        assert data["transformer_transition"].shape == (1, 2, 1)
        np.testing.assert_array_equal(
            data["reduced_rho1_sigma0_seed0_distance_mean"],
            first.runs[("reduced", 1.0, 0.02, 0)]["distance_mean"],
        )


def test_a_map_where_no_run_reaches_bigram_says_so_in_its_empty_panels():
    """No transition anywhere: the response (d), the ratio (e) and the stage times scaled by a
    transition (f) have nothing to draw, and each says why in words."""
    fig = _stuck_map().figure()
    said = {ax.get_title().split(")")[0] + ")": [t.get_text() for t in ax.texts] for ax in fig.axes}
    assert said["(d)"] == ["no run reached bigram:\nno transition to compare"]
    assert said["(e)"] == ["no cell where both the reduction\nand the transformer reached bigram"]
    assert said["(f)"] == ["no model reached bigram at ρ = 0:\nno transition to scale by"]
    assert all(text.endswith("no bigram") for text in said["(a)"])  # each cell in words


def test_the_maps_heat_maps_have_labelled_colour_bars_and_its_title_reads_the_cell_texts():
    """The toy map's picture: the three transition grids (a)–(c) and the ratio grid (e) each
    have a colour bar naming what it shows and its unit (training steps; the ratio has none),
    and the title says what U, 1 and 2 in the cells stand for."""
    fig = _toy_map().figure()
    bars = [ax.get_xlabel() for ax in fig.axes if ax.get_label() == "<colorbar>"]
    assert bars == ["median transition step (training steps)"] * 3 + [
        "transition ratio reduction / transformer (no unit)"
    ]
    assert "U uniform, 1 unigram, 2 bigram" in fig._suptitle.get_text()


def test_the_csv_gives_each_comparison_its_two_transitions():
    """The toy map's transitions (its docstring): transformer 120 at ρ = 0 and 60 at ρ = 1,
    minimal model and reduction 16 and 24; per point the three pairs, then at ρ = 1 the
    ρ-response (reduction against transformer)."""
    header, rows = _toy_map().csv_table()
    table = [dict(zip(header, row)) for row in rows]
    assert [r["group"] for r in table[:3]] == [
        "reduced vs transformer",
        "minimal vs transformer",
        "reduced vs minimal",
    ]
    assert [r["reduced_transition"] for r in table] == ["16.0"] * 3 + ["24.0"] * 4
    assert [r["full_transition"] for r in table] == [
        "120.0",
        "120.0",
        "16.0",
        "60.0",
        "60.0",
        "24.0",
        "60.0",
    ]
    assert table[-1]["group"] == "ρ-response" and table[-1]["agree"] == "False"


def _stuck_map() -> ICLFateMap:
    """A map at ρ ∈ {0, 1}, σ = 0.02 where every run of every model stays in the unigram
    stage (uniform, then unigram from the third of eight records)."""
    config = ICLFateConfig(shares=(0.0, 1.0), scales=(0.02,))
    stuck = [0, 0, 1, 1, 1, 1, 1, 1]
    runs = {
        (model, rho, 0.02, 0): _run(stuck, 4)
        for model in ("transformer", "minimal", "reduced")
        for rho in (0.0, 1.0)
    }
    return ICLFateMap(config, runs)
