"""The k-state chain and transformer: k = 2 equals the binary chain and model; k = 3 by hand."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gradflow import GradflowError
from gradflow.systems.markov.chain import entropy_rate as binary_entropy_rate
from gradflow.systems.markov.chain import p as p_sym
from gradflow.systems.markov.chain import q as q_sym
from gradflow.systems.markov.chain import unigram_loss as binary_unigram
from gradflow.systems.markov.states import (
    entropy_rate,
    enumerate_states,
    lumped_entropy,
    one_state_entropy,
    sample_states,
    stationary,
    switching_kernel,
    unigram_entropy,
)
from gradflow.systems.markov.states_transformer import (
    StatesTransformer,
    states_exact_loss,
    states_logits,
    states_standard_init,
)
from gradflow.systems.markov.transformer import exact_loss, logits, standard_init

LN2, LN3 = math.log(2), math.log(3)


@pytest.mark.parametrize(("p", "q"), [(0.2, 0.3), (0.5, 0.8), (0.9, 0.15)])
def test_two_states_are_the_binary_chain(p: float, q: float) -> None:
    kernel = switching_kernel(2, p, q)
    np.testing.assert_array_equal(kernel, [[1 - p, p], [q, 1 - q]])
    np.testing.assert_allclose(stationary(kernel), [q / (p + q), p / (p + q)], rtol=1e-14)
    subs = {p_sym: p, q_sym: q}
    assert entropy_rate(kernel) == pytest.approx(float(binary_entropy_rate.subs(subs)), rel=1e-13)
    assert unigram_entropy(kernel) == pytest.approx(float(binary_unigram.subs(subs)), rel=1e-13)


def test_three_states_by_hand() -> None:
    # p = 1/2, q = 1/4: π0 = q/(q + 2p) = 1/5, π1 = π2 = 2/5; rows (1/2, 1/4, 1/4) and
    # (1/8, 3/4, 1/8): H = (1/5)(3/2 ln 2) + (4/5)(h(1/4) + (1/4) ln 2) = 2.1 ln 2 - 0.6 ln 3
    kernel = switching_kernel(3, 0.5, 0.25)
    np.testing.assert_allclose(kernel[1], [1 / 8, 3 / 4, 1 / 8], rtol=1e-15)
    np.testing.assert_allclose(stationary(kernel), [0.2, 0.4, 0.4], rtol=1e-13)
    assert entropy_rate(kernel) == pytest.approx(2.1 * LN2 - 0.6 * LN3, rel=1e-13)
    # H(1/5, 2/5, 2/5) = (1/5) ln 5 + (4/5) ln(5/2) = ln 5 - (4/5) ln 2
    assert unigram_entropy(kernel) == pytest.approx(math.log(5) - 0.8 * LN2, rel=1e-13)
    # the cycle 0 → 1 → 2 → {0, 2}: π = (1/4, 1/4, 1/2), only state 2 is random (ln 2)
    cycle = np.array([[0, 1, 0], [0, 0, 1], [0.5, 0, 0.5]])
    np.testing.assert_allclose(stationary(cycle), [0.25, 0.25, 0.5], atol=1e-14)
    assert entropy_rate(cycle) == pytest.approx(0.5 * LN2, rel=1e-13)
    assert unigram_entropy(cycle) == pytest.approx(1.5 * LN2, rel=1e-13)


def test_symmetric_switching_is_memoryless_only_at_k_minus_one_over_k() -> None:
    kernel = switching_kernel(5, 0.8, 0.8)
    np.testing.assert_allclose(kernel, np.full((5, 5), 0.2), rtol=1e-15)
    assert entropy_rate(kernel) == pytest.approx(unigram_entropy(kernel), rel=1e-14)
    # p = q = 0.6: h(0.6) + 0.6 ln 4 against ln 5
    assert entropy_rate(switching_kernel(5, 0.6, 0.6)) == pytest.approx(
        -0.6 * math.log(0.6) - 0.4 * math.log(0.4) + 0.6 * math.log(4), rel=1e-13
    )


def test_one_state_from_the_rest_by_hand() -> None:
    # p = 1/2, q = 1/4, π = (1/5, 2/5, 2/5).  Telling state 1 from {0, 2}: rows (1/8, 3/4, 1/8)
    # and the mixture ((1/5)(1/2, 1/4, 1/4) + (2/5)(1/8, 1/8, 3/4))/(3/5) = (1/4, 1/6, 7/12);
    # loss (2/5)((9/4) ln 2 − (3/4) ln 3) + (3/5) H(1/4, 1/6, 7/12) = 0.87002, below state 0's
    # (1/5)(3/2) ln 2 + (4/5)((31/8) ln 2 − (7/8) ln 7) = 0.99456 (state 2's equals state 1's)
    mixture = np.array([1 / 4, 1 / 6, 7 / 12])
    by_hand = 0.4 * (2.25 * LN2 - 0.75 * LN3) - 0.6 * float(mixture @ np.log(mixture))
    loss, state = one_state_entropy(switching_kernel(3, 0.5, 0.25))
    assert state == 1 and loss == pytest.approx(by_hand, rel=1e-14)
    # k = 2: telling one state from the other is the bigram predictor
    binary = switching_kernel(2, 0.2, 0.3)
    assert one_state_entropy(binary)[0] == pytest.approx(entropy_rate(binary), rel=1e-14)
    # all singletons: the bigram predictor; one group: the mixture of the rows is π, H(π)
    kernel = switching_kernel(4, 0.3, 0.7)
    singletons = lumped_entropy(kernel, [[0], [1], [2], [3]])
    assert singletons == pytest.approx(entropy_rate(kernel), rel=1e-14)
    assert lumped_entropy(kernel, [[2, 0, 3, 1]]) == pytest.approx(
        unigram_entropy(kernel), rel=1e-14
    )
    with pytest.raises(GradflowError, match="must partition the states 0 … 3"):
        lumped_entropy(kernel, [[0, 1], [1, 2, 3]])


def test_bad_chains_are_refused() -> None:
    with pytest.raises(GradflowError, match="states k = 1"):
        switching_kernel(1, 0.5, 0.5)
    with pytest.raises(GradflowError, match="q = 1.0"):
        switching_kernel(3, 0.5, 1.0)
    with pytest.raises(GradflowError, match="rows summing to 1"):
        stationary(np.array([[0.5, 0.4], [0.5, 0.5]]))
    with pytest.raises(GradflowError, match="too many"):
        enumerate_states(5, 7)


def test_enumeration_and_sampling() -> None:
    seqs = enumerate_states(3, 2)
    np.testing.assert_array_equal(seqs[:4], [[0, 0], [0, 1], [0, 2], [1, 0]])
    assert len({tuple(s) for s in seqs}) == 9
    kernel = switching_kernel(3, 0.5, 0.25)
    x = np.asarray(
        sample_states(
            jax.random.key(0), jnp.asarray(kernel), jnp.asarray(stationary(kernel)), 4000, 3
        )
    )
    # P(x_2 = x_1) = Σ π_i P_ii = 0.2·0.5 + 0.8·0.75 = 0.7; 4000 draws: s.e. 0.0072
    assert np.mean(x[:, 1] == x[:, 0]) == pytest.approx(0.7, abs=0.03)


def _as_two_states(binary) -> StatesTransformer:  # noqa: ANN001
    zero = jnp.zeros_like(binary.e)
    return StatesTransformer(
        E=jnp.stack([zero, binary.e]),
        positions=binary.positions,
        W_Q=binary.W_Q,
        W_K=binary.W_K,
        W_V=binary.W_V,
        W_O=binary.W_O,
        W_1=binary.W_1,
        W_2=binary.W_2,
        b=jnp.stack([jnp.zeros_like(binary.b), binary.b]),
        unembed=None,
        attention=binary.attention,
    )


@pytest.mark.parametrize("attention", ["softmax", "linear"])
def test_two_state_transformer_is_the_binary_one(attention: str) -> None:
    # E = [0; e], b = (0, b): the logit gap is the binary logit, the softmax CE its BCE
    binary = standard_init(jax.random.key(3), 4, 5, attention=attention, dtype=jnp.float64)
    binary = jax.tree.map(lambda a: 30 * a, binary)  # weights far from 0: a loss that moves
    binary = type(binary)(**{**vars(binary), "b": jnp.asarray(0.3)})
    twin = _as_two_states(binary)
    x = jnp.asarray(enumerate_states(2, 5))
    gap = states_logits(twin, x) @ jnp.array([-1.0, 1.0])
    np.testing.assert_allclose(gap, logits(binary, x), rtol=1e-12, atol=1e-12)
    p, q = 0.3, 0.6
    kernel = switching_kernel(2, p, q)
    ours = states_exact_loss(twin, kernel, stationary(kernel))
    assert float(ours) == pytest.approx(float(exact_loss(binary, p, q)), rel=1e-12)
    assert abs(float(ours) - unigram_entropy(kernel)) > 1e-2  # not a trivial loss


def test_exact_loss_of_the_unigram_and_bigram_predictors() -> None:
    # W_O = W_2 = 0: logits E[x_n]·E + b.  With E = c·I and b = 0 the prediction is
    # softmax(c e_{x_n}) → the kernel's row only in the limit; the uniform predictor (c = 0) has
    # loss ln k exactly, whatever the chain.
    model = states_standard_init(jax.random.key(0), 3, 3, 4, dtype=jnp.float64)
    zero = jax.tree.map(jnp.zeros_like, model)
    kernel = switching_kernel(3, 0.5, 0.25)
    assert float(states_exact_loss(zero, kernel, stationary(kernel))) == pytest.approx(
        LN3, rel=1e-14
    )
    # b = ln π, E = 0: predicts π everywhere, loss = H(π) + KL terms = cross-entropy of π
    # against each row averaged by π = -Σ_i π_i Σ_j P_ij ln π_j = -Σ_j π_j ln π_j = H(π)
    pi = stationary(kernel)
    unigram = type(zero)(**{**vars(zero), "b": jnp.log(jnp.asarray(pi))})
    assert float(states_exact_loss(unigram, kernel, pi)) == pytest.approx(
        unigram_entropy(kernel), rel=1e-13
    )


def test_rank_and_energy_by_hand() -> None:
    from gradflow.systems.markov.states_training import numerical_rank, top_energy

    s = np.array([[2.0, 1.0, 0.15, 0.1], [1.0, 0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(numerical_rank(s), [2, 1])  # above 0.1 · 2 = 0.2: 2 and 1
    np.testing.assert_array_equal(numerical_rank(s, rtol=0.05), [3, 1])  # 0.1 is not above 0.1
    # (4 + 1)/(4 + 1 + 0.0225 + 0.01) and 1
    np.testing.assert_allclose(top_energy(s, 2), [5 / 5.0325, 1.0], rtol=1e-14)


@pytest.mark.slow
def test_train_states_records_what_it_claims(cli) -> None:  # noqa: ANN001
    """A tiny run through the command line: k = 3, 4 steps; the references are the chain's
    (5 s, the compilation of the training step)."""
    import json

    out = cli(
        "train",
        "--states",
        "3",
        "--p",
        "0.5",
        "--q",
        "0.25",
        "--steps",
        "4",
        "--seq-len",
        "4",
        "--seeds",
        "2",
        "--eval-every",
        "2",
        "--json",
    )
    record = json.loads(out.out)
    assert record["states"] == 3 and record["steps_done"] == 4
    assert record["entropy_rate"] == pytest.approx(2.1 * LN2 - 0.6 * LN3, rel=1e-12)
    assert record["unigram_loss"] == pytest.approx(math.log(5) - 0.8 * LN2, rel=1e-12)
    gaps = np.asarray(record["gap_to_entropy_rate"])
    np.testing.assert_allclose(gaps, np.asarray(record["final_test_loss"]) - record["entropy_rate"])
    with np.load(cli.folder / "train.npz") as stored:
        assert stored["singular_values_W_1"].shape == (2, 2, 8)  # seeds, init/end, min(4d, d)
        assert stored["singular_values_E"].shape == (2, 2, 3)
        assert stored["test_loss"].shape == (2, 3)
        predictions = stored["prediction_after_state"]  # after each of the 3 states, per seed
        assert predictions.shape == (2, 3, 3)
        np.testing.assert_allclose(predictions.sum(axis=-1), 1.0, rtol=1e-5)


def test_train_states_refuses_bad_settings(cli) -> None:  # noqa: ANN001
    refused = cli("train", "--states", "3", "--p", "0.5", "--q", "0.5", "--init", "paper")
    assert refused.code == 2 and "is the binary model's" in refused.err
    refused = cli(
        "train", "--states", "5", "--p", "0.5", "--q", "0.5", "--init", "canonical", "--d", "3"
    )
    assert refused.code == 2 and "needs d ≥ 4" in refused.err
    refused = cli("train", "--states", "3", "--p", "0.5", "--q", "0.5", "--theta0", "0.5", "-1")
    assert refused.code == 2 and "needs --init canonical, not --init standard" in refused.err
    refused = cli("train", "--states", "1", "--p", "0.5", "--q", "0.5")
    assert refused.code == 2 and "states k = 1" in refused.err
