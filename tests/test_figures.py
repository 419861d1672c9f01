"""Every registered figure computes and draws at a small size without a warning, and its layout
holds: no panel squeezed (each axes at least a quarter of the figure wide), no legend off the
canvas or over another panel, no two tick labels on top of each other nor an axis label on its
tick labels, every title on the canvas, panel letters once each and row by row.

The figures that train a network are marked ``slow`` (compiling their training step dominates);
the basin-map figures run in the default suite.
"""

from __future__ import annotations

import dataclasses
import importlib
import itertools
import json
import pkgutil
import re
import types
import warnings

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PathCollection
from matplotlib.legend import Legend

import gradflow.systems
from gradflow import GradflowError
from gradflow.systems.figures import render, save
from gradflow.systems.markov import figure_phase_diagram as phase

FIGURES: dict[str, types.ModuleType] = {
    module.NAME: module
    for module in (
        importlib.import_module(info.name)
        for info in pkgutil.walk_packages(gradflow.systems.__path__, "gradflow.systems.")
        if info.name.rpartition(".")[2] == "figure"
        or info.name.rpartition(".")[2].startswith("figure_")
    )
}
"""Every figure module of the systems (``figure`` or ``figure_<name>``), by name."""
SMALL = {
    "local-to-global-fig1": {"grid": 9},
    "local-to-global-phase-diagram": {"cells": 2, "grid": 5},
    "local-to-global-fate-map": {"grid": 3, "basin_grid": 9, "length": 3},
    "canonical-attention": {"grid": 5, "directions": 4},
    "bifurcation-diagram": {"cells": 5, "grid": 5},
    "local-to-global-training": {"steps": 20, "seeds": 3, "length": 16},
    "local-to-global-overlay": {"steps": 20, "seeds": 1, "grid": 9},
    "local-to-global-rank-one": {"steps": 20, "seeds": 2, "length": 16},
    "induction-heads": {
        "T": 20,
        "transformer_steps": 10,
        "minimal_steps": 10,
        "shares": (0.0, 1.0),
        "seeds": 1,
        "grid": 5,
    },
    "shallow-ntk": {"widths": (16, 32), "steps": 5, "seeds": 1},
    "two-mixture": {"m": 8, "t_max": 50.0, "records": 20, "omegas": (1e-2, 1e-1)},
}
"""A small configuration of every registered figure."""
FATE_SMALL = {
    "induction-heads": {
        "T": 12,
        "shares": (0.0, 1.0),
        "scales": (0.02, 0.1),
        "transformer_steps": 12,
        "minimal_steps": 12,
        "eval_n": 16,
        "evaluations": 4,
    },
    "shallow-ntk": {"n_samples": (2, 4), "widths": (1, 4), "seeds": 2, "steps": 20},
    "two-mixture": {
        "ks": (2, 3),
        "omegas": (0.1, 0.3),
        "widths": (4, 8),
        "particles": 16,
        "t_max": 200.0,
        "records": 20,
    },
}
"""A small map of each system whose fate picture is its own (``gradflow fate --model NAME``
writes it beside the map); the canonical map's picture is a registered figure."""
DEFAULT_SUITE = {
    *("local-to-global-fig1", "local-to-global-phase-diagram", "bifurcation-diagram"),
}
"""The figures cheap enough for the default suite (no network to train)."""


def _canvas_bounds(fig):
    return fig.bbox.x0 - 1, fig.bbox.y0 - 1, fig.bbox.x1 + 1, fig.bbox.y1 + 1


def _inside(box, bounds) -> bool:
    x0, y0, x1, y1 = bounds
    return box.x0 >= x0 and box.y0 >= y0 and box.x1 <= x1 and box.y1 <= y1


def _overlap(a, b) -> bool:
    """Boxes that share more than a pixel each way."""
    return min(a.x1, b.x1) - max(a.x0, b.x0) > 1 and min(a.y1, b.y1) - max(a.y0, b.y0) > 1


