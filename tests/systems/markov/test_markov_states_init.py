"""The rank-(k − 1) init of the k-state transformer: the binary embed(θ) at k = 2, singular values,
logits and loss by hand, and the subspace kept by the gradient."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gradflow.systems.markov.states import enumerate_states, stationary, switching_kernel
from gradflow.systems.markov.states_embedding import helmert, state_map, states_canonical_init
from gradflow.systems.markov.states_training import _predictions, numerical_rank
from gradflow.systems.markov.states_transformer import states_exact_loss, states_logits

LN2, LN3 = math.log(2), math.log(3)
MATRICES = ("E", "W_Q", "W_K", "W_V", "W_1", "W_2")


def _init(k: int, d: int, theta: tuple[float, float], p: float, q: float, **kw: object):  # noqa: ANN202
    return states_canonical_init(k, d, 3, theta, switching_kernel(k, p, q), dtype=jnp.float64, **kw)


@pytest.mark.parametrize(("p", "q", "e", "w"), [(0.5, 0.8, 0.5, -1.0), (0.2, 0.3, -0.8, 0.3)])
def test_two_states_are_the_binary_embedding(p: float, q: float, e: float, w: float) -> None:
    from gradflow.systems.markov.reduced import canonical_model
    from gradflow.systems.markov.transformer import exact_loss

    model = canonical_model()
    binary = model.full.embed(jnp.asarray([e, w]), model.bind(p=p, q=q).h, d=4, length=5)
    kernel = switching_kernel(2, p, q)
    twin = states_canonical_init(2, 4, 5, (e, w), kernel, attention="linear", dtype=jnp.float64)
    # E = [0; eα], b = (0, b_full), every other weight the same
    np.testing.assert_allclose(twin.E, np.stack([np.zeros(4), binary.e]), atol=1e-15)
    for name in ("positions", "W_Q", "W_K", "W_V", "W_O", "W_1", "W_2"):
        np.testing.assert_allclose(getattr(twin, name), getattr(binary, name), atol=1e-15)
    assert float(twin.b[1] - twin.b[0]) == pytest.approx(float(binary.b), abs=1e-12)
    ours = float(states_exact_loss(twin, kernel, stationary(kernel)))
    assert ours == pytest.approx(float(exact_loss(binary, p, q)), abs=1e-12)


@pytest.mark.parametrize("k", [3, 4, 5])
def test_singular_values_by_hand(k: int) -> None:
    # ε = e/√2 = 0.5: E E^T on the rows 1…k−1 is ε²(I + J): ε√k once, ε (k − 2 times);
    # W_1^T W_1 = 4w² Σ_g γ_g γ_g^T, Gram of the γ_g = (k/(k−1))(I − J/k): 2|w|√(k/(k−1))
    # (k − 2 times), 2|w|/√(k−1) once; W_Q = d^{1/4} P_S; W_O = 0 (a = 0).  k = 4: blocks of
    # 3, 3, 2 coordinates and groups of 11, 11, 10 hidden units.
    d, e, w = 8, 1 / math.sqrt(2), -0.7
    model = _init(k, d, (e, w), 0.6, 0.6)
    zeros = [0.0] * (d - k + 1)
    expect = {
        "E": [math.sqrt(k) / 2] + [0.5] * (k - 2) + [0.0],
        "W_Q": [d**0.25] * (k - 1) + zeros,
        "W_K": [d**0.25] * (k - 1) + zeros,
        "W_V": [1.0] * (k - 1) + zeros,
        "W_1": [2 * 0.7 * math.sqrt(k / (k - 1))] * (k - 2) + [1.4 / math.sqrt(k - 1)] + zeros,
    }
    expect["W_2"] = expect["W_1"]
    for name in MATRICES:
        s = np.linalg.svd(np.asarray(getattr(model, name)), compute_uv=False)
        np.testing.assert_allclose(s, expect[name], atol=1e-14, err_msg=name)
        assert numerical_rank(s) == k - 1
    assert not np.asarray(model.W_O).any()


def test_state_map_is_an_isometry_of_the_centred_states() -> None:
    for k, d in [(2, 3), (3, 8), (5, 8), (4, 3)]:
        U, centred = state_map(k, d), np.eye(k) - 1 / k
        np.testing.assert_allclose(U.T @ U, centred, atol=1e-15)
        np.testing.assert_allclose(helmert(k) @ helmert(k).T, np.eye(k - 1), atol=1e-15)
    # k = 2: α = 1/√d and e_1 − e_0 ↦ √2 α
    np.testing.assert_allclose(state_map(2, 4) @ [-1, 1], np.full(4, math.sqrt(2) / 2))


def test_logits_and_loss_in_closed_form() -> None:
    # k = 3, p = 1/2, q = 1/4: the own-state bumps of the Bayes logits are ln((1 − p)2/p) = ln 2
    # after 0 and ln((1 − q)2/q) = ln 6 after 1, 2.  The init's bumps are ε² after 0 and
    # ε²(1 + 4w|w|) after i ≥ 1 (b_0 = b_1 = b_2): ε² = ln 2, 1 + 4w² = ln 6/ln 2 give the
    # bigram predictor, b = 0 and the loss = the entropy rate 2.1 ln 2 − 0.6 ln 3.
    e, w = math.sqrt(2 * LN2), math.sqrt((math.log(6) / LN2 - 1) / 4)
    model = _init(3, 8, (e, w), 0.5, 0.25)
    kernel = switching_kernel(3, 0.5, 0.25)
    np.testing.assert_allclose(model.b, 0.0, atol=1e-13)
    after = np.asarray(states_logits(model, jnp.arange(3)[:, None]))[:, 0]
    np.testing.assert_allclose(after - np.log(kernel), [[LN2] * 3, [3 * LN2] * 3, [3 * LN2] * 3])
    loss = float(states_exact_loss(model, kernel, stationary(kernel)))
    assert loss == pytest.approx(2.1 * LN2 - 0.6 * LN3, abs=1e-13)
    # the mean prediction after each state is then the kernel's row
    seeds = jax.tree.map(lambda x: x[None], model)
    predicted = _predictions(seeds, jnp.asarray(enumerate_states(3, 3)))[0]
    np.testing.assert_allclose(predicted, kernel, atol=1e-14)
    # elsewhere (e = 1, w = 0.3, p = q = 0.6): logits b_j − ε²(1 − δ_j0) after 0 and
    # b_j + ε²(1 + 4w|w|) δ_ji after i, and the bias optimal: Σ_i π_i softmax_i = π
    model = _init(3, 8, (1.0, 0.3), 0.6, 0.6)
    after, b = np.asarray(states_logits(model, jnp.arange(3)[:, None]))[:, 0], np.asarray(model.b)
    np.testing.assert_allclose(after[0], b - 0.5 * np.array([0, 1, 1]), atol=1e-14)
    np.testing.assert_allclose(after[1:], b + 0.5 * 1.36 * np.eye(3)[1:], atol=1e-14)
    soft = np.exp(after) / np.exp(after).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(soft.mean(axis=0), [1 / 3] * 3, atol=1e-14)


def test_the_gradient_keeps_the_subspace() -> None:
    # every weight maps S to S and vanishes on its complement: so does the gradient (W_O = 0.3 P_S
    # and W_Q moved inside S so that every gradient is non-zero)
    k, d = 3, 5
    model = _init(k, d, (0.8, -0.6), 0.7, 0.4)
    P = state_map(k, d) @ state_map(k, d).T
    model = type(model)(
        **{**vars(model), "W_O": 0.3 * P, "W_Q": jnp.asarray(P @ np.diag([1, 2, 3, 4, 5.0]) @ P)}
    )
    kernel = switching_kernel(k, 0.7, 0.4)
    grads = jax.grad(states_exact_loss)(model, kernel, stationary(kernel))
    for name in ("W_Q", "W_K", "W_V", "W_O"):
        G = np.asarray(getattr(grads, name))
        assert np.abs(G).max() > 1e-6, name
        np.testing.assert_allclose(P @ G @ P, G, atol=1e-15, err_msg=name)
    np.testing.assert_allclose(np.asarray(grads.W_1) @ P, grads.W_1, atol=1e-15)
    np.testing.assert_allclose(P @ np.asarray(grads.W_2), grads.W_2, atol=1e-15)
    for name in ("E", "positions"):
        np.testing.assert_allclose(
            np.asarray(getattr(grads, name)) @ P, getattr(grads, name), atol=1e-15
        )


@pytest.mark.slow
def test_training_keeps_rank_k_minus_one() -> None:
    """AdamW from the init keeps every weight inside S (block-constant rows and columns): after
    20 steps every matrix has at most k − 1 singular values above float32 rounding, while W_O
    has left 0 (2 s warm, 6 s with the training step to compile)."""
    from gradflow.systems.markov.config import TrainConfig
    from gradflow.systems.markov.states_training import train_states

    config = TrainConfig(
        p=0.9, q=0.9, states=4, init="canonical", theta0=(0.5, -1.0), steps=20, length=8,
        seeds=2, eval_every=10,
    )  # fmt: skip
    result = train_states(config, progress=False)
    for name, values in result.singular_values.items():
        end = values[:, -1]
        assert (end[:, 3] < 1e-5 * end[:, 0]).all(), name
        assert (end[:, 2] > 1e-3 * end[:, 0]).all(), name
    assert "W_O  zero matrix → " in result.text()  # its energy share at the init is undefined
