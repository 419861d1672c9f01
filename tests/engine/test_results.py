"""One result protocol: every result gives its arrays, its metadata, its text and its picture,
and one writer puts them on disk together or not at all."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import gradflow
from gradflow import GradflowError, Result, save_result

x, y = sp.symbols("x y", real=True)
WELL = gradflow.ReducedModel(
    "double well", (x, y), (x**2 - 1) ** 2 + y**2, bounds={"x": (-2, 2), "y": (-2, 2)}
)
"""Minima at (±1, 0), a saddle at the origin."""


@pytest.fixture(scope="module")
def results() -> dict[str, Result]:
    m = WELL.bind()
    picture = gradflow.portrait(m, region=gradflow.Region.of(m, grid=5), progress=False)
    return {
        "critical sets": picture.critical,
        "basin map": picture.basin_map,
        "trajectory": gradflow.flow(m, [0.5, 0.5], critical=picture.basin_map.critical),
        "portrait": picture,
    }


def test_every_result_is_one_and_writes_its_arrays_and_metadata(results, tmp_path) -> None:
    for name, result in results.items():
        assert isinstance(result, Result), name
        out = tmp_path / f"{name.replace(' ', '-')}.npz"
        written = save_result(result, out)
        flat = [".csv"] if name == "basin map" else []  # a basin map is also one row per start
        assert [p.suffix for p in written] == [".png", ".npz", ".json", *flat], name
        with np.load(out) as stored:
            assert set(stored.files) == set(result.arrays()), name
        again = save_result(result, tmp_path / "again.npz")
        assert again[2].read_bytes() == written[2].read_bytes(), name
        assert json.loads(written[2].read_text())["versions"]["gradflow"], name
        assert all(len(line) <= 100 for line in result.text().split("\n")), name


def test_a_png_is_written_byte_for_byte_as_savefig_writes_it(results, tmp_path) -> None:
    """A result's PNG is drawn once instead of savefig's layout pass and pixel pass: the file
    must be the one matplotlib's own ``savefig`` writes at the same dpi."""
    for name, result in results.items():
        ours = save_result(result, tmp_path / "ours.png", dpi=150)[0]
        result.figure().savefig(tmp_path / "theirs.png", format="png", dpi=150)
        assert ours.read_bytes() == (tmp_path / "theirs.png").read_bytes(), name


def test_the_basin_arrays_have_one_set_of_names(results) -> None:
    """The portrait writes its basin map's arrays under the basin map's own names."""
    basin, portrait = results["basin map"].arrays(), results["portrait"].arrays()
    for key, value in basin.items():
        np.testing.assert_array_equal(portrait[key], value)
    assert list(basin["label_names"]) == list(gradflow.LABELS)


def test_a_trajectory_names_the_attractor_it_reached(results) -> None:
    """From (0.5, 0.5) the flow of (x² − 1)² + y² ends at the minimum (1, 0)."""
    reached = results["trajectory"].attractor
    assert reached.kind == "global_min"
    np.testing.assert_allclose(reached.point, [1.0, 0.0], atol=1e-9)
    assert results["trajectory"].metadata()["attractor"]["id"] == reached.id
    assert f"attractor #{reached.id}" in results["trajectory"].text()


def test_a_failing_picture_leaves_no_file(results, tmp_path) -> None:
    class Broken:
        def __getattr__(self, name):
            return getattr(results["basin map"], name)

        def figure(self):
            raise GradflowError("no picture")

    with pytest.raises(GradflowError, match="no picture"):
        save_result(Broken(), tmp_path / "broken.npz")
    assert not list(tmp_path.iterdir())


def test_the_analyses_results_follow_the_protocol() -> None:
    from gradflow.systems.induction_heads.experiment import ICLReport
    from gradflow.systems.markov.compare import CompareReport
    from gradflow.systems.markov.fate import FateMap
    from gradflow.systems.markov.training import TrainResult
    from gradflow.systems.shallow_ntk.sweep import Sweep
    from gradflow.systems.two_mixture.experiment import MixtureReport

    kinds = (ICLReport, FateMap, TrainResult, MixtureReport, Sweep, gradflow.Sweep, CompareReport)
    for cls in kinds:
        assert all(
            callable(getattr(cls, m, None)) for m in ("arrays", "metadata", "text", "figure")
        )


