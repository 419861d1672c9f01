"""The three-scalar canonical model L(e, w, a): its derivation, reduction to the canonical model,
conserved energy and closed-form critical sets."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

import gradflow
from gradflow.systems import markov
from gradflow.systems.markov.ansatz import a, ansatz_logit, b, e, w
from gradflow.systems.markov.attention import (
    attention_energy,
    canonical_attention,
    canonical_attention_bias,
)


def _entropy(x: float) -> float:
    return -x * math.log(x) - (1 - x) * math.log(1 - x)


def test_derived_gap_and_scale_are_the_hand_derivation():
    """Hand derivation (docs): y = e(x - ½)(1 + a e²/4) α, gap c = e²(1 + a e²/4)(1 + 2w|w|)."""
    derived = ansatz_logit()
    assert sp.simplify(derived.scale - e * (1 + a * e**2 / 4)) == 0
    assert sp.simplify(derived.gap - e**2 * (1 + a * e**2 / 4) * (1 + 2 * w * sp.Abs(w))) == 0


def test_logit_after_a_zero_on_both_branches(rng):
    """``logit(0) = b - e s/2`` where the FFN fires after a 1 (``e s > 0`` … ``s > 0``), and
    ``b - e s/2 - 2 w|w| e s`` where it fires after a 0 (``s < 0``)."""
    f = sp.lambdify((e, w, a, b), ansatz_logit().logit0)
    for ee, ww, aa, bb in rng.uniform(-2, 2, size=(200, 4)) * [1, 1, 3, 1]:
        s = ee * (1 + aa * ee**2 / 4)
        expected = bb - ee * s / 2 - (2 * ww * abs(ww) * ee * s if s < 0 else 0.0)
        assert f(ee, ww, aa, bb) == pytest.approx(expected, abs=1e-12)


def test_zero_attention_is_the_canonical_model(rng):
    pts = rng.uniform(-2, 2, size=(50, 3))
    pts[:, 2] = 0.0
    for p, q in ((0.5, 0.8), (0.2, 0.3)):
        np.testing.assert_allclose(
            canonical_attention(p, q).loss(pts), markov.canonical(p, q).loss(pts[:, :2]), atol=1e-13
        )
        with_b = np.insert(pts, 3, rng.uniform(-2, 2, 50), axis=1)
        np.testing.assert_allclose(
            canonical_attention_bias(p, q).loss(with_b),
            markov.canonical_bias(p, q).loss(with_b[:, [0, 1, 3]]),
            atol=1e-13,
        )


def test_energy_is_conserved(rng):
    """``∇E · ∇L = 0``: E is constant along every trajectory of the flow."""
    grad_e = sp.lambdify((e, w, a), [2 * e, -2 * w - 1 / sp.Abs(w), -4 * a])  # w ≠ 0
    for sign in (1, -1):
        t = sp.Symbol("t", positive=True)
        derivative = sp.diff(attention_energy.subs(w, sign * t), t) * sign
        assert sp.simplify(derivative - (-2 * sign * t - 1 / t)) == 0
    model = canonical_attention(0.5, 0.8)
    pts = rng.uniform(-1.5, 1.5, size=(100, 3))
    g = model.grad(pts)
    dot = np.einsum("ij,ij->i", np.stack(grad_e(*pts.T), axis=1), g)
    assert np.max(np.abs(dot) / np.linalg.norm(g, axis=1)) < 1e-10


def test_closed_form_levels_and_minimum():
    model = canonical_attention(0.5, 0.8)
    h_rate = (0.8 / 1.3) * _entropy(0.5) + (0.5 / 1.3) * _entropy(0.8)
    h_pi = _entropy(0.5 / 1.3)
    assert model.references["entropy_rate"] == pytest.approx(0.619015, abs=1e-6)
    assert model.references["unigram_loss"] == pytest.approx(h_pi, abs=1e-14)
    c_star = math.log(0.5 * 0.2 / (0.5 * 0.8))
    # a point of the global-minimum surface: e = 1, w = -1, a = 4(c*/(e² g) - 1)/e² with g = -1
    point = [1.0, -1.0, 4 * (c_star / -1.0 - 1)]
    assert model.loss(point) == pytest.approx(h_rate, abs=1e-13)
    assert np.linalg.norm(model.grad(point)) < 1e-12


@pytest.mark.parametrize(
    "p, q, above, below",
    [(0.5, 0.8, "local_min", "local_max"), (0.2, 0.3, "local_max", "local_min")],
)
def test_critical_sets(p, q, above, below):
    """Φ'(0) = π0 π1 (p + q - 1): on e = 0 the loss curves up in e where Φ'(0)(1 + 2w|w|) > 0.
    Eleven samples per dimension of each closed-form set (the default is 41) already reach
    all four sheets of Γ* and both kinds on e = 0."""
    sets = gradflow.critical_sets(canonical_attention(p, q), starts=32, samples=11)
    kinds = {(s.name, s.kind) for s in sets}
    assert ("Γ*", "global_min") in kinds
    assert ("e = 0", above) in kinds and ("e = 0", below) in kinds
    assert ("w = -1/√2, a e² = -4", "saddle") in kinds
    unigram = [s for s in sets if s.name.startswith(("e = 0", "w = -1/√2"))]
    assert all(s.loss == pytest.approx(_entropy(p / (p + q)), abs=1e-12) for s in unigram)
    assert {s.dimension for s in sets if s.name == "e = 0"} == {2}
    (gamma,) = [s for s in sets if s.name == "Γ*"]
    assert _sheets(gamma) == {(-1, -1), (-1, 1), (1, -1), (1, 1)}


def _sheets(gamma: gradflow.CriticalSet) -> set[tuple[int, int]]:
    """Γ* = {e²(1 + a e²/4)(1 + 2w|w|) = c*} (e ≠ 0) has four sheets that never meet: the sign of
    e, and the sign of 1 + 2w|w| (zero only at w = -1/√2, where a = 4c*/(e⁴(1 + 2w|w|)) - 4/e²
    runs to ±∞; 1 + a e²/4 then has the sign of c*(1 + 2w|w|)).  Each component lies on one of
    them and no two on the same one: returns the (sign e, sign(1 + 2w|w|)) of each component."""
    signs = []
    for label in range(gamma.n_components):
        e_, w_, a_ = gamma.component_points(label).T
        gain = 1 + 2 * w_ * np.abs(w_)
        sheet = {(int(np.sign(u)), int(np.sign(v))) for u, v in zip(e_, gain)}
        assert len(sheet) == 1
        signs += sheet
    assert len(signs) == len(set(signs))
    return set(signs)


@pytest.mark.slow
def test_a_flow_ends_on_the_sheet_of_the_attractor_it_reaches():
    """p = 0.5, q = 0.8 (c* = ln((1 - p)(1 - q)/(pq)) = ln(1/4) < 0): the flow from
    (e, w, a) = (2.7, 1, 0.5) ends on Γ* where e > 0 and 1 + 2w|w| > 0 (so 1 + a e²/4 < 0); the
    attractor it is reported to reach is the component on that sheet, in the box the command
    line's flow searches (the model's box widened by half)."""
    bound = canonical_attention(0.5, 0.8)
    bounds = {n: (-6.0, 6.0) for n in ("e", "w", "a")}
    sets = gradflow.critical_sets(bound, box=bound.search_box(bounds))
    (gamma,) = [s for s in sets if s.name == "Γ*"]
    assert _sheets(gamma) == {(-1, -1), (-1, 1), (1, -1), (1, 1)}
    path = gradflow.flow(bound, [2.7, 1.0, 0.5], critical=sets)
    e_, w_, a_ = path.endpoint
    assert path.reached is gradflow.Outcome.GLOBAL_MIN and e_ > 0 and 1 + 2 * w_ * abs(w_) > 0
    assert 1 + a_ * e_**2 / 4 < 0
    reached = path.attractor
    e_, w_, _ = reached.point
    assert reached.set == "Γ*" and e_ > 0 and 1 + 2 * w_ * abs(w_) > 0


@pytest.mark.slow
@pytest.mark.parametrize("model", [canonical_attention, canonical_attention_bias])
def test_iid_chain_makes_the_plane_w_saddle_globally_minimal(model):
    """p + q = 1: c* = 0, so all of {c = 0} ⊃ {w = -1/√2} is a set of global minima at H(π)."""
    bound = model(0.3, 0.7)
    sets = gradflow.critical_sets(bound, starts=32)
    assert {s.kind for s in sets} == {"global_min"}
    assert not [s for s in sets if s.name == "numerical"]
    (plane,) = [s for s in sets if s.name == "w = -1/√2"]
    assert plane.dimension == 2
    np.testing.assert_allclose(plane.points[:, 1], -1 / math.sqrt(2), atol=1e-15)
    np.testing.assert_allclose(bound.loss(plane.points), _entropy(0.3), atol=1e-12)
    assert np.abs(bound.grad(plane.points)).max() < 1e-10


@pytest.mark.parametrize("p, q, expected", [(0.5, 0.8, 0.0), (0.2, 0.3, 1.0)])
def test_small_initializations_on_rays(p, q, expected):
    """Near the origin |w| < 1/√2, so 1 + 2w|w| > 0 and L ≈ H(π) + Φ'(0) e² (1 + 2w|w|):
    every small init ends at the unigram plane when Φ'(0) = π0π1(p + q - 1) > 0 and at the global
    minimum when it is < 0."""
    from gradflow.systems.markov.rays import ray_outcomes, sphere_directions

    rays = ray_outcomes(
        canonical_attention(p, q), sphere_directions(24, 3, seed=1), np.array([0.1])
    )
    assert rays.fraction("global")[0] == expected
    assert rays.fraction("other")[0] == 0.0


def _crosses_c_zero(e0: float, a0: float) -> bool:
    """The (e, a) projection of the flow of L(e, w, a) where 1 + 2w|w| > 0.

    ∇_{e,a} L = Φ'(c)(1 + 2w|w|)(2e + a e³, e⁴/4): up to a positive factor the direction is
    independent of w, so whether 1 + a e²/4 reaches 0 (c crosses 0, the way to Γ*) before e
    reaches 0 (the unigram plane) depends on (e0, a0) only.
    """
    from scipy.integrate import solve_ivp

    def crossing(s, y):
        return 1 + y[1] * y[0] ** 2 / 4

    crossing.terminal = True
    sol = solve_ivp(
        lambda s, y: [-(2 * y[0] + y[1] * y[0] ** 3), -(y[0] ** 4) / 4],
        (0.0, 200.0),
        [e0, a0],
        events=crossing,
        rtol=1e-10,
        atol=1e-12,
    )
    return sol.status == 1


def test_slice_basin_boundary_is_horizontal_where_w_only_sets_the_speed():
    """On the slice a = 0.5 (p + q > 1), for w > 0 the unigram basin ends at one height e*,
    the same for every w: the basin map of the 3-D flow agrees with the (e, a) reduction."""
    from gradflow import Region, basins

    a0 = 0.5
    lo, hi = 1.0, 3.0
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if _crosses_c_zero(mid, a0) else (mid, hi)
    e_star = (lo + hi) / 2
    es = np.array([e_star - 0.03, e_star - 0.01, e_star + 0.01, e_star + 0.03])
    model = canonical_attention(0.5, 0.8)
    bm = basins(
        model,
        region=Region.of(model, grid=(3, 4), box=(0.5, 2.5, es[0], es[-1]), fixed={"a": a0}),
        progress=False,
    )
    np.testing.assert_allclose(bm.ys, es)
    assert (bm.mask("local_min")[:2]).all() and (bm.mask("global_min")[2:]).all()