def _shown_labels(ax, axis: str) -> list:
    """The tick labels inside the view limits, with text."""
    locations = ax.get_xticks() if axis == "x" else ax.get_yticks()
    labels = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    lo, hi = sorted(ax.get_xlim() if axis == "x" else ax.get_ylim())
    return [t for loc, t in zip(locations, labels) if lo <= loc <= hi and t.get_text()]


def _markers_under(ax, box, fig) -> bool:
    """Whether a scatter marker of ``ax`` (its square of side ``√s`` points) overlaps ``box``."""
    for points in ax.collections:
        if not isinstance(points, PathCollection) or not len(points.get_offsets()):
            continue
        offsets = points.get_offsets()
        centres = points.get_offset_transform().transform(offsets)
        half = np.sqrt(np.max(points.get_sizes())) / 2 * fig.dpi / 72
        for x, y in centres:
            marker = types.SimpleNamespace(x0=x - half, x1=x + half, y0=y - half, y1=y + half)
            if _overlap(marker, box):
                return True
    return False


def _reading_order(panels) -> list:
    """``panels`` row by row (top row first), each row left to right: a panel is in the row of
    the first panel whose height its vertical centre lies within."""
    rows: list[list] = []
    for ax in sorted(panels, key=lambda ax: -ax.bbox.y1):
        centre = (ax.bbox.y0 + ax.bbox.y1) / 2
        row = next((r for r in rows if r[0].bbox.y0 <= centre <= r[0].bbox.y1), None)
        if row is None:
            rows.append([ax])
        else:
            row.append(ax)
    return [ax for row in rows for ax in sorted(row, key=lambda ax: ax.bbox.x0)]


def letter_problems(panels) -> list[str]:
    """Panel letters (a title starting ``(a)``, ``(b1)``, …) that repeat or do not run row by
    row in alphabetical order."""
    letters = [
        match.group(1)
        for ax in _reading_order(panels)
        if (match := re.match(r"\((\w+)\)", ax.get_title()))
    ]
    problems = []
    if len(set(letters)) < len(letters):
        problems.append(f"panel letters repeat: {letters}")
    elif letters != sorted(letters):
        problems.append(f"panel letters do not run row by row: {letters}")
    return problems


def layout_problems(fig) -> list[str]:
    """What is wrong with a drawn figure's layout, one sentence per problem."""
    renderer = fig.canvas.get_renderer()  # the Agg canvas the figure was drawn on
    bounds = _canvas_bounds(fig)
    panels = [ax for ax in fig.get_axes() if ax.get_visible() and ax.get_label() != "<colorbar>"]
    problems = []
    for ax in panels:
        share = ax.bbox.width / fig.bbox.width
        if share < 0.25:
            problems.append(f"axes {ax.get_title()!r} is {share:.0%} of the figure wide")
        if ax.name != "3d":
            for axis in "xy":
                boxes = [t.get_window_extent(renderer) for t in _shown_labels(ax, axis)]
                if any(_overlap(a, b) for a, b in itertools.combinations(boxes, 2)):
                    problems.append(f"{axis} tick labels of {ax.get_title()!r} overlap")
                label = getattr(ax, f"{axis}axis").label
                if label.get_text() and any(
                    _overlap(label.get_window_extent(renderer), b) for b in boxes
                ):
                    problems.append(f"{axis} label of {ax.get_title()!r} lies over its ticks")
        if ax.title.get_text() and not _inside(ax.title.get_window_extent(renderer), bounds):
            problems.append(f"title {ax.title.get_text()!r} is cut off")
        if ax.title.get_text() and _markers_under(ax, ax.title.get_window_extent(renderer), fig):
            problems.append(f"title {ax.title.get_text()!r} lies over markers")
    for legend in fig.findobj(Legend):
        box = legend.get_window_extent(renderer)
        first = legend.get_texts()[0].get_text() if legend.get_texts() else ""
        if not _inside(box, bounds):
            problems.append(f"legend starting {first!r} runs off the canvas")
        for ax in panels:
            if ax is not legend.axes and _overlap(box, ax.bbox):
                problems.append(f"legend starting {first!r} lies over {ax.get_title()!r}")
    problems += letter_problems(panels)
    for text in fig.findobj(lambda a: a is getattr(fig, "_suptitle", None)):
        if not _inside(text.get_window_extent(renderer), bounds):
            problems.append(f"suptitle {text.get_text()!r} is cut off")
    return problems


