"""Error bars of basin shares, on the double well whose basins are known exactly.

L = (x² - 1)² + y²: dx/dt = -4x(x² - 1) keeps the sign of x, so x < 0 reaches (-1, 0), x > 0
reaches (1, 0) and the line x = 0 the saddle.  The area share of each well's basin in a box is
the share of the box on its side of x = 0; on a grid, the columns on each side count.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import gradflow

Z = 1.959963984540054
"""The 97.5 % quantile of the standard normal distribution."""


def wilson(k: int, n: int) -> tuple[float, float]:
    """Wilson's score interval at 95 %: (k + z²/2 ± z √(k(n - k)/n + z²/4)) / (n + z²)."""
    centre = k + Z**2 / 2
    half = Z * np.sqrt(k * (n - k) / n + Z**2 / 4)
    return (centre - half) / (n + Z**2), (centre + half) / (n + Z**2)


@pytest.fixture(scope="module")
def well() -> gradflow.BoundModel:
    return gradflow.loss_model("(x**2 - 1)**2 + y**2", params=("x", "y")).bind()


def errors_by_point(bm: gradflow.BasinMap) -> dict[tuple[float, float], gradflow.FractionError]:
    points = {a.id: tuple(np.round(a.point, 9)) for a in bm.attractors}
    return {points[e.id]: e for e in bm.errors()}


def test_on_a_symmetric_box_each_well_is_half_within_its_error_bars(well) -> None:
    """[-2, 2]² at 41 points per axis: 20 columns of 41 points on each side, 820/1681 = 0.4878
    (exact share 1/2), the middle column (41) at the saddle.  Of the 40 × 40 cells, 19 columns
    have all four corners in a well and 20 touch it: the bracket [760, 800]/1600 = [0.475, 0.5]
    holds 1/2, as does Wilson's interval for 820 of 1681.  Every other point: a 21-point grid
    with 10 columns per well, 210/441 = 10/21, so the change is 820/1681 - 10/21 = 0.0116,
    about the fine grid's own error 1/2 - 820/1681 = 0.0122 (the error is proportional to the
    spacing).  The saddle's column: cells [0, 80/1600] (no cell lies in it: measure zero)."""
    bm = gradflow.basins(
        well, region=gradflow.Region.of(well, grid=41, box=(-2, 2, -2, 2)), progress=False
    )
    found = errors_by_point(bm)
    for point in ((-1.0, 0.0), (1.0, 0.0)):
        e = found[point]
        assert (e.count, e.points) == (820, 1681)
        np.testing.assert_allclose(e.wilson, wilson(820, 1681), rtol=1e-12)
        assert e.wilson[0] < 0.5 < e.wilson[1]
        assert e.cells == (760 / 1600, 800 / 1600)
        assert e.coarse == pytest.approx(10 / 21)
        assert e.change == pytest.approx(820 / 1681 - 10 / 21)
    saddle = found[(0.0, 0.0)]
    assert saddle.count == 41 and saddle.cells == (0.0, 80 / 1600)


def test_on_a_lopsided_box_the_shares_are_a_quarter_and_three_quarters(well) -> None:
    """[-1, 3] × [-1, 1] at 41 points per axis (x spacing 0.1): x < 0 holds 10 columns (410
    points, exact area share 1/4), x > 0 holds 30 (1230 points, share 3/4).  Cells: the left
    well has 9 full columns of 40 and touches 10, [360, 400]/1600 = [0.225, 0.25]; the right
    has 29 full and touches 30, [1160, 1200]/1600 = [0.725, 0.75]; each holds its exact share,
    as do the Wilson intervals.  Every other point (x spacing 0.2, 21 points): 5 columns on
    the left (105/441), 15 on the right (315/441)."""
    bm = gradflow.basins(
        well, region=gradflow.Region.of(well, grid=41, box=(-1, 3, -1, 1)), progress=False
    )
    found = errors_by_point(bm)
    for point, count, cells, coarse, exact in (
        ((-1.0, 0.0), 410, (360 / 1600, 400 / 1600), 105 / 441, 0.25),
        ((1.0, 0.0), 1230, (1160 / 1600, 1200 / 1600), 315 / 441, 0.75),
    ):
        e = found[point]
        assert e.count == count and e.cells == pytest.approx(cells)
        assert e.cells[0] <= exact <= e.cells[1]
        assert e.wilson[0] < exact < e.wilson[1]
        np.testing.assert_allclose(e.wilson, wilson(count, 1681), rtol=1e-12)
        assert e.coarse == pytest.approx(coarse)


