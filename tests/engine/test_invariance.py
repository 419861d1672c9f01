"""Answers that must not depend on what does not matter: the loss's scale, the grid or batch a
point is integrated in.  Every expected value is worked out by hand in the docstring.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
import sympy as sp

import gradflow
from gradflow import ReducedModel

x, y, a, b = sp.symbols("x y a b", real=True)
c = sp.Symbol("c", positive=True)
BOX = (-2.0, 2.0, -2.0, 2.0)
DOUBLE_WELL = (x**2 - 1) ** 2 + y**2


@pytest.fixture(scope="module")
def scaled_well() -> ReducedModel:
    """c·((x² - 1)² + y²) with the scale c a hyperparameter, so every scale shares one program."""
    return ReducedModel(
        "scaled double well",
        (x, y),
        c * DOUBLE_WELL,
        hyperparams=(c,),
        domains={c: sp.Interval.open(0, sp.oo)},
        bounds={"x": (-2, 2), "y": (-2, 2)},
    )


def _well_answer(bm: gradflow.BasinMap, n: int) -> None:
    """dx/dt = -4c x(x² - 1) keeps the sign of x, dy/dt = -2c y: x < 0 ends at (-1, 0), x > 0 at
    (1, 0), the invariant column x = 0 at the saddle (0, 0); on an n × n grid of [-2, 2]² that
    is (n - 1)/2 columns per well and the middle column for the saddle."""
    by_point = {tuple(np.round(p.point, 9)): p for p in bm.attractors}
    left, right, saddle = by_point[(-1.0, 0.0)], by_point[(1.0, 0.0)], by_point[(0.0, 0.0)]
    assert left.kind == right.kind == "global_min" and saddle.kind == "saddle"
    xs = np.broadcast_to(bm.xs, bm.attractor_ids.shape)
    assert np.all(bm.attractor_ids[xs < 0] == left.id)
    assert np.all(bm.attractor_ids[xs > 0] == right.id)
    assert np.all(bm.attractor_ids[xs == 0] == saddle.id)
    assert left.fraction == right.fraction == pytest.approx((n - 1) / 2 * n / n**2)
    assert saddle.fraction == pytest.approx(n / n**2)
    assert {p.id for p in bm.reached()} == {left.id, right.id, saddle.id}
    assert bm.fractions()["not_converged"] == 0.0


@pytest.mark.parametrize("scale", [1e-8, 1.0, 1e8])
def test_a_scaled_loss_has_the_same_critical_sets(scaled_well, scale) -> None:
    """c·((x² - 1)² + y²): ∇L = c(4x(x² - 1), 2y) vanishes at (0, 0) and (±1, 0) for every
    c > 0; the Hessian c·diag(12x² - 4, 2) is c·diag(-4, 2) at the origin (a saddle of Morse
    index 1, L = c) and c·diag(8, 2) at (±1, 0) (L = 0 ≤ L: global minima)."""
    sets = gradflow.critical_sets(scaled_well.bind(c=scale))
    found = sorted((s.kind, tuple(np.round(s.sample, 9)), s.morse_index) for s in sets)
    assert found == [
        ("global_min", (-1.0, 0.0), 0),
        ("global_min", (1.0, 0.0), 0),
        ("saddle", (0.0, 0.0), 1),
    ]
    (saddle,) = [s for s in sets if s.kind == "saddle"]
    assert saddle.loss == pytest.approx(scale) and saddle.nullity == 0
    np.testing.assert_allclose(saddle.hessian_eigenvalues, [-4 * scale, 2 * scale], rtol=1e-6)


@pytest.mark.parametrize("scale", [1e-8, 1e8])
def test_a_scaled_loss_has_the_same_basins(scaled_well, scale) -> None:
    """The flow of c·L is the flow of L with time divided by c: the same basins.  21 × 21 grid:
    210/441 to each well, 21/441 (the column x = 0) to the saddle, nothing unconverged."""
    landscape = scaled_well.bind(c=scale)
    bm = gradflow.basins(
        landscape, region=gradflow.Region.of(landscape, grid=21, box=BOX), progress=False
    )
    _well_answer(bm, 21)
    path = gradflow.flow(landscape, [0.5, 1.5], critical=bm.critical)
    assert path.reached is gradflow.Outcome.GLOBAL_MIN
    np.testing.assert_allclose(path.endpoint, [1.0, 0.0], atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("scale", [1e-8, 1e8])
def test_the_double_well_times_a_constant_on_a_41_grid(scale) -> None:
    """The example as written: the constant inside the loss, a 41 × 41 grid of [-2, 2]²: saddle
    (0, 0) of Morse index 1, minima (±1, 0), 820/1681 to each and 41/1681 to the saddle."""
    model = ReducedModel("well", (x, y), sp.Float(scale) * DOUBLE_WELL, bounds={"x": (-2, 2)})
    bm = gradflow.basins(
        model.bind(), region=gradflow.Region.of(model.bind(), grid=41, box=BOX), progress=False
    )
    (saddle,) = [s for s in bm.critical if s.kind == "saddle"]
    assert saddle.morse_index == 1
    _well_answer(bm, 41)


@pytest.fixture(scope="module")
def tilted() -> gradflow.BoundModel:
    """(1 - ab)² + (a² - b²)²/10, symmetric under (a, b) → (-a, -b) and (a, b) → (-b, -a)."""
    loss = (1 - a * b) ** 2 + (a**2 - b**2) ** 2 / 10
    return ReducedModel("tilted", (a, b), loss, bounds={"a": (-2, 2), "b": (-2, 2)}).bind()


@pytest.fixture(scope="module")
def tilted_map(tilted) -> gradflow.BasinMap:
    return gradflow.basins(
        tilted, region=gradflow.Region.of(tilted, grid=21, box=BOX), progress=False
    )


def test_a_grid_symmetric_about_zero_is_exactly_symmetric() -> None:
    """x_{n-1-i} = -x_i exactly, and the 41-point axis holds the 21-point axis at its even
    positions, bit for bit."""
    for n in (2, 3, 21, 41, 101, 1000):
        axis = gradflow.grid_axis(-2.0, 2.0, n)
        assert np.array_equal(axis, -axis[::-1]) and axis[0] == -2.0 and axis[-1] == 2.0
    for lo, hi in [(-2.0, 2.0), (-3.0, 1.0), (0.1, 0.7)]:
        coarse, fine = gradflow.grid_axis(lo, hi, 21), gradflow.grid_axis(lo, hi, 41)
        assert np.array_equal(fine[::2], coarse)


def test_a_symmetric_loss_has_a_symmetric_map(tilted_map) -> None:
    """On b = -a, ∇L = (2a(1 + a²), -2a(1 + a²)) points along the line: it is invariant, the
    stable manifold of the saddle (0, 0) (Hessian [[0, -2], [-2, 0]], eigenvalues ±2).  b > -a
    flows to (1, 1), b < -a to (-1, -1): 210/441 each, 21/441 to the saddle, and the map is
    symmetric under (a, b) → (-a, -b) with the two minima exchanged."""
    bm = tilted_map
    by_point = {tuple(np.round(p.point, 9)): p.id for p in bm.attractors}
    low, high, saddle = by_point[(-1.0, -1.0)], by_point[(1.0, 1.0)], by_point[(0.0, 0.0)]
    aa, bb = np.meshgrid(bm.xs, bm.ys)
    ids = bm.attractor_ids
    assert np.all(ids[bb > -aa] == high) and np.all(ids[bb < -aa] == low)
    assert np.all(ids[bb == -aa] == saddle) and np.sum(bb == -aa) == 21
    swap = {low: high, high: low, saddle: saddle}
    assert np.array_equal(ids[::-1, ::-1], np.vectorize(swap.get)(ids))
    fractions = {p.id: p.fraction for p in bm.attractors}
    assert fractions[low] == fractions[high] == pytest.approx(210 / 441)
    assert fractions[saddle] == pytest.approx(21 / 441)
    measure_zero = {p.id: p.measure_zero for p in bm.reached()}
    assert measure_zero == {low: False, high: False, saddle: True}


def test_mirror_image_branches_of_one_piece_have_mirror_image_points() -> None:
    """(x²y − 1)² is even in x; its minima y = 1/x² are one closed-form piece with two
    components, x < 0 and x > 0.  The point of each nearest the centre of the box [-2, 2]²
    minimises x² + x⁻⁴: 2x − 4x⁻⁵ = 0, so x = ±2^{1/6}, y = 2^{−1/3}; each component is
    represented by its own, bit for bit a mirror image of the other."""
    model = ReducedModel(
        "x2y", (x, y), (x**2 * y - 1) ** 2, bounds={"x": (-2, 2), "y": (-2, 2)}
    ).bind()
    (minima,) = [s for s in gradflow.critical_sets(model) if s.kind == "global_min"]
    assert minima.n_components == 2
    points = minima.samples[np.argsort(minima.samples[:, 0])]
    np.testing.assert_allclose(
        points, [[-(2 ** (1 / 6)), 2 ** (-1 / 3)], [2 ** (1 / 6), 2 ** (-1 / 3)]], atol=1e-7
    )
    np.testing.assert_array_equal(points[0], points[1] * [-1.0, 1.0])


def test_each_sheet_of_xyz_1_gets_its_nearest_point_by_the_search_s_tolerance(
    monkeypatch,
) -> None:
    """``(1 − xyz)²`` in ``[−3, 2] × [−2, 3] × [−1, 2.5]`` (centre ``c = (−½, ½, ¾)``): the
    minima ``xyz = 1`` are four sheets, by the signs of ``(x, y, z)``: ``+++``, ``+−−``,
    ``−+−``, ``−−+``.  Each sheet's sample is its point nearest ``c``: on the sheet, with
    ``p − c`` along the normal ``∇(xyz) = (yz, xz, xy)`` (Lagrange), and no nearer than any
    point of a dense grid of the sheet (``z = 1/(xy)`` over 600² values of ``(x, y)``, kept
    where it lies in the box).  And every Nelder–Mead search behind them stops because its
    simplex is narrow, not because its iterations ran out: where the values near the
    optimum rounded apart, a tolerance on the squared distance below its rounding kept two of
    them going for 4,000 iterations.  (With the cache folder off, so that the sets are
    searched here, not read back from an earlier run.)"""
    import gradflow._critical.closed_sets as closed_sets

    monkeypatch.setenv("GRADFLOW_CACHE_DIR", "")

    statuses, minimize = [], closed_sets.minimize

    def recorded(*args, **kwargs):
        result = minimize(*args, **kwargs)
        statuses.append(int(result.status))
        return result

    monkeypatch.setattr(closed_sets, "minimize", recorded)
    box = {"x": (-3.0, 2.0), "y": (-2.0, 3.0), "z": (-1.0, 2.5)}
    bound = gradflow.loss_model("(1 - x*y*z)**2", ["x", "y", "z"]).bind()
    (minima,) = [
        s
        for s in gradflow.critical_sets(bound, box=bound.search_box(box), starts=16)
        if s.kind == "global_min"
    ]
    assert statuses and all(status == 0 for status in statuses), statuses
    lo, hi = np.array(list(box.values())).T
    center = (lo + hi) / 2
    sheets = {tuple(np.sign(p).astype(int)): p for p in minima.samples}
    assert set(sheets) == {(1, 1, 1), (1, -1, -1), (-1, 1, -1), (-1, -1, 1)}
    gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], 600), np.linspace(lo[1], hi[1], 600))
    with np.errstate(divide="ignore"):
        gz = 1 / (gx * gy)
    grid = np.stack([gx.ravel(), gy.ravel(), gz.ravel()], axis=1)
    grid = grid[np.all((grid >= lo) & (grid <= hi), axis=1)]
    for signs, p in sheets.items():
        x_, y_, z_ = p
        assert x_ * y_ * z_ == pytest.approx(1.0, abs=1e-9)
        normal = np.array([y_ * z_, x_ * z_, x_ * y_])
        gap = np.linalg.norm(np.cross(p - center, normal))
        assert gap <= 1e-8 * np.linalg.norm(p - center) * np.linalg.norm(normal), signs
        same = grid[np.all(np.sign(grid).astype(int) == signs, axis=1)]
        nearest = np.min(np.linalg.norm(same - center, axis=1))
        assert np.linalg.norm(p - center) <= nearest + 1e-12, signs


def test_flow_agrees_with_the_map(tilted, tilted_map, long_programs) -> None:
    """(1.2, -1.2) lies on the stable manifold b = -a: one flow and the map both end at the
    saddle; (1.2, -1.0) lies above it and ends at (1, 1).

    The flow stays on the line only while the compiled field is exactly antisymmetric on it.
    XLA may fuse a multiplication and a subtraction into one multiply–add, and where it fuses
    ``0.4a² − 0.4b²`` so, the term is the rounding error of ``0.4a²`` instead of 0 on the line.
    At the suite's LLVM level 0 it does so at points of this path, and the flow, a rounding
    error off the line, leaves the saddle for a minimum; the flow is compiled as the command
    line compiles it (level 3)."""
    bm = tilted_map
    i, j = int(np.argmin(np.abs(bm.xs - 1.2))), int(np.argmin(np.abs(bm.ys + 1.2)))
    with long_programs():
        on = gradflow.flow(tilted, [bm.xs[i], bm.ys[j]], critical=bm.critical)
    assert on.reached is gradflow.Outcome.SADDLE and on.attractor.id == bm.attractor_ids[j, i]
    above = gradflow.flow(tilted, [1.2, -1.0], critical=bm.critical)
    assert above.reached is gradflow.Outcome.GLOBAL_MIN
    np.testing.assert_allclose(above.endpoint, [1.0, 1.0], atol=1e-6)


@pytest.mark.slow
def test_a_points_label_does_not_depend_on_its_grid(tilted, tilted_map) -> None:
    """The 21 × 21 grid's points are the even points of the 41 × 41 grid, bit for bit; each is
    integrated in another batch, with other neighbours, and must get the same attractor."""
    fine = gradflow.basins(
        tilted, region=gradflow.Region.of(tilted, grid=41, box=BOX), progress=False
    )
    coarse = tilted_map
    assert np.array_equal(fine.xs[::2], coarse.xs) and np.array_equal(fine.ys[::2], coarse.ys)
    same = {
        p.id: q.id
        for p in coarse.attractors
        for q in fine.attractors
        if p.point.tolist() == q.point.tolist()
    }
    np.testing.assert_array_equal(
        np.vectorize(same.get)(coarse.attractor_ids), fine.attractor_ids[::2, ::2]
    )


def test_tints_stay_apart_for_many_attractors_of_every_kind(tilted_map) -> None:
    """The map redrawn with twelve attractors of each of the five kinds, each reached by part of
    the grid: the 60 patches in the legend (and the two of the outcomes reaching none) have
    pairwise distinct colours, no two within 0.01 in RGB."""
    from matplotlib.legend import Legend

    kinds = ("global_min", "local_min", "saddle", "local_max", "degenerate")
    attractors = tuple(
        gradflow.Attractor(i, kind, "s", None, np.zeros(2), 0.0, 0, fraction=0.01)
        for i, kind in enumerate(k for k in kinds for _ in range(12))
    )
    ids = np.arange(tilted_map.labels.size).reshape(tilted_map.labels.shape) % 62 - 2
    many = dataclasses.replace(tilted_map, attractors=attractors, attractor_ids=ids)
    (legend,) = many.figure().findobj(Legend)
    colors = np.array([h.get_facecolor()[:3] for h in legend.legend_handles])
    assert len(colors) >= 60
    gaps = [np.abs(p - q).max() for p, q in itertools.combinations(colors, 2)]
    assert min(gaps) > 0.01


def _triple_end(x0: float, y0: float) -> tuple[int, ...] | None:
    """Where the flow of (1 - xyz)² takes (x0, y0, 1): the sign pattern of the component of
    xyz = 1 it reaches, ``None`` for a point of an axis (a saddle).

    x' = 2(1 - P)yz and its cyclic images (P = xyz) conserve x² - y² and y² - z²: the squares
    move together, x² = x0² + s, y² = y0² + s, z² = 1 + s.  Where P > 0 (or P = 0 with one
    coordinate 0: it moves off 0 with the sign of the other two's product) s grows until P = 1:
    the start's own sign pattern.  Where P < 0, |P| shrinks: s falls until the coordinate of
    least square reaches 0, where its derivative (twice the other two's product) is not 0, so it
    crosses and P = 1 is reached with that sign flipped; when two squares are least together, both
    reach 0 at once and the flow stops on the third axis.
    """
    v = np.array([x0, y0, 1.0])
    if x0 == 0 and y0 == 0:
        return None
    if x0 * y0 > 0:
        return tuple(np.sign(v).astype(int))
    if x0 == 0 or y0 == 0:
        other = y0 if x0 == 0 else x0
        return (int(np.sign(other)), int(np.sign(other)), 1)
    least = np.flatnonzero(v**2 == np.min(v**2))
    if len(least) > 1:
        return None
    signs = np.sign(v).astype(int)
    signs[least[0]] *= -1
    return tuple(signs)


@pytest.mark.slow
def test_the_slice_z_1_of_1_minus_xyz_squared_flows_in_three_dimensions() -> None:
    """``(1 - xyz)²`` on the slice z = 1, grid 9 of [-3, 3]²: each start integrates the full 3-D
    flow (the slice is where it starts, not where it stays).  By :func:`_triple_end`: 30 starts
    reach the component +++ of xyz = 1, 30 the component --+, 9 each +-- and -+- (x0 y0 < 0
    with |x0|, |y0| > 1: z crosses 0), and 3 stop on the z axis, a saddle: (0, 0) and
    ±(0.75, -0.75).  Five attractors, four of them the four components, none "found by the flow".
    """
    bound = gradflow.loss_model("(1 - x*y*z)**2", ["x", "y", "z"]).bind()
    bm = gradflow.basins(
        bound,
        region=gradflow.Region.of(bound, grid=9, plane=("x", "y"), fixed={"z": 1.0}),
        progress=False,
    )
    by_id = {a.id: a for a in bm.attractors}
    assert sorted(a.kind for a in bm.attractors if a.fraction > 0) == ["global_min"] * 4 + [
        "saddle"
    ]
    assert all(a.set != "found by the flow" for a in bm.attractors)
    count: dict[tuple[int, ...] | None, int] = {}
    for (j, i), aid in np.ndenumerate(bm.attractor_ids):
        expected = _triple_end(bm.xs[i], bm.ys[j])
        count[expected] = count.get(expected, 0) + 1
        reached = by_id[int(aid)]
        if expected is None:
            assert reached.kind == "saddle", (bm.xs[i], bm.ys[j])
        else:
            assert reached.kind == "global_min", (bm.xs[i], bm.ys[j])
            assert tuple(np.sign(reached.point).astype(int)) == expected, (bm.xs[i], bm.ys[j])
    assert count == {(1, 1, 1): 30, (-1, -1, 1): 30, (1, -1, -1): 9, (-1, 1, -1): 9, None: 3}
