"""Same-group, between-group and self-score measures of a score pattern, by hand."""

from __future__ import annotations

import numpy as np
import pytest

from gradflow.systems.two_mixture.scores import score_patterns, score_summary


def test_measures_of_a_hand_written_pattern():
    """``K = 3``, slots ``c_1 c_2 c_3 v_1 v_2 v_3``.  Head + scores ``B[v_k, c_k] = 2`` and
    ``B[v_k', c_k] = −0.5`` (``k' ≠ k``), self-scores ``B[c_k, c_k] = 0.1, 0.2, 0.4`` and
    ``B[v_k, v_k] = 1``; head − is its negative.  Same group ``|2| = 2``, between groups
    ``|−0.5| = 0.5``; the self-score spread is ``0.4 − 0.1 = 0.3``, over the run's largest score
    ``max |B| = 2`` 0.15."""
    K = 3
    B = np.zeros((2 * K, 2 * K))
    for k in range(K):
        for kp in range(K):
            B[K + kp, k] = 2.0 if kp == k else -0.5
    B[np.arange(K), np.arange(K)] = [0.1, 0.2, 0.4]
    B[np.arange(K, 2 * K), np.arange(K, 2 * K)] = 1.0
    scores = np.stack([np.zeros((2, 2 * K, 2 * K)), np.stack([B, -B])])
    p = score_patterns(scores, K)
    np.testing.assert_allclose(p["same_group"], [0.0, 2.0])
    np.testing.assert_allclose(p["between_group"], [0.0, 0.5])
    np.testing.assert_allclose(p["self_spread"], [0.0, 0.3])
    summary = score_summary(np.array([0.0, 5.0]), scores, K)
    assert summary["between_over_same_final"] == pytest.approx(0.25)
    assert (summary["self_spread_max"], summary["self_spread_max_t"]) == (pytest.approx(0.15), 5.0)


def test_a_pattern_symmetric_under_relabelling_the_groups_has_no_self_spread():
    """``B = a I + b (v_k, c_k) + e 11ᵀ`` is unchanged by any permutation of the groups, so its
    self-scores agree within each kind: spread 0."""
    K = 4
    B = 0.3 * np.eye(2 * K) + 0.05
    B[K + np.arange(K), np.arange(K)] += 1.0
    assert score_patterns(np.stack([B, B])[None], K)["self_spread"] == pytest.approx([0.0])
