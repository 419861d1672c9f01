"""Two-mixture task: the population, the full two-headed model and the exact reduction, checked
against values that follow from the mathematics (hand-built weights, closed forms, SymPy)."""

from __future__ import annotations

import itertools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import sympy as sp

from gradflow import GradflowError
from gradflow.systems.two_mixture.data import population, signal_basis
from gradflow.systems.two_mixture.reduced import (
    ReducedMixture,
    attention_average,
    attention_inputs,
    derive_score_equations,
    infinite_width_state,
    project,
    score_symbols,
    score_velocity,
)
from gradflow.systems.two_mixture.transformer import (
    Head,
    MixtureConfig,
    MixtureTransformer,
    head_output,
    init_transformer,
    output_signs,
    population_loss,
)

LN2 = np.log(2.0)

logits = eqx.filter_jit(lambda model, X: jax.vmap(model)(X))
full_loss = eqx.filter_jit(population_loss)
reduced_loss = eqx.filter_jit(lambda red, model, U: red.loss(project(model, U)))


def _data(config: MixtureConfig) -> tuple[np.ndarray, jax.Array, jax.Array]:
    U = config.frame()
    pop = config.population()
    return U, jnp.asarray(pop.tokens(U)), jnp.asarray(pop.y, jnp.float64)


@pytest.mark.parametrize("K", [2, 3, 4])
def test_population_has_4K_K_minus_1_distinct_samples_half_of_them_hard(K):
    pop = population(K)
    assert pop.n == 4 * K * (K - 1)
    signed = {tuple(sorted(zip(s, g))) for s, g in zip(pop.slots.tolist(), pop.signs.tolist())}
    assert len(signed) == pop.n
    assert pop.hard.sum() == pop.n // 2
    for slots, signs, k, kp, y, e in zip(
        pop.slots, pop.signs, pop.group, pop.other, pop.y, pop.eps
    ):
        assert sorted(zip(slots.tolist(), signs.tolist())) == sorted(
            [(k, 1), (K + k, y), (K + kp, e)]
        )
        assert k != kp


def test_eight_samples_for_two_groups_as_tokens_in_R_d():
    U = signal_basis(2, 8, "random", seed=3)
    assert np.allclose(U.T @ U, np.eye(4), atol=1e-14)
    X = population(2).tokens(U)
    assert X.shape == (8, 3, 8)
    assert len({tuple(sorted(map(tuple, np.round(x, 12)))) for x in X}) == 8
    assert np.allclose(np.linalg.norm(X, axis=-1), 1.0)


def test_filler_tokens_beyond_the_third():
    zero = population(2, L=5, filler="zero", seed=None)
    assert (zero.slots[:, 3:] == -1).all() and (zero.signs[:, 3:] == 0).all()
    cycle = population(2, L=5, filler="cycle", seed=None)
    assert (cycle.slots[:, 3:] == cycle.slots[:, :2]).all()
    assert (cycle.signs[:, 3:] == cycle.signs[:, :2]).all()


def test_logit_is_invariant_under_every_token_permutation():
    config = MixtureConfig(K=2, d=6, m=5, omega=1.5, L=4, filler="cycle", basis="random")
    model = init_transformer(config)
    _, X, _ = _data(config)
    f = logits(model, X)
    assert np.abs(f).max() > 1e-3
    for perm in itertools.permutations(range(4)):
        assert np.allclose(logits(model, X[:, list(perm)]), f, rtol=1e-12, atol=1e-14)


def test_zero_scores_give_uniform_attention_and_the_mean_token():
    config = MixtureConfig(K=2, d=8, m=3, omega=1.0, L=4, filler="zero", basis="random")
    _, X, _ = _data(config)
    W_Q = jax.random.normal(jax.random.PRNGKey(1), (3, 8))
    u, att = jax.jit(jax.vmap(head_output, in_axes=(None, None, 0)))(W_Q, jnp.zeros((3, 8)), X)
    assert np.allclose(att, 0.25, atol=1e-15)
    assert np.allclose(u, X.mean(axis=1), atol=1e-15)
    pop = config.population()
    coords = pop.coordinates()
    assert np.allclose(
        attention_average(jnp.zeros((4, 4)), jnp.asarray(coords)), coords.mean(axis=1)
    )