def test_every_figure_is_offered_by_the_command_line_and_has_a_small_configuration(cli):
    code, out, _ = cli("figures", "--help")
    assert code == 0 and all(name in out for name in FIGURES)
    assert set(SMALL) == set(FIGURES)


@pytest.fixture(scope="module")
def drawn():
    """Compute and draw one figure at its small size, once per test module: ``(data, fig,
    warnings)``."""
    done = {}

    def make(name: str):
        if name not in done:
            module = FIGURES[name]
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                data = module.compute(module.Config(**SMALL[name]))
                fig = render(module, data)
                FigureCanvasAgg(fig).draw()  # constrained layout runs, and warns, when drawn
            done[name] = (data, fig, [str(w.message) for w in caught])
        return done[name]

    return make


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=() if n in DEFAULT_SUITE else pytest.mark.slow) for n in FIGURES],
)
def test_figure_draws_without_warning_and_its_panels_and_legends_stay_apart(name, drawn):
    _, fig, caught = drawn(name)
    assert caught == []
    assert layout_problems(fig) == []


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FATE_SMALL))
def test_each_systems_fate_picture_draws_without_warning_and_keeps_its_layout(name):
    """The picture ``gradflow fate --model NAME`` writes (:meth:`FateResult.figure`), from a
    small map."""
    from gradflow.systems.fate import config_type, run_fate

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig = run_fate(name, config_type(name)(**FATE_SMALL[name])).figure()
        FigureCanvasAgg(fig).draw()
    assert [str(w.message) for w in caught] == []
    assert layout_problems(fig) == []


def test_a_fate_maps_own_picture_keeps_its_layout(hand_made_fate):
    """The fate map's picture (:meth:`FateMap.figure`), drawn from outcomes given by hand."""
    fates = ["undecided", "global", "kink", "local"]
    fate = hand_made_fate(fates, {"euclidean": ["local"] * 4, "induced": ["global"] * 4})
    fig = fate.figure()
    FigureCanvasAgg(fig).draw()
    assert layout_problems(fig) == []


def test_a_fate_map_with_noise_draws_one_seed_per_panel_and_says_which(hand_made_fate):
    """Runs at σ = 0 and two seeds of σ = 0.01: one panel per σ, the noisy one titled with the
    seed it draws and the number of seeds its agreement is over; the layout holds."""
    one = hand_made_fate(["global", "local", "local", "global"], {"induced": ["global"] * 4})
    one = dataclasses.replace(one, reduced={**one.reduced, "euclidean": one.reduced["induced"]})
    arrays = ("fates", "times", "losses", "steps", "descent", "sliding", "projected")
    fate = dataclasses.replace(
        one,
        runs=((0.0, 0), (0.01, 0), (0.01, 1)),
        **{name: np.concatenate([getattr(one, name)] * 3) for name in arrays},
        off_start=np.concatenate([one.off_start] * 3),
        off_end=np.concatenate([one.off_end] * 3),
    )
    fig = fate.figure()
    FigureCanvasAgg(fig).draw()
    assert layout_problems(fig) == []
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == [
        "σ = 0\nagreement: 50 % induced, 50 % Euclidean",
        "σ = 0.01, seed 0 drawn\nagreement over 2 seeds: 50 % induced, 50 % Euclidean",
    ]


def test_layout_check_finds_a_squeezed_panel_and_a_legend_off_the_canvas():
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 3))  # no layout engine: the legends stay where they are put
    axes = fig.subplots(1, 5)
    for ax in axes[:2]:
        ax.plot([0, 1], [0, 1], label="a line")
    axes[0].legend(loc="center left", bbox_to_anchor=(0.9, 0.5))  # over axes[1]
    axes[1].legend(loc="lower left", bbox_to_anchor=(0.0, 1.5))  # above the canvas
    FigureCanvasAgg(fig).draw()
    problems = layout_problems(fig)
    assert any("of the figure wide" in p for p in problems)
    assert any("runs off the canvas" in p for p in problems)
    assert any("lies over" in p for p in problems)


