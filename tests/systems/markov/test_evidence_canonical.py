"""The canonical model's basin map with its evidence: the global-minimum labels are proven by the
model's own level, the line of local minima's are numerical.  Answers worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gradflow
from gradflow import Outcome, Region
from gradflow.systems import markov


def shares(grid: int) -> gradflow.BasinMap:
    model = markov.canonical(0.9, 0.9)
    return gradflow.basins(model, region=Region.of(model, grid), progress=False)


def check(bm: gradflow.BasinMap) -> None:
    """At p = q = 0.9 the stationary law is uniform, so every non-global critical value is the
    unigram loss H(π) = log 2 (the line e = 0 and the saddle on it) and the global minimum is
    the entropy rate -0.9 log 0.9 - 0.1 log 0.1 ≈ 0.325083 < log 2.  The model proves that
    below log 2 a flow can only end on a global minimum: every grid point labelled global_min
    ends below that level, proven, and none other is.  The local minima form the line e = 0, a
    set of dimension 1 with no certified region: numerical."""
    entropy_rate = -0.9 * math.log(0.9) - 0.1 * math.log(0.1)
    assert entropy_rate == pytest.approx(0.325083, abs=1e-6)
    assert bm.critical.global_min_loss == pytest.approx(entropy_rate, rel=1e-9)
    glob = bm.labels == Outcome.GLOBAL_MIN
    local = bm.labels == Outcome.LOCAL_MIN
    assert glob.any() and local.any()
    assert np.all(bm.evidence[glob] == 1) and np.all(bm.evidence[~glob] == 0)
    reasons = {bm.reasons[c] for c in np.unique(bm.reason_codes[glob])}
    assert all(r.startswith("proven: below L = 0.69314717") for r in reasons)
    for a in bm.reached():
        assert a.proven == (a.fraction if a.kind == "global_min" else 0.0)
    assert bm.proven_share() == pytest.approx(float(np.mean(glob)), abs=1e-12)


def test_the_canonical_global_labels_are_proven_by_its_level() -> None:
    check(shares(41))


@pytest.mark.slow
def test_the_canonical_201_map_keeps_its_proven_global_share() -> None:
    """The same on the 201 × 201 map of `gradflow basins --p 0.9 --q 0.9 --grid 201`."""
    check(shares(201))