def test_a_basin_maps_labels_are_its_attractors_kinds(results) -> None:
    bm = results["basin map"]
    kinds = {a.id: a.kind for a in bm.attractors}
    outcomes = {"diverged", "not_converged", "non_smooth"}
    for aid, code in zip(bm.attractor_ids.ravel(), bm.labels.ravel()):
        label = str(gradflow.Outcome(code))
        assert label == kinds[aid] if aid >= 0 else label in outcomes
    assert bm.mask("global_min").sum() == round(bm.fractions()["global_min"] * bm.labels.size)


def test_the_critical_sets_picture_shows_every_legend_line(results) -> None:
    """The double well's three critical points (minima at (±1, 0), the saddle at the origin)
    each have a legend line, and the legend lies inside the figure."""
    figure = results["critical sets"].figure()
    figure.canvas.draw()
    (legend,) = figure.legends
    labels = [t.get_text() for t in legend.texts]
    assert labels == [
        "global minima: x = -1, y = 0 (L = 0.0000)",
        "global minima: x = 1, y = 0 (L = 0.0000)",
        "saddle: x = 0, y = 0 (L = 1.0000, Morse index 1)",
    ]
    box = legend.get_window_extent()
    assert box.y0 >= 0 and box.x0 >= 0 and box.x1 <= figure.bbox.x1


@pytest.mark.parametrize(
    "bounds, named",
    [
        ((-3, 3, -3, 3), "the box of a Region"),
        ({"x": 3}, "bounds['x'] = 3: expected (lo, hi)"),
        ([("x", (-1, 1))], "bounds must map parameter names to (lo, hi)"),
    ],
)
def test_search_box_bounds_of_the_wrong_form_are_one_clear_error(bounds, named) -> None:
    landscape = gradflow.loss_model("(x**2 - 1)**2 + y**2").bind()
    with pytest.raises(GradflowError) as error:
        landscape.search_box(bounds)
    assert r"e.g. {'x': (-3, 3), 'y': (-3, 3)}" in str(error.value)
    assert named in str(error.value) and "\n" not in str(error.value)


def test_the_documented_record_of_critical_sets_is_their_metadata() -> None:
    text = (Path(__file__).parents[2] / "docs" / "api.md").read_text()
    assert "CriticalSets" in text and "metadata()" in text
    sets = gradflow.critical_sets(gradflow.loss_model("(x**2 - 1)**2 + y**2").bind())
    record = sets.metadata()
    kinds = sorted((s["kind"], tuple(np.round(s["sample"], 6))) for s in record["critical_sets"])
    assert kinds == [("global_min", (-1, 0)), ("global_min", (1, 0)), ("saddle", (0, 0))]
    assert record["global_min_loss"] == 0


def test_a_sweep_draws_the_share_of_each_kind_over_its_axes() -> None:
    """The pitchfork x⁴/4 − a x²/2 + y²/2 over a = −1, 1 on a 5 × 5 grid of [-3, 3]²: at a = −1
    L ≥ 0 and the origin is the one minimum, global, share 1; at a = 1 the coercive polynomial's
    infimum −1/4 is proven (its leading form x⁴/4 + y²/2 is positive definite), the minima
    (±1, 0) reach it, global, and take 20 of the 25 points, the middle column x = 0 (5/25)
    ends at the saddle.  One axis: one line per kind present, and the bifurcation at a = 0."""
    model = gradflow.loss_model("x**4/4 - a*x**2/2 + y**2/2", ["x", "y"], ["a"])
    result = gradflow.sweep(
        model, {"a": (-1.0, 1.0)}, region=gradflow.Region.of(model, grid=5), progress=False
    )
    (ax,) = result.figure().axes
    lines = {line.get_label(): line for line in ax.lines if not line.get_label().startswith("_")}
    shares = {k: list(v.get_ydata()) for k, v in lines.items() if k != "bifurcation"}
    assert shares == {"global_min": [1.0, 0.8], "saddle": [0.0, 0.2]}
    assert abs(lines["bifurcation"].get_xdata()[0]) < 1e-6 and ax.get_xlabel() == "$a$"
