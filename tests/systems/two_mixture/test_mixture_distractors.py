"""Sequences longer than three tokens with a distractor of its own at every extra position."""

from __future__ import annotations

import numpy as np
import pytest

from gradflow.systems.two_mixture.data import population


@pytest.mark.parametrize(("K", "L"), [(2, 4), (3, 5)])
def test_every_choice_of_the_extra_distractors_appears_once(K, L):
    """``4K(K−1)`` base samples times ``(2(K−1))^{L−3}`` choices of ``ε_j v_{k'_j}``: 16 for
    ``K = 2, L = 4``, 384 for ``K = 3, L = 5``; each sample holds ``c_k`` once, ``y v_k`` once and
    only features of other groups beyond, no two samples alike, half of them hard."""
    pop = population(K, L=L, filler="distractors", seed=None)
    assert pop.n == 4 * K * (K - 1) * (2 * (K - 1)) ** (L - 3) == {(2, 4): 16, (3, 5): 384}[K, L]
    coords = pop.coordinates()
    assert len({c.tobytes() for c in coords}) == pop.n
    for s in range(pop.n):
        k = pop.group[s]
        assert coords[s, 0, k] == 1 and coords[s, 1, K + k] == pop.y[s]
        assert np.all(pop.slots[s, 2:] >= K) and np.all(pop.slots[s, 2:] != K + k)
    assert pop.hard.sum() == pop.n // 2