def _hand_built(config: MixtureConfig) -> MixtureTransformer:
    """Uniform attention (W_K = 0) and the four neurons ±v_1, ±v_2 with output signs (+, −, +, −).

    The neurons are scaled by 1/κ so the readout carries unit weights: f = Σ a_r ReLU(⟨w_r, u⟩).
    """
    U = config.frame()
    v1, v2 = U[:, 2], U[:, 3]
    zeros = jnp.zeros((config.head_dim, config.d))
    if config.combine == "signed-sum":  # one head: a = (+, +, −, −) on (v1, v2, −v1, −v2)
        plus, minus = np.stack([v1, v2, -v1, -v2]), np.zeros((4, config.d))
    else:  # F+ − F−: (v1, +), (v2, +) in head +, (−v1, −), (−v2, −) in head −
        plus, minus = np.stack([v1, v2]), np.stack([-v1, -v2])
    scale = 1.0 / config.kappa
    tied = config.combine == "tied"
    heads = (
        Head(W_Q=zeros + 1.0, W_K=zeros, W=jnp.asarray(scale * plus)),
        Head(
            W_Q=None if tied else zeros + 1.0,
            W_K=None if tied else zeros,
            W=jnp.asarray(scale * minus),
        ),
    )
    return MixtureTransformer(
        heads=heads, out=jnp.asarray(output_signs(config)), kappa=config.kappa
    )


@pytest.mark.parametrize(
    ("combine", "m", "readout"),
    [
        ("difference", 2, "sqrt"),
        pytest.param("difference", 2, "mean", marks=pytest.mark.slow),
        ("tied", 2, "sqrt"),
        ("signed-sum", 4, "sqrt"),
    ],
)
def test_uniform_attention_with_neurons_pm_v_gives_f_equal_y_plus_eps_over_3(combine, m, readout):
    """u = (c_k + y v_k + ε v_k')/3, so ReLU(⟨v_k, u⟩) − ReLU(−⟨v_k, u⟩) = ⟨v_k, u⟩ and
    f = (y + ε)/3: margin 2/3 on consistent samples, f = 0 and loss ln 2 on hard ones."""
    config = MixtureConfig(
        K=2, d=8, m=m, omega=1.0, combine=combine, readout=readout, basis="random"
    )
    model = _hand_built(config)
    _, X, y = _data(config)
    pop = config.population()
    f = np.asarray(logits(model, X))
    assert np.allclose(f, (pop.y + pop.eps) / 3, atol=1e-14)
    margins = pop.y * f
    assert np.allclose(margins[~pop.hard], 2 / 3, atol=1e-14)
    hard_loss = np.log1p(np.exp(-margins[pop.hard]))
    assert np.allclose(hard_loss, LN2, atol=1e-14)
    expected = 0.5 * LN2 + 0.5 * np.log1p(np.exp(-2 / 3))
    assert np.mean(np.log1p(np.exp(-margins))) == pytest.approx(expected, abs=1e-14)
    red = ReducedMixture.from_config(config)
    assert reduced_loss(red, model, config.frame()) == pytest.approx(expected, abs=1e-14)


