"""Branches and bifurcations across a sweep, on the normal forms worked out by hand.

With ``y²/2`` added (a transverse direction that never bifurcates), ``∂L/∂x`` and ``∂²L/∂x²``
give every answer:

- ``x⁴/4 - a x²/2``: ``∂ₓL = x(x² - a)``, ``∂²ₓL = 3x² - a``: for ``a < 0`` one minimum at 0;
  for ``a > 0`` the saddle 0 and the minima ``±√a``: a supercritical pitchfork at ``a = 0``.
- ``x³/3 - b x`` (``UNFOLDING`` at ``a = 0``): ``∂ₓL = x² - b``, ``∂²ₓL = 2x``: for ``b > 0``
  the minimum ``√b`` and the saddle ``-√b``, for ``b < 0`` no critical point: a fold at ``b = 0``.
- ``x³/3 - a x²/2`` (``UNFOLDING`` at ``b = 0``): ``∂ₓL = x(x - a)``, ``∂²ₓL = 2x - a``:
  ``x = 0`` is a minimum for ``a < 0`` and a saddle for ``a > 0``, ``x = a`` the reverse:
  transcritical at ``a = 0``.

(The fold and the transcritical sweeps share one loss, the transcritical's unfolding, with its
hyperparameters in one order, so that the default suite compiles one set of programs for all
three.)
- The canonical model on ``e = 0``: ``∂²ₑL = 2Φ'(0)(1 + 2w|w|)`` and ``Φ'(0) = π0 π1 (p + q - 1)``
  changes sign at ``p + q = 1``, so at ``p = 0.3`` the two halves of the line (``w ≷ -1/√2``)
  trade kinds at ``q = 0.7``: exactly ``q = 7/10``, on the curve ``q = 1 - p`` (``π0 π1 > 0``
  in the open unit square, so ``p + q - 1`` is the only factor that vanishes).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp

import gradflow
from gradflow.systems.markov.reduced import canonical_model

PITCHFORK = "x**4/4 - a*x**2/2 + y**2/2"
UNFOLDING = "x**3/3 - a*x**2/2 - b*x + y**2/2"


def one_d(loss: str, count: int, axis: str = "a", **held: float) -> gradflow.Sweep:
    """A sweep of ``loss`` over ``count`` values of ``axis`` in [-1, 1], small basin grids; the
    hyperparameters in the order of their names, whichever is swept (one compiled loss)."""
    model = gradflow.loss_model(loss, None, sorted([axis, *held]))
    axes = {axis: np.linspace(-1, 1, count)}
    return gradflow.sweep(
        model, axes, region=gradflow.Region.of(model, grid=5), values=held, progress=False
    )


@pytest.fixture(scope="module")
def pitchfork() -> gradflow.Sweep:
    return one_d(PITCHFORK, 4)


def by_name(result: gradflow.Sweep) -> dict[str, gradflow.Branch]:
    return {b.name: b for b in result.branches}


def values_of(result: gradflow.Sweep, branch: gradflow.Branch, axis: str = "a") -> np.ndarray:
    return np.array([result.axes[axis][c] for c in branch.cells])


def test_pitchfork_at_a_0_with_minima_at_plus_minus_root_a(pitchfork) -> None:
    (found,) = pitchfork.bifurcations
    assert found.type == "pitchfork" and found.criticality == "supercritical"
    assert abs(found.at["a"]) <= 1e-6
    np.testing.assert_allclose(found.point, [0, 0], atol=1e-3)
    assert found.exact == {"a": "0", "x": "0", "y": "0"}
    branches = by_name(pitchfork)
    assert set(branches) == {"x = 0, y = 0", "x = sqrt(a), y = 0", "x = -sqrt(a), y = 0"}
    centre = branches["x = 0, y = 0"]
    a = values_of(pitchfork, centre)
    assert len(a) == 4
    assert [gradflow.stability(k) for k in centre.kinds] == [
        "min" if v < 0 else "saddle" for v in a
    ]
    for name, sign in (("x = sqrt(a), y = 0", 1), ("x = -sqrt(a), y = 0", -1)):
        side = branches[name]
        a = values_of(pitchfork, side)
        assert np.all(a > 0) and len(a) == 2
        np.testing.assert_allclose(side.points[:, 0], sign * np.sqrt(a), atol=1e-9)
        assert {gradflow.stability(k) for k in side.kinds} == {"min"}


def test_the_pitchfork_minima_are_followed_as_two_attractors_with_the_half_planes_basins(
    pitchfork,
) -> None:
    """``ẋ = -x(x² - a)`` and ``ẏ = -y``: for ``a > 0`` the half-plane ``x > 0`` flows to ``√a``,
    ``x < 0`` to ``-√a`` and the line ``x = 0`` to the saddle; for ``a < 0`` all to 0."""
    xs = np.linspace(pitchfork.box[0], pitchfork.box[1], pitchfork.grid)
    a = np.asarray(pitchfork.axes["a"])
    tracks = {t.set: t for t in pitchfork.attractor_tracks}
    assert len(pitchfork.attractor_tracks) == 3
    for name, side in (("x = sqrt(a), y = 0", xs > 0), ("x = -sqrt(a), y = 0", xs < 0)):
        track = tracks[name]
        assert np.array_equal(track.ids >= 0, a > 0)
        np.testing.assert_allclose(track.fractions[a > 0], np.mean(side))
    centre = tracks["x = 0, y = 0"]
    assert np.all(centre.ids >= 0)
    np.testing.assert_allclose(centre.fractions, np.where(a < 0, 1.0, np.mean(xs == 0)))


@pytest.mark.parametrize(
    "sign, criticality, side",
    [(1.0, "supercritical", ("min", "none")), (-1.0, "subcritical", ("none", "saddle"))],
    ids=["branches-below", "subcritical"],
)
def test_a_pitchfork_whose_branches_exist_on_either_side(sign, criticality, side) -> None:
    """``s x⁴/4 + a x²/2 + y²/2``, ``∂ₓL = x(s x² + a)``, ``∂²ₓL = 3s x² + a``: the centre 0
    is a saddle for ``a < 0`` and a minimum for ``a > 0``.  With ``s = 1`` the branches
    ``x = ±√(-a)`` exist below ``a = 0`` with ``∂²ₓL = -2a > 0``, minima beside the saddle: a
    supercritical pitchfork met from the side of the branches (over ``a = -1, -1/3, 1/3, 1``
    they end, min → none).  With ``s = -1`` the branches ``x = ±√a`` exist above it with
    ``∂²ₓL = -2a < 0``, saddles beside the minimum: subcritical (none → saddle)."""
    result = one_d("s*x**4/4 + a*x**2/2 + y**2/2", 4, s=sign)
    (found,) = result.bifurcations
    assert found.type == "pitchfork" and found.criticality == criticality
    assert abs(found.at["a"]) <= 1e-6
    np.testing.assert_allclose(found.point, [0, 0], atol=1e-3)
    assert sorted(found.changes) == sorted([("saddle", "min"), side, side])


def test_the_weight_decayed_linear_network_has_its_pitchfork_at_wd_1() -> None:
    """``(1 - ab)²/2 + wd(a² + b²)/2``: ``∂ₐL = -(1 - ab)b + wd·a``, ``∂ᵦL = -(1 - ab)a + wd·b``.
    Besides the origin, ``a = b`` with ``1 - a² = wd``: minima ``±(√(1 - wd), √(1 - wd))``
    for ``wd < 1`` (``a = -b`` gives ``a(1 + a² + wd) = 0``, the origin only).  The origin's
    Hessian [[wd, -1], [-1, wd]] has eigenvalues wd ± 1: a saddle below wd = 1, a minimum above.
    The minima merge into it at wd = 1: a supercritical pitchfork there (over wd = 0.5, 0.833,
    1.167, 1.5), the branches at ±√(1 - wd) on the diagonal."""
    model = gradflow.loss_model("(1 - a*b)**2/2 + wd*(a**2 + b**2)/2", ("a", "b"), ["wd"])
    result = gradflow.sweep(
        model,
        {"wd": np.linspace(0.5, 1.5, 4)},
        region=gradflow.Region.of(model, grid=5),
        progress=False,
    )
    (found,) = result.bifurcations
    assert found.type == "pitchfork" and found.criticality == "supercritical"
    assert found.at["wd"] == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_allclose(found.point, [0, 0], atol=1e-3)
    sides = [b for b in result.branches if not np.allclose(b.points, 0, atol=1e-9)]
    assert len(sides) == 2
    for branch in sides:
        wd = np.array([result.axes["wd"][c] for c in branch.cells])
        np.testing.assert_allclose(wd, [0.5, 0.5 + 1 / 3])
        np.testing.assert_allclose(np.abs(branch.points), np.sqrt(1 - wd)[:, None] * [1, 1])
        assert branch.points[0, 0] * branch.points[0, 1] > 0


def test_fold_at_b_0_also_when_a_grid_value_falls_on_it() -> None:
    result = one_d(UNFOLDING, 5, "b", a=0.0)
    (found,) = result.bifurcations
    assert found.type == "fold"
    assert abs(found.at["b"]) <= 1e-6 and found.at["a"] == 0
    assert found.exact == {"b": "0", "x": "0", "y": "0"}
    np.testing.assert_allclose(found.point, [0, 0], atol=1e-3)
    for branch in (b for b in result.branches if len(b.cells) > 1):
        b = values_of(result, branch, "b")
        assert np.all(b > 0) and len(b) == 2
        x = branch.points[:, 0]
        sign = np.sign(x[0])
        np.testing.assert_allclose(x, sign * np.sqrt(b), atol=1e-9)
        assert {gradflow.stability(k) for k in branch.kinds} == {"min" if sign > 0 else "saddle"}
    assert sum(len(b.cells) > 1 for b in result.branches) == 2


def test_transcritical_branches_keep_their_identity_through_the_crossing() -> None:
    result = one_d(UNFOLDING, 4, "a", b=0.0)
    (found,) = result.bifurcations
    assert found.type == "transcritical"
    assert abs(found.at["a"]) <= 1e-6
    assert found.exact == {"a": "0", "x": "0", "y": "0"}
    assert sorted(found.changes) == [("min", "saddle"), ("saddle", "min")]
    assert len(result.branches) == 2
    for branch in result.branches:
        a = values_of(result, branch)
        assert len(a) == 4
        x = branch.points[:, 0]
        on_diagonal = bool(np.allclose(x, a, atol=1e-9))
        assert on_diagonal or np.allclose(x, 0, atol=1e-9)
        below, above = ("saddle", "min") if on_diagonal else ("min", "saddle")
        assert [gradflow.stability(k) for k in branch.kinds] == [
            below if v < 0 else above for v in a
        ]
    assert {bool(np.allclose(b.points[:, 0], 0)) for b in result.branches} == {True, False}


def test_transcritical_also_when_a_grid_value_falls_on_it() -> None:
    """With 5 values, ``a = 0`` is a cell: there the branches ``x = 0`` and ``x = a`` meet in
    the degenerate saddle ``(0, 0)`` (``∂²ₓL = 2x - a = 0``), and the exchange of stability is
    one transcritical point at that cell, not a change of kind on either side of it."""
    result = one_d(UNFOLDING, 5, "a", b=0.0)
    (found,) = result.bifurcations
    assert found.type == "transcritical"
    assert found.at["a"] == 0
    assert sorted(found.changes) == [("min", "saddle"), ("saddle", "min")]


@pytest.mark.parametrize("q", [(0.2, 0.7, 0.9), (0.6, 0.8)], ids=["on-a-cell", "between"])
def test_canonical_halves_of_e_0_trade_kinds_at_q_0_7(q) -> None:
    result = gradflow.sweep(
        canonical_model(),
        {"q": q},
        region=gradflow.Region.of(canonical_model(), grid=5),
        values={"p": 0.3},
        progress=False,
    )
    crossings = [b for b in result.bifurcations if b.set == "e = 0"]
    assert len(crossings) == 1
    (found,) = crossings
    assert found.type == "degenerate crossing"
    assert abs(found.at["q"] - 0.7) <= 1e-6 and found.at["p"] == 0.3
    assert sorted(found.changes) == [("max", "min"), ("min", "max")]
    assert all(abs(b.at["p"] + b.at["q"] - 1) <= 1e-6 for b in result.bifurcations)
    assert found.exact == {"q": "7/10"} and found.curve == "q = 1 - p"


def test_a_line_ending_on_p_plus_q_1_has_its_crossing_and_no_fold() -> None:
    """On ``p + q = 1`` the saddle ``(0, -1/√2)`` is a point of the line ``w = -1/√2`` of
    global minima, not an isolated point: a line of cells that starts there sees it appear just
    beyond its first cell, as one inside the line sees it missing at one cell.  No pair of
    points is born there: the only bifurcation is the crossing of ``e = 0`` at ``p = 1 - q``."""
    result = gradflow.sweep(
        canonical_model(),
        {"p": (0.1, 0.3)},
        region=gradflow.Region.of(canonical_model(), grid=5),
        values={"q": 0.9},
        progress=False,
    )
    (found,) = result.bifurcations
    assert found.type == "degenerate crossing" and found.set == "e = 0"
    assert found.exact == {"p": "1/10"} and found.curve == "p = 1 - q"


def test_a_line_of_critical_points_changes_kind_where_its_curvature_vanishes_exactly() -> None:
    """``(a - b) x² (1 + y²)``: ``∇L = 0`` on the line ``x = 0``, whose transverse curvature
    ``∂²ₓL = 2(a - b)(1 + y²)`` has the sign of ``a - b`` all along it: a line of maxima for
    ``a < b``, of minima for ``a > b``, changing kind exactly at ``a = b``."""
    result = one_d("(a - b)*x**2*(1 + y**2)", 4, b=0.25)
    (found,) = result.bifurcations
    assert found.type == "degenerate crossing" and found.set == "x = 0"
    assert found.changes == (("max", "min"),)
    assert abs(found.at["a"] - 0.25) <= 1e-6
    assert found.exact == {"a": "1/4"} and found.curve == "a = b"


def test_the_2d_sweep_locates_p_plus_q_1_on_every_row_and_column_that_crosses_it() -> None:
    values = (0.15, 0.45, 0.75)
    result = gradflow.sweep(
        canonical_model(),
        {"p": values, "q": values},
        region=gradflow.Region.of(canonical_model(), grid=5),
        progress=False,
    )
    crossings = [b for b in result.bifurcations if b.set == "e = 0"]
    assert all(abs(b.at["p"] + b.at["q"] - 1) <= 1e-6 for b in result.bifurcations)
    rows = sorted(b.at["p"] for b in crossings if b.axis == "q")
    columns = sorted(b.at["q"] for b in crossings if b.axis == "p")
    assert rows == [0.45, 0.75] and columns == [0.45, 0.75]
    for b in crossings:
        other = "p" if b.axis == "q" else "q"
        assert b.curve == f"{b.axis} = 1 - {other}"
        assert sp.Rational(b.exact[b.axis]) == 1 - sp.Rational(str(b.at[other]))
    text = result.text()
    assert "bifurcations: 4, 1 distinct" in text
    (line,) = [line for line in text.split("\n") if "degenerate crossing" in line]
    assert "of e = 0 on the curve " in line and "between 4 pairs of neighbouring cells" in line


def test_sweep_json_and_text_list_branches_and_bifurcations(cli) -> None:
    args = ["sweep", "--loss", PITCHFORK, "--hyper", "a=-1:1:4", "--grid", "5"]
    run = cli(*args, "--json")
    assert run.code == 0
    record = json.loads(run.out)
    (found,) = record["bifurcations"]
    assert found["type"] == "pitchfork" and set(found) >= {"type", "at", "point", "exact"}
    assert found["criticality"] == "supercritical"
    assert abs(found["at"]["a"]) <= 1e-6 and found["exact"]["a"] == "0"
    names = {b["name"] for b in record["branches"]}
    assert names == {"x = 0, y = 0", "x = sqrt(a), y = 0", "x = -sqrt(a), y = 0"}
    run = cli(*args, "--out", "text.npz")
    assert run.code == 0
    assert "bifurcations: 1" in run.out and "supercritical pitchfork at a = " in run.out
