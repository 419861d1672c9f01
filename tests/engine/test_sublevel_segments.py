"""The sublevel shortcut's segment test: whether the loss stays below a level along a straight
segment, on the double well ``L = (x² − 1)² + y²`` (minima ``(±1, 0)`` at ``L = 0``, the
saddle ``(0, 0)`` at ``L = 1``).

With the level ½:
- from ``(0.6, 0)`` (``L = 0.64² = 0.4096``) to ``(1, 0)``, ``x²`` rises to 1 and ``L`` falls
  to 0: below all along;
- from ``(0.6, 0)`` to ``(−1, 0)`` the segment passes the saddle, ``L = 1``: not below;
- from ``(−0.6, 0.3)`` (``L = 0.4096 + 0.09 = 0.4996``) to ``(−1, 0)``, both ``(x² − 1)²`` and
  ``y²`` fall: below all along.
"""

from __future__ import annotations

import numpy as np

import gradflow
from gradflow._basins.sublevel import SEGMENT_BLOCK, _segments_below

STARTS = np.array([[0.6, 0.0], [0.6, 0.0], [-0.6, 0.3]])
ENDS = np.array([[1.0, 0.0], [-1.0, 0.0], [-1.0, 0.0]])
BELOW = [True, False, True]


def test_a_segment_is_below_the_level_where_the_loss_is_on_it_and_across_blocks() -> None:
    """Checked in blocks of :data:`SEGMENT_BLOCK`: ``SEGMENT_BLOCK + 3`` segments, the three
    above repeated, straddle two blocks and give the same answer at every copy."""
    model = gradflow.loss_model("(x**2 - 1)**2 + y**2", params=("x", "y")).bind()
    assert _segments_below(model, STARTS, ENDS, 0.5).tolist() == BELOW
    n = SEGMENT_BLOCK + 3
    many = _segments_below(model, np.resize(STARTS, (n, 2)), np.resize(ENDS, (n, 2)), 0.5)
    assert many.tolist() == np.resize(BELOW, n).tolist()
    assert _segments_below(model, STARTS[:1], ENDS[:1], 0.4).tolist() == [False]