def _separating(config: MixtureConfig) -> MixtureTransformer:
    """Uniform attention and, scaled by 1/κ, the neurons 2(c_1 − c_2) + v_1, 2(c_2 − c_1) + v_2 in
    head + and 2(c_1 − c_2) − v_1, 2(c_2 − c_1) − v_2 in head − (``difference`` heads)."""
    U = config.frame()
    c1, c2, v1, v2 = U.T
    plus = np.stack([2 * (c1 - c2) + v1, 2 * (c2 - c1) + v2])
    minus = np.stack([2 * (c1 - c2) - v1, 2 * (c2 - c1) - v2])
    zeros = jnp.zeros((config.head_dim, config.d))
    heads = tuple(
        Head(W_Q=zeros + 1.0, W_K=zeros, W=jnp.asarray(w / config.kappa)) for w in (plus, minus)
    )
    return MixtureTransformer(
        heads=heads,
        out=jnp.asarray(output_signs(config)),
        kappa=config.kappa,
        neurons=config.neurons,
    )


def test_relu_neurons_of_the_averaged_input_fit_every_sample_at_uniform_attention():
    """u = (c_k + y v_k + ε v_k')/3.  On group 1, ⟨2(c_1 − c_2) ± v_1, u⟩ = (2 ± y)/3 > 0 and
    ⟨2(c_2 − c_1) ± v_2, u⟩ = (−2 ± ε)/3 < 0, so F_+ − F_− = (2 + y)/3 − (2 − y)/3 = 2y/3; group 2
    likewise.  Every sample, hard or not, has margin 2/3: loss ln(1 + e^{−2/3}) each, with no
    attention at all."""
    config = MixtureConfig(K=2, d=6, m=2, omega=1.0, basis="random", seed=5)
    model = _separating(config)
    U, X, y = _data(config)
    f = np.asarray(logits(model, X))
    assert np.allclose(f, 2 * np.asarray(y) / 3, atol=1e-14)
    expected = np.log1p(np.exp(-2 / 3))
    assert float(full_loss(model, X, y)) == pytest.approx(expected, abs=1e-14)
    red = ReducedMixture.from_config(config)
    assert float(reduced_loss(red, model, U)) == pytest.approx(expected, abs=1e-14)


@pytest.mark.parametrize("K", [2, 3])
def test_neurons_reading_tokens_give_hard_margins_summing_to_zero_at_uniform_attention(K, rng):
    """With ``neurons = "tokens"`` and uniform attention f = (1/3) Σ_i φ(x_i), one function φ of a
    token.  The hard samples (k, k', y) and (k', k, −y) hold the same two feature tokens y v_k,
    −y v_k' with labels of opposite sign, so their margins add to y(φ(c_k) − φ(c_k')), and with
    (k, k', −y), (k', k, y) to 0: the hard margins sum to 0 for any neurons, and by Jensen the
    hard loss is ≥ ℓ(0) = ln 2.  The same weights reading the averaged input do not obey it."""
    sums = {}
    for neurons in ("tokens", "average"):
        config = MixtureConfig(K=K, d=2 * K + 1, m=7, omega=1.0, neurons=neurons, basis="random")
        model = init_transformer(config)
        W = [jnp.asarray(5.0 * rng.standard_normal(h.W.shape)) for h in model.heads]
        model = eqx.tree_at(lambda m: [h.W for h in m.heads], model, W)
        model = eqx.tree_at(lambda m: m.heads[0].W_K, model, jnp.zeros_like(model.heads[0].W_K))
        model = eqx.tree_at(lambda m: m.heads[1].W_K, model, jnp.zeros_like(model.heads[1].W_K))
        _, X, y = _data(config)
        hard = config.population().hard
        margins = (np.asarray(y) * np.asarray(logits(model, X)))[hard]
        sums[neurons] = (margins.sum(), np.abs(margins).max())
        if neurons == "tokens":
            assert np.log1p(np.exp(-margins)).mean() >= LN2
    assert abs(sums["tokens"][0]) < 1e-12 * sums["tokens"][1]
    assert abs(sums["average"][0]) > 1e-3 * sums["average"][1]