def test_phase_diagram_draws_a_saved_sweep_without_recomputing(drawn, tmp_path):
    data, _, _ = drawn("local-to-global-phase-diagram")
    save(phase, data, tmp_path)
    npz = tmp_path / f"{phase.NAME}.npz"
    again = phase.compute(phase.Config(sweep=str(npz), grid=2))
    for kind in ("global_min", "local_min"):
        np.testing.assert_array_equal(again.share(kind), data.share(kind))
    assert again.sweep_record["grid"] == SMALL[phase.NAME]["grid"]
    # p + q = 1 is the i.i.d. chain: the unigram solution is optimal, H(π) - H = 0
    np.testing.assert_allclose([again.gap[0, 1], again.gap[1, 0]], 0.0, atol=1e-12)
    assert again.gap[0, 0] > 0 and again.gap[1, 1] > 0
    record = json.loads(npz.with_suffix(".json").read_text())
    record["axes"] = {"p": record["axes"]["p"]}
    npz.with_suffix(".json").write_text(json.dumps(record))
    with pytest.raises(GradflowError, match="over p and q"):
        phase.compute(phase.Config(sweep=str(npz)))


def test_a_slice_says_what_it_shows_and_a_loss_is_titled_by_itself():
    """On the slice z = 0.5 of (x² - 1)² + y² + z², the portrait's title names the loss and
    the fixed value, its streamlines are labelled a projection, and the basin map's picture
    names the slice too; left out, z is fixed at 0 and the title says so."""
    import gradflow

    bound = gradflow.loss_model("(x**2 - 1)**2 + y**2 + z**2", ["x", "y", "z"]).bind()
    picture = gradflow.portrait(
        bound, region=gradflow.Region.of(bound, grid=3, fixed={"z": 0.5}), show_basins=False
    )
    title = "L = (x**2 - 1)**2 + y**2 + z**2, z = 0.5: gradient flow in the (x, y) plane"
    assert picture.title() == title
    (legend,) = picture.figure().findobj(Legend)
    assert "streamlines of −∇L projected on the slice" in [t.get_text() for t in legend.texts]
    assert (
        ", z = 0: "
        in gradflow.portrait(
            bound, region=gradflow.Region.of(bound, grid=3), show_basins=False
        ).title()
    )
    basin_map = gradflow.basins(
        bound, region=gradflow.Region.of(bound, grid=3, fixed={"z": 0.5}), progress=False
    )
    (ax,) = basin_map.figure().get_axes()
    assert ax.get_title() == "L = (x**2 - 1)**2 + y**2 + z**2, z = 0.5: basins in the (x, y) plane"


@pytest.mark.slow
def test_every_attractor_has_a_tint_of_its_own_and_its_whole_point_in_the_legend():
    """``(x² - 1)² + (y³ - y)² + (z - 1)²`` has six global minima (±1, {-1, 0, 1}, 1) and the
    saddles (0, {-1, 0, 1}, 1) between them; on the slice z = 0.5 every start flows (in all
    three coordinates) to one with z = 1.  Each reached attractor's patch in the legend has a
    colour of its own (no two within 0.03 in RGB), and the legend names the whole point, z = 1
    included."""
    import gradflow

    loss = "(x**2 - 1)**2 + (y**3 - y)**2 + (z - 1)**2"
    bound = gradflow.loss_model(loss, ["x", "y", "z"]).bind()
    basin_map = gradflow.basins(
        bound,
        region=gradflow.Region.of(bound, grid=7, box=(-1.6, 1.6, -1.6, 1.6), fixed={"z": 0.5}),
        progress=False,
    )
    (legend,) = basin_map.figure().findobj(Legend)
    texts = [t.get_text() for t in legend.texts]
    minima = [t for t in texts if "global min" in t]
    assert len(minima) == 6
    for x, y in itertools.product((-1, 1), (-1, 0, 1)):
        assert sum(f"at (x, y, z) = ({x}, {y}, 1)" in t for t in minima) == 1, (x, y)
    colors = np.array([h.get_facecolor()[:3] for h in legend.legend_handles])
    gaps = [np.abs(a - b).max() for a, b in itertools.combinations(colors, 2)]
    assert len(colors) == len(texts) and min(gaps) > 0.03


