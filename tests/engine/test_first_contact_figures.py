"""A flow's picture is titled with what flowed, where it started and what it reached.

``L = x² + y²`` from ``(1, 2)`` flows straight into its minimum at the origin.
"""

from __future__ import annotations

import csv
import dataclasses

import numpy as np
import pytest

import gradflow as gf


def test_the_flow_picture_names_the_model_the_start_and_the_end():
    model = gf.loss_model("x**2 + y**2").bind()
    path = gf.flow(model, np.array([1.0, 2.0]))
    titled = dataclasses.replace(path, title="bowl, induced metric")
    title = titled.figure()._suptitle.get_text()
    assert title.startswith("bowl, induced metric: flow of (x, y) from (1, 2)\n")
    assert f"reached {path.reached}" in title
    (_, loss_ax) = titled.figure().axes[:2]
    # the time axis is linear only up to the power of ten below the first step, whose ticks then
    # run a decade apart: no bend of the curve at t = 1
    first = path.ts[path.ts > 0][0]
    assert first < 1
    assert loss_ax.get_xscale() == "symlog"
    linthresh = loss_ax.xaxis.get_transform().linthresh
    assert linthresh <= first < 10 * linthresh and f"{linthresh:.0e}".startswith("1e")


def test_a_basin_map_is_written_flat_beside_its_npz(cli):
    # the double well (x² − 1)² + y² on x, y ∈ {-3, 0, 3}: x < 0 ends at (-1, 0), x > 0 at
    # (1, 0), and x = 0 (invariant: ∂L/∂x = 4x(x² − 1) vanishes there) at the saddle (0, 0)
    run = cli("basins", "--loss", "(x**2 - 1)**2 + y**2", "--grid", "3")
    assert run.code == 0, run
    with open(cli.folder / "basins.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0][:5] == ["x", "y", "label", "attractor", "time"]
    assert len(rows) == 1 + 9
    with np.load(cli.folder / "basins.npz") as data:
        ids = data["attractor_ids"].reshape(-1)
    for row, id in zip(rows[1:], ids):
        x = float(row[0])
        assert row[2] == ("saddle" if x == 0 else "global_min")
        assert row[3] == str(id)
    assert len({row[3] for row in rows[1:] if float(row[0]) < 0}) == 1


def test_fig1_takes_other_parameters_and_a_box():
    from gradflow.systems.markov import figure_fig1

    config = figure_fig1.Config(grid=5, p=(0.3, 0.8), q=(0.3, 0.9), box=(-2, 2, -2, 2))
    assert config.cases == ((0.3, 0.3), (0.8, 0.9))
    assert figure_fig1.Config().cases == figure_fig1.CASES
    for bad, named in (
        ({"p": (0.3,)}, "two values"),
        ({"q": (0.3, 1.0)}, "outside the valid range"),
    ):
        with pytest.raises(gf.GradflowError, match=named):
            figure_fig1.Config(**bad)
    with pytest.raises(gf.GradflowError, match="must be below"):
        figure_fig1.Config(box=(2, -2, 0, 1))


@pytest.mark.slow
def test_fig1_draws_the_cases_and_box_it_is_given():
    from gradflow.systems.markov import figure_fig1

    config = figure_fig1.Config(grid=5, p=(0.3, 0.8), q=(0.3, 0.9), box=(-2, 2, -2, 2))
    data = figure_fig1.compute(config)
    assert data.metadata()["hyperparameters"] == [{"p": 0.3, "q": 0.3}, {"p": 0.8, "q": 0.9}]
    assert all(tuple(p.box) == (-2.0, 2.0, -2.0, 2.0) for p in data.portraits)
