"""The canonical model's basin map with its evidence: the global-minimum labels are proven by the
model's own level, the line of local minima's by a certified tube around it.  Answers worked
out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq

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
    ends below that level, proven.  The local minima form the line e = 0, w > −1/√2, whose
    transverse curvature is ∂²L/∂e² = 2(1 + 2w|w|)Φ'(0) with Φ'(0) = π0π1(p + q − 1) = 0.2:
    0.4(1 + 2w|w|) > 0.112 for w ≥ −0.6, so every local_min point whose flow ends there is
    proven by the certified tube around the line; only ends nearer the degenerate saddle
    w = −1/√2 (where the curvature vanishes) may stay numerical.  The maxima (e = 0,
    w < −1/√2) are never proven.  Which of Γ*'s two curves (e > 0, e < 0) a global_min point
    reaches is proven too: the whole line e = 0 is critical, so L = log 2 on it, above the
    level, and the sublevel set below the level does not cross it; each curve's share is
    proven whole."""
    entropy_rate = -0.9 * math.log(0.9) - 0.1 * math.log(0.1)
    assert entropy_rate == pytest.approx(0.325083, abs=1e-6)
    assert bm.critical.global_min_loss == pytest.approx(entropy_rate, rel=1e-9)
    glob = bm.labels == Outcome.GLOBAL_MIN
    local = bm.labels == Outcome.LOCAL_MIN
    assert glob.any() and local.any()
    assert np.all(bm.evidence[glob] == 1)
    assert not np.any(bm.evidence[bm.labels == Outcome.LOCAL_MAX])
    reasons = {bm.reasons[c] for c in np.unique(bm.reason_codes[glob])}
    assert all(r.startswith("proven: below L = 0.69314717") for r in reasons)
    assert all(
        r.endswith(
            "ends on a global minimum, the one on its side of e = 0, where L = 0.6931471806, not "
            "below the level: the sublevel set does not cross it"
        )
        for r in reasons
    )
    far = local & (bm.endpoints[..., 1] >= -0.6)
    assert far.any() and np.all(bm.evidence[far] == 1)
    assert {bm.reasons[c] for c in np.unique(bm.reason_codes[far])} == {
        "proven: in the certified tube around #2"
    }
    for a in bm.reached():
        if a.kind == "local_max":
            assert a.proven == 0.0
        if a.kind == "global_min":
            assert a.proven == a.fraction > 0
    assert bm.proven_share() == pytest.approx(float(np.mean(bm.evidence == 1)), abs=1e-12)


def test_the_canonical_global_labels_are_proven_by_its_level() -> None:
    check(shares(41))


@pytest.mark.slow
def test_the_canonical_201_map_keeps_its_proven_global_share() -> None:
    """The same on the 201 × 201 map of `gradflow basins --p 0.9 --q 0.9 --grid 201`."""
    check(shares(201))


@pytest.fixture(scope="module")
def canonical_09():
    return markov.canonical(0.9, 0.9)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("e", "w", "kind"), [(1.0, -1.0, Outcome.GLOBAL_MIN), (1.0, 0.5, Outcome.LOCAL_MIN)]
)
def test_one_flow_without_critical_sets_gets_the_model_s_proof(canonical_09, e, w, kind) -> None:
    """``gradflow.flow(model, θ0)`` with no critical sets given.  At p + q > 1 a start with
    ``w < −1/√2`` reaches Γ* (its level curve of E never meets e = 0 on that side) and ends below
    H(π) = log 2: proven by the model's level, as on the command line, on the curve of Γ* on its
    side of e = 0 (e > 0), where L = log 2.  A start with ``w > 0``
    runs along its level curve ``E = e² − w² − ln w`` (conserved) into the line e = 0 at the
    ``w∞`` with ``w∞² + ln w∞ = −E`` (``E = 0.75 + ln 2`` from (1, 0.5), so ``w∞ ≈ 0.2246``), a
    set of dimension 1: numerical.  Slow: the flow's compilation and the model's critical sets
    take about 20 s on a loaded machine."""
    path = gradflow.flow(canonical_09, [e, w])
    assert path.reached is kind
    assert path.evidence.proven
    if kind is Outcome.GLOBAL_MIN:
        assert path.evidence.reason.startswith("below L = 0.69314718")
        assert path.evidence.reason.endswith(
            "the one on its side of e = 0, where L = 0.6931471806, not below the level: the "
            "sublevel set does not cross it"
        )
        assert path.losses[-1] < math.log(2) and path.attractor.point[0] > 0
    else:
        energy = e**2 - w**2 - math.log(w)
        w_end = brentq(lambda v: v**2 + math.log(v) + energy, 1e-3, w)
        assert path.endpoint == pytest.approx([0.0, w_end], abs=1e-6)
        assert path.evidence.reason.startswith("in the certified tube around #")