def test_train_picture_shows_the_losses_against_the_references_and_the_projected_path():
    """``gradflow train``'s picture of a hand-made two-seed record: two panels apart, the
    reference lines at H(π) and the entropy rate of p = 0.5, q = 0.8 (worked out from π = (q, p)
    / (p + q) and the binary entropies), each seed's path in (w, e) from its first to its last
    evaluation."""
    from gradflow.systems.markov.training import TrainConfig, TrainResult, references

    def h(x: float) -> float:
        return -x * np.log(x) - (1 - x) * np.log(1 - x)

    unigram, rate = h(0.8 / 1.3), (0.8 * h(0.5) + 0.5 * h(0.8)) / 1.3
    coords = np.zeros((2, 3, 4))
    coords[:, :, 0] = [[0.1, 0.2, 0.3], [0.0, -0.1, -0.2]]  # e
    coords[:, :, 1] = [[-0.5, -1.0, -1.5], [0.5, 0.2, 0.1]]  # w
    result = TrainResult(
        config=TrainConfig(p=0.5, q=0.8, steps=10, seeds=2, eval_every=5),
        train_loss=np.linspace(0.70, 0.64, 10)[None, :].repeat(2, axis=0),
        eval_steps=np.array([0, 5, 10]),
        test_loss=np.array([[0.69, 0.66, 0.63], [0.69, 0.67, 0.65]]),
        test_se=np.full((2, 3), 1e-3),
        coords=coords,
        diagnostics={},
        nan_step=None,
        references=references(0.5, 0.8),
    )
    fig = result.figure()
    FigureCanvasAgg(fig).draw()
    assert layout_problems(fig) == []
    loss_ax, path_ax = fig.get_axes()
    assert (loss_ax.get_xlabel(), loss_ax.get_ylabel()) == ("step", "loss (nats)")
    dashed = [line for line in loss_ax.get_lines() if line.get_linestyle() in ("--", ":")]
    levels = sorted(line.get_ydata()[0] for line in dashed)
    np.testing.assert_allclose(levels, [rate, unigram], rtol=1e-9)
    paths = [line for line in path_ax.get_lines() if line.get_label().startswith("seed")]
    assert len(paths) == 2
    np.testing.assert_array_equal(paths[0].get_xdata(), coords[0, :, 1])
    np.testing.assert_array_equal(paths[0].get_ydata(), coords[0, :, 0])


@pytest.mark.slow
def test_shallow_ntk_help_names_the_panel_its_option_sets(drawn):
    """``--curves`` of ``gradflow figures shallow-ntk`` picks the (init, scaling) of the panel of
    loss curves; its help names that panel's letter."""
    import dataclasses

    _, fig, _ = drawn("shallow-ntk")
    (curves,) = [ax for ax in fig.get_axes() if "linearized flow" in ax.get_title()]
    letter = curves.get_title().split()[0]
    help_text = next(
        f.metadata["help"]
        for f in dataclasses.fields(FIGURES["shallow-ntk"].Config)
        if f.name == "curves"
    )
    assert f"panel {letter}" in help_text


