"""Critical sets and basins of the canonical model against the exact analysis of docs/systems/markov.md.

The flow conserves E = e² - w² - sgn(w) ln|w|, so each trajectory runs along a level curve of E.
With E_sad = -(1 + ln 2)/2 (the energy of the saddle (0, -1/√2)) the fate of a point with e ≠ 0
is decided by which side of E = E_sad it lies on:

- p + q > 1: the local minima are (0, w) with w > -1/√2; a point goes there iff w ≥ 0, or
  -1/√2 < w < 0 and E < E_sad.
- p + q < 1: the local minima are (0, w) with w < -1/√2; a point goes there iff w < -1/√2 and
  E < E_sad.

Everything else reaches the global-minimum curve Γ*.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import gradflow
from gradflow import LABELS, Region, basins, critical_sets
from gradflow.systems import markov

W_SADDLE = -1 / np.sqrt(2)
E_SADDLE = -(1 + np.log(2)) / 2


def energy(e: np.ndarray, w: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return e**2 - w**2 - np.sign(w) * np.log(np.abs(w))


def exact_reaches_global(e: np.ndarray, w: np.ndarray, p: float, q: float) -> np.ndarray:
    below = energy(e, w) < E_SADDLE
    if p + q > 1:
        return ~((w >= 0) | ((w > W_SADDLE) & (w < 0) & below))
    return ~((w < W_SADDLE) & below)


GRID = 31
"""Basin maps' grid: odd, so the row e = 0 is sampled; at 31 × 31 (cell 0.2) the far cells
still number about 800 per map, and at p = 0.2, q = 0.85 over a hundred flows end on the steep
branches of Γ* beyond its samples (e ≈ 1.8…3), which the test reads as points of Γ*."""


def by_kind(sets, kind):
    return [s for s in sets if s.kind == kind]


@pytest.mark.parametrize("p, q", [(0.7, 0.6), (0.9, 0.9), (0.1, 0.1), (0.3, 0.2)])
def test_critical_sets_match_the_closed_forms(p: float, q: float) -> None:
    model = markov.canonical(p, q)
    refs = model.references
    sets = critical_sets(model)

    (gamma,) = by_kind(sets, "global_min")
    e, w = gamma.points.T
    assert gamma.dimension == 1
    np.testing.assert_allclose(e**2 * (1 + 2 * w * np.abs(w)), refs["c_star"], rtol=1e-9)
    np.testing.assert_allclose(model.loss(gamma.points), refs["entropy_rate"], atol=1e-12)

    (saddle,) = by_kind(sets, "saddle")
    assert saddle.dimension == 0
    np.testing.assert_allclose(saddle.points[0], [0.0, W_SADDLE], atol=1e-12)
    assert model.invariant("E", saddle.points[0]) == pytest.approx(E_SADDLE, abs=1e-12)

    (minima,) = by_kind(sets, "local_min")
    (maxima,) = by_kind(sets, "local_max")
    for s in (minima, maxima):
        assert s.dimension == 1
        np.testing.assert_allclose(s.points[:, 0], 0.0, atol=1e-15)
        assert s.loss == pytest.approx(refs["unigram_loss"], abs=1e-12)
    if p + q > 1:
        assert np.all(minima.points[:, 1] > W_SADDLE) and np.all(maxima.points[:, 1] < W_SADDLE)
    else:
        assert np.all(minima.points[:, 1] < W_SADDLE) and np.all(maxima.points[:, 1] > W_SADDLE)
    assert {s.kind for s in sets} == {"global_min", "local_min", "saddle", "local_max"}


@pytest.mark.parametrize("p, q", [(0.3, 0.7), (0.5, 0.5)])
def test_p_plus_q_equal_one_makes_every_critical_point_global(p: float, q: float) -> None:
    """An i.i.d. chain: c* = 0, so the critical set is {c = 0} = {e = 0} ∪ {w = -1/√2}, all at
    H(π) = entropy rate, and nothing else (no Γ* apart from it, no stray numerical points).  The
    point (0, -1/√2), a saddle when p + q ≠ 1, is here a global minimum where the two lines
    cross: one set listed once, it is not repeated as a set of its own."""
    model = markov.canonical(p, q)
    refs = model.references
    assert refs["entropy_rate"] == pytest.approx(refs["unigram_loss"], abs=1e-12)
    sets = critical_sets(model)
    assert {s.kind for s in sets} == {"global_min"}
    assert {s.name for s in sets} == {"e = 0", "w = -1/√2"}
    np.testing.assert_allclose(model.grad([0.0, W_SADDLE]), 0.0, atol=1e-15)
    points = np.concatenate([s.points for s in sets])
    e, w = points.T
    on_c_zero = (np.abs(e) < 1e-12) | (np.abs(w - W_SADDLE) < 1e-12)
    assert on_c_zero.all()
    np.testing.assert_allclose(model.loss(points), refs["entropy_rate"], atol=1e-12)
    (line,) = [s for s in sets if s.name == "w = -1/√2"]
    assert line.dimension == 1 and np.ptp(line.points[:, 0]) > 5


@pytest.mark.parametrize("p, q", [(0.7, 0.6), (0.3, 0.7)])
def test_the_search_finds_nothing_beyond_the_complete_closed_forms(p: float, q: float) -> None:
    """∇L = Φ'(c)·(2e(1 + 2w|w|), 4e²|w|) vanishes only where c = c* or e = 0, so the declared
    sets are every critical point and the model says so (``critical_sets_complete``: no search).
    The same loss without that declaration runs the 256-start search, which must report the
    same sets and no numerical point (p + q = 1 included, where ∇L vanishes to third order)."""
    model = markov.canonical(p, q)
    assert model.critical_sets_complete
    searched = dataclasses.replace(markov.canonical_model(), critical_sets_complete=False)
    unsure = searched.bind(p=p, q=q)
    assert not unsure.critical_sets_complete
    found, declared = critical_sets(unsure), critical_sets(model)
    assert "numerical" not in {s.name for s in found}

    def summary(sets):
        return sorted((s.name, s.kind, s.dimension, len(s.points)) for s in sets)

    assert summary(found) == summary(declared)


@pytest.mark.parametrize("p, q", [(0.9, 0.9), (0.1, 0.1), (0.2, 0.85)])
def test_basin_map_agrees_with_the_energy_classification(p: float, q: float, long_programs) -> None:
    """Every endpoint reaches a set the model names in closed form (they are complete), none an
    attractor "found by the flow": at ``p = 0.2, q = 0.85`` the branches of ``Γ*`` rise steeply
    to ``e = ±∞`` at ``w = −1/√2``, between its samples ``w = −0.9`` and the asymptote, where
    flows end at ``e ≈ 1.8…3``; they are points of ``Γ*``, joined to its samples along it.
    The loss is even in ``e``, so the two branches of ``Γ*`` are shown at mirror-image points,
    bit for bit."""
    with long_programs():
        bm = basins(
            markov.canonical(p, q),
            region=Region.of(markov.canonical(p, q), grid=GRID),
            progress=False,
        )
    branches = [a.point for a in bm.attractors if a.set == "Γ*"]
    assert len(branches) == 2
    np.testing.assert_array_equal(branches[1], branches[0] * [-1.0, 1.0])
    fractions = bm.fractions()
    assert sum(fractions.values()) == pytest.approx(1.0)
    assert fractions["not_converged"] == 0 and fractions["diverged"] == 0
    w, e = np.meshgrid(bm.xs, bm.ys)
    cell = bm.xs[1] - bm.xs[0]
    separatrix_e = np.sqrt(np.maximum(E_SADDLE + w**2 - np.log(np.abs(w) + (w >= 0)), 0.0))
    far = (e != 0) & (np.abs(w) > cell) & ((w > 0) | (np.abs(np.abs(e) - separatrix_e) > cell))
    agree = (bm.mask("global_min") == exact_reaches_global(e, w, p, q))[far]
    assert far.sum() > 0.8 * far.size
    assert agree.mean() >= 0.995
    line_min = (w > W_SADDLE) if p + q > 1 else (w < W_SADDLE)
    side = np.where(line_min, "local_min", "local_max")
    names = np.asarray(LABELS)[bm.labels]
    assert (names[e == 0] == side[e == 0]).all()
    end_e, end_w = bm.endpoints[..., 0], bm.endpoints[..., 1]
    on_line = (np.abs(end_e) <= 1e-2) & (np.abs(end_w - W_SADDLE) > 1e-2)
    end_min = (end_w > W_SADDLE) if p + q > 1 else (end_w < W_SADDLE)
    assert on_line.sum() > 0.1 * on_line.size
    assert (names[on_line] == np.where(end_min, "local_min", "local_max")[on_line]).all()
    assert all(a.measure_zero for a in bm.attractors if a.kind == "saddle" and a.fraction)
    assert {a.set for a in bm.attractors} <= {"Γ*", "e = 0", "saddle (0, -1/√2)"}


@pytest.mark.parametrize("p, q", [(0.9, 0.9), (0.1, 0.1)])
def test_separatrix_is_the_saddle_energy_level_out_to_the_box(p: float, q: float) -> None:
    """The saddle is degenerate, so its stable manifold is {E = E_sad} on the side it flows in from.

    p + q > 1: the two rays into -1/√2 < w < 0, running up to |e| = 3 as w → 0⁻ (each ends at
    the first vertex of its integrated part past the edge);
    p + q < 1: the two rays into w < -1/√2, running out to w = -3.
    """
    from gradflow._portrait.separatrix import separatrices

    model = markov.canonical(p, q)
    lines = separatrices(model, critical_sets(model), (-3.0, 3.0, -3.0, 3.0))
    assert len(lines) == 2
    signs = set()
    for line in lines:
        w, e = line.T
        np.testing.assert_allclose(line[0], [W_SADDLE, 0.0], atol=1e-12)
        inner = (np.abs(w) <= 3) & (np.abs(e) <= 3)
        assert inner[:-1].all()
        np.testing.assert_allclose(energy(e[inner], w[inner]), E_SADDLE, atol=2e-4)
        if p + q > 1:
            assert np.all((w[1:] > W_SADDLE) & (w[1:] < 0))
            assert abs(e[-2]) < 3.0 <= abs(e[-1])  # out through |e| = 3, one step past it
        else:
            assert np.all(w[1:] < W_SADDLE)
            assert w[-1] == pytest.approx(-3.0, abs=0.05)
        signs.add(np.sign(e[-1]))
    assert signs == {-1.0, 1.0}


@pytest.mark.parametrize("p, q", [(0.5, 0.8), (0.2, 0.3)])
def test_a_separatrix_crosses_a_box_that_does_not_hold_its_saddle(p: float, q: float) -> None:
    """The box ``e ∈ [0.1, 1.6]`` leaves out the saddle ``(0, −1/√2)``, but its stable manifold
    ``{E = E_sad}, e > 0`` crosses it, in from the edge ``e = 0.1`` and out through ``e = 1.6``:
    for p + q > 1 within ``−1/√2 < w < 0`` (``e → ∞`` as ``w → 0⁻``), for p + q < 1 within
    ``w < −1/√2``, where ``e² = E_sad + w² − ln|w|`` reaches 1.6² at ``w = −2.0282…`` (root of
    ``w² − ln|w| = 2.56 − E_sad``), inside ``w ≥ −2.5``.  The portrait draws it (one run, a
    vertex past each edge it crosses)."""
    result = gradflow.portrait(
        markov.canonical(p, q),
        region=gradflow.Region.of(markov.canonical(p, q), box=(-2.5, 2.0, 0.1, 1.6)),
        show_basins=False,
    )
    (line,) = result.separatrix
    w, e = line.T
    assert e[0] < 0.1 <= e[1] and e[-2] <= 1.6 < e[-1]
    np.testing.assert_allclose(energy(e[1:-1], w[1:-1]), E_SADDLE, atol=2e-4)
    if p + q > 1:
        assert np.all((w[1:-1] > W_SADDLE) & (w[1:-1] < 0))
    else:
        assert np.all(w[1:-1] < W_SADDLE)
        t = (1.6 - e[-2]) / (e[-1] - e[-2])
        assert w[-2] + t * (w[-1] - w[-2]) == pytest.approx(-2.0282, abs=2e-3)


@pytest.mark.slow
def test_bias_model_critical_sets_and_flow() -> None:
    """L(e, w, b): Γ* lifted with b = c*/(2(1 + 2w|w|)) + logit(p); e = 0 needs b = ln(p/q)."""
    p, q = 0.7, 0.6
    model = markov.canonical_bias(p, q)
    refs = model.references
    sets = critical_sets(model)
    (gamma,) = by_kind(sets, "global_min")
    e, w, b = gamma.points.T
    gain = 1 + 2 * w * np.abs(w)
    np.testing.assert_allclose(b, refs["c_star"] / (2 * gain) + np.log(p / (1 - p)), atol=1e-10)
    line = [s for s in sets if s.name == "e = 0"]
    assert {s.kind for s in line} == {"local_min", "saddle"}
    for s in line:
        np.testing.assert_allclose(s.points[:, 2], np.log(p / q), atol=1e-12)
    trajectory = gradflow.flow(model, [0.5, -1.5, 0.0])
    assert trajectory.converged
    assert trajectory.losses[-1] == pytest.approx(refs["entropy_rate"], abs=1e-9)
    sliced = basins(model, region=Region.of(model, grid=9, fixed={"b": 0.0}), progress=False)
    assert sum(sliced.fractions().values()) == pytest.approx(1.0)
    assert sliced.fractions()["not_converged"] == 0