def test_a_full_run_started_on_the_signal_span_stays_on_it(rng):
    """The reduced family: every weight acts on span U only (neurons W = N Uᵀ, W_Q = S_Q Uᵀ,
    W_K = S_K Uᵀ).  Every gradient is a combination of tokens, which lie in span U
    (∂L/∂W_Q = W_K U G Uᵀ, ∂L/∂w = Σ_s c_s u_s), so descent from the family stays in it: the
    share of the gradient off the span is 0 up to rounding along the run."""
    config = MixtureConfig(K=2, d=7, m=3, d_head=4, omega=1.0, basis="random", seed=3)
    U, X, y = _data(config)
    off = np.eye(config.d) - U @ U.T
    model = init_transformer(config)
    on_span = jax.tree.map(lambda w: jnp.asarray(np.asarray(w) @ U @ U.T), model.split()[0])
    trained, fixed = on_span, model.split()[1]
    grad = eqx.filter_jit(
        lambda t: jax.grad(lambda t: population_loss(eqx.combine(t, fixed), X, y))(t)
    )
    shares = []
    for _ in range(40):
        g = grad(trained)
        leaves = jax.tree.leaves(g)
        total = np.sqrt(sum(float((np.asarray(v) ** 2).sum()) for v in leaves))
        outside = np.sqrt(sum(float(((np.asarray(v) @ off) ** 2).sum()) for v in leaves))
        shares.append(outside / total)
        trained = jax.tree.map(lambda w, d: w - 0.5 * d, trained, g)
    weights = jax.tree.leaves(trained)
    assert max(shares) <= 1e-12
    assert max(np.abs(np.asarray(w) @ off).max() for w in weights) <= 1e-12
    moved = np.abs(np.asarray(trained.heads[0].W) - np.asarray(on_span.heads[0].W)).max()
    assert moved > 1e-2


@pytest.mark.parametrize("combine", ["difference", pytest.param("tied", marks=pytest.mark.slow)])
def test_zero_logit_gives_loss_ln2(combine):
    config = MixtureConfig(K=3, d=7, m=4, omega=2.0, combine=combine)
    model = init_transformer(config)
    model = MixtureTransformer(
        heads=tuple(Head(h.W_Q, h.W_K, jnp.zeros_like(h.W)) for h in model.heads),
        out=model.out,
        kappa=model.kappa,
    )
    _, X, y = _data(config)
    assert full_loss(model, X, y) == pytest.approx(LN2, abs=1e-15)
    assert reduced_loss(ReducedMixture.from_config(config), model, config.frame()) == pytest.approx(
        LN2, abs=1e-15
    )


def test_score_equations_follow_from_the_chain_rule_symbolically():
    """With B = S_Kᵀ S_Q (row key, column query) and G = ∂L/∂B in that indexing, the flow
    dS_Q/dt = −S_K G, dS_K/dt = −S_Q Gᵀ gives exactly the three closed equations."""
    for p, r in [(1, 2), (3, 2), (2, 3)]:
        for name, (derived, closed) in derive_score_equations(p, r).items():
            assert sp.expand(derived - closed) == sp.zeros(r, r), name


def test_score_velocity_is_the_symbolic_closed_form(rng):
    r = 4
    B, P_Q, P_K, G = (rng.standard_normal((r, r)) for _ in range(4))
    P_Q, P_K = P_Q @ P_Q.T, P_K @ P_K.T
    dB, dPQ, dPK = (np.asarray(v) for v in score_velocity(B, P_Q, P_K, G))
    assert np.allclose(dB, -(G @ P_Q + P_K @ G), atol=1e-13)
    assert np.allclose(dPQ, -(G.T @ B + B.T @ G), atol=1e-13)
    assert np.allclose(dPK, -(G @ B.T + B @ G.T), atol=1e-13)
    assert np.allclose(dPQ, dPQ.T) and np.allclose(dPK, dPK.T)


