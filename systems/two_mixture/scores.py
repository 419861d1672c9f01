"""The pattern of the attention scores of a two-mixture run: same-group against between-group
scores, and how far the self-scores differ between groups.

With the scores ``B_h[a, b] = s(u_a, u_b)`` (row ``a`` the key, column ``b`` the query, slots
``c_1 … c_K, v_1 … v_K``) of both heads, at every record:

- *same-group score*: ``|B_h[v_k, c_k]|``, the group identifier ``c_k`` as query scoring its own
  group's feature ``v_k``, averaged over ``k`` and the heads;
- *between-group score*: ``|B_h[v_k', c_k]|``, ``k' ≠ k``, the identifier scoring another group's
  feature (the distractor of a sample of group ``k``), averaged over the ``K(K − 1)`` pairs and
  the heads;
- *self-score spread*: per head, ``max_k − min_k`` of the self-scores ``B_h[c_k, c_k]`` and of
  ``B_h[v_k, v_k]``, the largest over heads and the two kinds (summed up relative to the largest
  score of the whole run, :func:`score_summary`: at the start every score is ``O(ω²)`` and
  noise).

The population is symmetric under relabelling the groups, and so is the infinite-width start
(``B = 0``, ``P_Q = P_K = ω² I``): there every self-score spread is 0 and every pair ``k ≠ k'``
scores alike; at finite width the spread measures how far one draw breaks that symmetry. For the
paper's statements these measure (its Lemma E.4: self-score asymmetries stay small; its
App. A.4: with ``K ≥ 3`` between-group scores shrink while same-group ones stay large) this is
the reconstruction's reading; the paper's text was not available here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["score_patterns", "score_summary"]


def score_patterns(scores: np.ndarray, K: int) -> dict[str, np.ndarray]:
    """The three measures of the module docstring at every record.

    Args:
        scores: shape ``(T, H, 2K, 2K)``, ``B_h`` per record and head (row key, column query).
        K: number of groups.

    Returns:
        ``{"same_group", "between_group", "self_spread"}``, each shape ``(T,)``.
    """
    B = np.asarray(scores, float)
    groups = np.arange(K)
    same = np.abs(B[:, :, K + groups, groups]).mean(axis=(1, 2))
    others = [(k, kp) for k in groups for kp in groups if kp != k]
    between = np.mean([np.abs(B[:, :, K + kp, k]) for k, kp in others], axis=0).mean(axis=1)
    diagonal = B[:, :, np.arange(2 * K), np.arange(2 * K)]
    spread = np.maximum(np.ptp(diagonal[..., :K], axis=-1), np.ptp(diagonal[..., K:], axis=-1))
    return {"same_group": same, "between_group": between, "self_spread": spread.max(axis=1)}


def score_summary(ts: np.ndarray, scores: np.ndarray, K: int) -> dict[str, Any]:
    """JSON-ready: the final same- and between-group scores and their ratio, the between-group
    score's peak and its time, the largest self-score spread over the run relative to the
    run's largest score ``max_t max |B|`` and its time."""
    p = score_patterns(scores, K)
    top = float(np.abs(np.asarray(scores)).max())
    peak = int(np.argmax(p["between_group"]))
    worst = int(np.argmax(p["self_spread"]))
    same, between = float(p["same_group"][-1]), float(p["between_group"][-1])
    return {
        "same_group_final": same,
        "between_group_final": between,
        "between_over_same_final": between / same if same > 0 else None,
        "between_group_peak": float(p["between_group"][peak]),
        "between_group_peak_t": float(ts[peak]),
        "self_spread_max": float(p["self_spread"][worst]) / top if top > 0 else 0.0,
        "self_spread_max_t": float(ts[worst]),
    }