def test_the_shares_over_nested_grids_and_tolerances(well) -> None:
    """Grids of 11, 21 and 41 points on [-2, 2]² are nested (every 4th and 2nd point of the
    41-point one): each well has (N - 1)/2 columns of N points, a share (N - 1)/(2N) = 5/11,
    10/21, 20/41, whatever the tolerance (the flow keeps the sign of x); the saddle's column
    1/N, whose changes 1/11 - 1/21 and 1/21 - 1/41 are the largest."""
    study = gradflow.basin_convergence(
        well,
        region=gradflow.Region.of(well, box=(-2, 2, -2, 2)),
        grids=(41, 11, 21),
        tolerances=(1e-5, 1e-6),
        progress=False,
    )
    assert study.grids == (11, 21, 41)
    wells = [k for k, a in enumerate(study.attractors) if a.kind == "global_min"]
    assert len(wells) == 2
    expected = np.array([5 / 11, 10 / 21, 20 / 41])
    for k in wells:
        np.testing.assert_allclose(study.shares[:, :, k], [expected, expected])
    saddle = 1 / np.array([11, 21, 41])
    largest = np.maximum(np.abs(np.diff(expected)), np.abs(np.diff(saddle)))
    np.testing.assert_allclose(study.grid_changes(), [largest] * 2, rtol=1e-12)
    np.testing.assert_array_equal(study.tolerance_changes(), 0.0)
    with pytest.raises(gradflow.GradflowError, match="not nested"):
        gradflow.basin_convergence(well, grids=(11, 20))


def test_the_command_line_reports_error_bars_and_the_convergence_table(cli) -> None:
    """[-2, 2]² at 21 points: each well has 10 columns of 21 (210 points), 9 full cell columns
    of 20 and 10 touching, [180, 200]/400; over the nested 11 and 21 grids 5/11 and 10/21."""
    args = ["basins", "--loss", "(x**2 - 1)**2 + y**2", "--box", "-2", "2", "-2", "2"]
    run = cli(*args, "--grid", "21", "--convergence", "11,21", "--tolerances", "1e-6", "--json")
    assert run.code == 0
    record = json.loads(run.out)
    errors = {e["id"]: e for e in record["fraction_errors"]["attractors"]}
    assert "not a random sample" in record["fraction_errors"]["design"]
    wells = [a["id"] for a in record["attractors"] if a["kind"] == "global_min"]
    for i in wells:
        assert errors[i]["count"] == 210 and errors[i]["cells"] == [0.45, 0.5]
        k = [a["id"] for a in record["convergence"]["attractors"]].index(i)
        shares = np.array(record["convergence"]["shares"])
        np.testing.assert_allclose(shares[0, :, k], [5 / 11, 10 / 21])
    run = cli(*args, "--grid", "21", "--out", "b.npz")
    assert "95% Wilson" in run.out and "not a random sample" in " ".join(run.out.split())


@pytest.mark.parametrize(
    "extra, named",
    [
        (["--convergence", "101,150"], "not nested"),
        (["--convergence", "11,x"], "--convergence"),
        (["--convergence", "--tolerances", "0"], "--tolerances"),
    ],
)
def test_bad_convergence_options_are_one_line_errors(cli, extra, named) -> None:
    cli.assert_rejected(["basins", "--loss", "(x**2 - 1)**2 + y**2", *extra], named)