@pytest.mark.parametrize(("L", "filler"), [(3, "zero"), (4, "zero"), (5, "cycle")])
def test_vectorized_attention_matches_the_symbolic_u_of_B(L, filler, rng):
    pop = population(2, L=L, filler=filler, seed=7)
    symbols = score_symbols(2)
    u = attention_inputs(pop, symbols)
    values = rng.normal(scale=2.0, size=(4, 4))
    exact = np.array(u.subs(dict(zip(list(symbols), values.ravel()))).evalf(30), dtype=float)
    vectorized = np.asarray(attention_average(jnp.asarray(values), jnp.asarray(pop.coordinates())))
    assert np.allclose(vectorized, exact, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize(
    ("combine", "L", "filler", "neurons"),
    [
        ("difference", 3, "zero", "average"),
        ("difference", 4, "cycle", "tokens"),
        pytest.param("signed-sum", 4, "cycle", "average", marks=pytest.mark.slow),
        pytest.param("tied", 5, "zero", "tokens", marks=pytest.mark.slow),
    ],
)
def test_reduced_value_and_velocity_equal_the_full_model_on_the_signal_span(
    combine, L, filler, neurons
):
    """Value: L_red(project(θ)) = L_full(θ).  Velocity: pushing the full gradient through U,
    d/dt Uᵀ W_Kᵀ W_Q U and d/dt W U, gives the reduced velocity (both heads, tied or not)."""
    config = MixtureConfig(
        K=2,
        d=7,
        m=6,
        d_head=5,
        omega=1.3,
        combine=combine,
        neurons=neurons,
        L=L,
        filler=filler,
        basis="random",
        seed=4,
    )
    model = init_transformer(config)
    U, X, y = _data(config)
    red = ReducedMixture.from_config(config)
    assert reduced_loss(red, model, U) == pytest.approx(float(full_loss(model, X, y)), rel=1e-13)

    @eqx.filter_jit
    def velocities(red, model, U, X, y):
        trained, fixed = model.split()
        grad = jax.grad(lambda t: population_loss(eqx.combine(t, fixed), X, y))(trained)
        flow_direction = jax.tree.map(jnp.negative, grad)
        _, tangent = jax.jvp(
            lambda t: project(eqx.combine(t, fixed), U), (trained,), (flow_direction,)
        )
        return red.velocity(project(model, U)), tangent

    velocity, tangent = velocities(red, model, U, X, y)
    for name in ("B", "P_Q", "P_K", "N"):
        got, want = np.asarray(getattr(velocity, name)), np.asarray(getattr(tangent, name))
        assert np.abs(want).max() > 1e-4, name
        assert np.allclose(got, want, rtol=1e-11, atol=1e-14), name


def test_infinite_width_initialization_and_its_finite_width_approach():
    config = MixtureConfig(K=2, d=8, m=4096, omega=0.3)
    state = infinite_width_state(config)
    assert np.array_equal(state.B, np.zeros((2, 4, 4)))
    assert np.allclose(state.P_Q, 0.09 * np.eye(4)) and np.allclose(state.P_K, 0.09 * np.eye(4))
    finite = project(init_transformer(config), config.frame())
    # entries of W_Q U are N(0, ω²/m): P has mean ω² I and entry s.d. ≤ ω² √(2/m)
    sd = 0.09 * np.sqrt(2 / 4096)
    assert np.abs(finite.P_Q - 0.09 * np.eye(4)).max() < 6 * sd
    assert np.abs(finite.B).max() < 6 * 0.09 / np.sqrt(4096)


def test_bad_configurations_raise_one_line_errors():
    for kwargs, named in [
        ({"K": 1}, "K = 1"),
        ({"K": 2, "d": 3}, "d = 3"),
        ({"m": 0}, "m = 0"),
        ({"omega": 0.0}, "omega = 0.0"),
        ({"omega": -1.0}, "omega = -1.0"),
        ({"combine": "product"}, "combine"),
        ({"readout": "max"}, "readout"),
        ({"L": 2}, "L = 2"),
        ({"filler": "noise"}, "filler"),
    ]:
        with pytest.raises(GradflowError, match=named) as info:
            MixtureConfig(**kwargs)
        assert "\n" not in str(info.value)