def test_the_training_figure_says_where_each_seed_ends() -> None:
    """At p = 0.5, q = 0.8: H(π) = h(0.5/1.3) = 0.666278, entropy rate 0.619015 (gap 0.0473).
    A run ending 0.0003 above H(π) is on the unigram plateau; one that falls below H(π) − gap/2
    at its 7th evaluation (step 600) and ends 0.0005 above the entropy rate has escaped."""
    from types import SimpleNamespace

    from gradflow.systems.markov.figure_training import outcome

    unigram, rate = 0.666278, 0.619015
    steps = np.arange(0, 1100, 100)
    stuck = np.full(11, unigram + 0.0003)
    escaped = np.concatenate([np.full(6, unigram + 0.001), np.linspace(0.63, rate + 0.0005, 5)])
    run = SimpleNamespace(
        references={"unigram_loss": unigram, "entropy_rate": rate},
        test_loss=np.stack([stuck, escaped]),
        test_se=np.full((2, 11), 4e-4),
        eval_steps=steps,
    )
    assert outcome(run, 0) == ("unigram", "ends at H(π) +0.0003")
    assert outcome(run, 1) == (
        "entropy rate",
        "ends at the entropy rate +0.0005, left H(π) by step 600",
    )


def _colour_bars(fig) -> list:
    """The colour bars' axes of a drawn figure."""
    return [ax for ax in fig.get_axes() if ax.get_label() == "<colorbar>"]


def _bar_label(bar) -> str:
    return bar.get_xlabel() or bar.get_ylabel()


def test_layout_check_finds_panel_letters_repeated_or_out_of_reading_order():
    """Panels (a)(c)(d) over (b)(e)(f) are out of order; (a)(b)(c) over (a)(b)(c) repeat;
    (a)(b)(c) over (d)(e)(f) pass."""
    from matplotlib.figure import Figure

    for titles, problem in (
        ("acdbef", "row by row"),
        ("abcabc", "repeat"),
        ("abcdef", None),
    ):
        fig = Figure(figsize=(9, 6))
        for ax, letter in zip(fig.subplots(2, 3).ravel(), titles):
            ax.set_title(f"({letter}) panel")
        found = letter_problems(fig.get_axes())
        assert (found == []) if problem is None else (problem in " ".join(found)), found


def test_a_portraits_legend_lists_only_the_critical_sets_in_its_view():
    """``(x² - 1)² + y²`` has the saddle (0, 0) and the minima (±1, 0).  Drawn on the box
    x ∈ [0.5, 2], y ∈ [-1, 1], the search (widened by half the box each side, x ∈ [-0.25,
    2.75]) finds the saddle, but it lies outside the view: the legend names the minimum (1, 0)
    and no saddle."""
    import gradflow

    bound = gradflow.loss_model("(x**2 - 1)**2 + y**2").bind()
    region = gradflow.Region.of(bound, grid=3, box=(0.5, 2.0, -1.0, 1.0))
    picture = gradflow.portrait(bound, region=region, show_basins=False)
    assert {str(s.kind) for s in picture.critical} == {"global_min", "saddle"}
    (legend,) = picture.figure().findobj(Legend)
    texts = [t.get_text() for t in legend.texts]
    assert any(t.startswith("global minima: x = 1, y = 0") for t in texts), texts
    assert not any("saddle" in t for t in texts), texts


def test_a_plane_fate_maps_edge_markers_are_drawn_whole_inside_padded_limits():
    """A hand-made 2 × 2 plane fate map on w ∈ {-1, 1}, e ∈ {0.5, 1}: the limits lie half a
    cell beyond the grid (w ∈ [-2, 2], e ∈ [0.25, 1.25]), no marker is clipped, the legend
    names the two outcomes drawn and the ring (one start disagrees), and the layout holds."""
    from gradflow.systems.plane_fate import EVIDENCE, ModelFateMap
    from gradflow.systems.plane_fate_config import ModelFateConfig

    zeros = np.zeros((1, 2, 2))
    same = np.array([["#0", "#0"], ["#0", "#0"]])
    fate = ModelFateMap(
        config=ModelFateConfig(model="canonical-bias", hyper=("p=0.5", "q=0.8"), grid=2),
        params=("e", "w", "b"),
        plane=("w", "e"),
        xs=np.array([-1.0, 1.0]),
        ys=np.array([0.5, 1.0]),
        runs=((0.0, 0),),
        full=np.array([[["#0", "#1"], ["#0", "#0"]]]),
        status=zeros.astype(int),
        times=zeros,
        losses=zeros,
        projected=np.zeros((1, 2, 2, 3)),
        off_start=zeros,
        off_end=zeros,
        reduced={"induced": same, "euclidean": same},
        attractors=(),
        evidence={k: np.full((1, 2, 2), np.nan) for k in EVIDENCE},
    )
    fig = fate.figure()
    FigureCanvasAgg(fig).draw()
    assert layout_problems(fig) == []
    (ax,) = fig.axes
    assert ax.get_xlim() == (-2.0, 2.0) and ax.get_ylim() == (0.25, 1.25)
    assert ax.collections and not any(c.get_clip_on() for c in ax.collections)
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.texts] == ["#0", "#1", "mismatch (induced metric)"]


