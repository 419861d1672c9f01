"""When each transformer layer forms its pattern: scores of known attention patterns."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

from gradflow.systems.induction_heads.data import Dirichlet, sample
from gradflow.systems.induction_heads.layers import formation_step, layer_scores
from gradflow.systems.induction_heads.transformer import induction_head, init_transformer

K, T = 3, 12


@pytest.fixture(scope="module")
def tokens() -> jax.Array:
    return sample(jax.random.key(4), Dirichlet(), 16, K, T).x


def test_the_hand_built_induction_head_scores_one_on_both_layers(tokens):
    """Layer 1 attends to lag 1 with weight ``1 − O(e^{−β})`` and layer 2 to the positions whose
    previous token is the current one (the first token read as doubled), ``β = 1000``: both
    scores are 1 to rounding."""
    scores = np.asarray(layer_scores(induction_head(K, T, d=3 * K + 1), tokens))
    np.testing.assert_allclose(scores, [1.0, 1.0], atol=1e-12)


def test_uniform_attention_scores_the_chance_levels(tokens):
    """All weights 0: every score is 0, so position ``i`` spreads ``1/(i + 1)`` over ``s ≤ i``.
    Layer 1: ``mean_{i=1}^{T−1} 1/(i + 1)``; layer 2: ``#{s ≤ i : prev(s) = x_i}/(i + 1)``
    averaged over the positions with a match, counted here by hand."""
    model = init_transformer(jax.random.key(0), K, T, d=8, std=0.0)
    scores = np.asarray(layer_scores(model, tokens))
    assert scores[0] == pytest.approx(np.mean([1 / (i + 1) for i in range(1, T)]), rel=1e-6)
    shares = []
    for seq in np.asarray(tokens):
        prev = np.concatenate([seq[:1], seq[:-1]])
        for i in range(T):
            count = int(np.sum(prev[: i + 1] == seq[i]))
            if count:
                shares.append(count / (i + 1))
    assert scores[1] == pytest.approx(np.mean(shares), rel=1e-6)


def test_a_layer_forms_where_it_covers_half_its_rise():
    """Scores 0.1, 0.2, 0.5, 0.9 at steps 0, 10, 20, 30: half the rise is 0.5, reached at step
    20; a score that never rises has no formation step."""
    assert formation_step(np.array([0, 10, 20, 30]), np.array([0.1, 0.2, 0.5, 0.9])) == (
        20.0,
        0.1,
        0.9,
    )
    step, start, top = formation_step(np.arange(3), np.array([0.4, 0.3, 0.2]))
    assert math.isnan(step) and (start, top) == (0.4, 0.4)