def test_fig1_tells_level_sets_from_streamlines_and_labels_the_energy_scale(drawn):
    """In each flow panel of Fig. 1 the level sets of E are coloured by their level (a colour
    map, with a colour bar naming E and its unit) and the streamlines are dark grey: every
    level-set colour differs from the streamlines' by more than 0.3 in some RGB channel."""
    from matplotlib.collections import LineCollection
    from matplotlib.colors import to_rgb
    from matplotlib.contour import ContourSet

    _, fig, _ = drawn("local-to-global-fig1")
    flows = [ax for ax in fig.get_axes() if "flow and energy levels" in ax.get_title()]
    bars = [_bar_label(ax) for ax in _colour_bars(fig)]
    assert len(flows) == 2 and bars == ["conserved E (dimensionless)"] * 2
    for ax in flows:
        (levels,) = [c for c in ax.collections if isinstance(c, ContourSet)]
        (streams,) = [
            c for c in ax.collections if type(c) is LineCollection and len(c.get_segments())
        ]
        dark = np.array(to_rgb(streams.get_color()[0]))
        assert dark.max() < 0.3
        colours = levels.to_rgba(levels.levels)[:, :3]
        assert len({tuple(c) for c in colours}) > 2
        assert np.abs(colours - dark).max(axis=1).min() > 0.3


def test_a_phase_panels_curves_stay_inside_its_limits_and_clear_of_its_legend():
    """Distances like the transformer's in the induction-heads figure's panel (a1): the one to
    uniform rises to its largest value, 0.22 nats, at the last step, in the top right corner
    where a legend would go.  Every curve lies inside the y limits and no point of any curve
    under the legend."""
    from matplotlib.figure import Figure

    from gradflow.systems.induction_heads.experiment import draw_phases
    from gradflow.systems.induction_heads.train import History

    steps = np.linspace(0, 1200, 41)
    rise = steps / 1200
    distances = np.stack([0.22 * rise, 0.13 - 0.1 * rise, 0.21 * (1 - rise) + 0.02], axis=1)
    history = History(steps, steps * 0, steps * 0, distances, distances, {})
    fig = Figure(figsize=(5, 3.6), layout="constrained")
    ax = fig.add_subplot()
    draw_phases(ax, history, legend=True)
    FigureCanvasAgg(fig).draw()
    box = ax.get_legend().get_window_extent()
    bottom, top = ax.get_ylim()
    for line in ax.get_lines():
        y = line.get_ydata()
        assert bottom <= y.min() and y.max() < top
        x0, y0 = ax.transData.transform(np.column_stack([line.get_xdata(), y])).T
        inside = (box.x0 <= x0) & (x0 <= box.x1) & (box.y0 <= y0) & (y0 <= box.y1)
        assert not inside.any(), line.get_label()


def test_a_fate_maps_legend_lists_only_what_its_panels_draw(hand_made_fate):
    """Four starts all reaching the global minimum, as predicted: the legend names the global
    shade and the global marker, and neither the local shade nor the ring of a disagreement,
    which are not drawn."""
    fate = hand_made_fate(["global"] * 4, {"induced": ["global"] * 4, "euclidean": ["global"] * 4})
    (legend,) = fate.figure().legends
    assert [t.get_text() for t in legend.texts] == [
        "reduced model from the cell's start: global",
        "full model: global",
    ]
