"""Objects read well: short reprs that name what matters, pictures and tables for notebooks."""

from __future__ import annotations

import re

import numpy as np
import sympy as sp

import gradflow

x, y = sp.symbols("x y", real=True)
WELL = gradflow.ReducedModel(
    "double well", (x, y), (x**2 - 1) ** 2 + y**2, bounds={"x": (-2, 2), "y": (-2, 2)}
)
PNG = b"\x89PNG"


def test_every_object_prints_short_and_names_what_matters() -> None:
    m = WELL.bind()
    sets = gradflow.critical_sets(m)
    path = gradflow.flow(m, [0.3, 1.5], critical=sets)
    bm = gradflow.basins(m, region=gradflow.Region.of(m, grid=9), progress=False)
    picture = gradflow.portrait(m, region=gradflow.Region.of(m, grid=9), progress=False)
    texts = {
        "critical sets": repr(sets),
        "critical set": repr(sets[0]),
        "trajectory": repr(path),
        "basin map": repr(bm),
        "attractor": repr(bm.attractors[0]),
        "portrait": repr(picture),
    }
    for name, text in texts.items():
        assert len(text) < 800 and all(len(line) <= 100 for line in text.split("\n")), name
    assert "sample (x, y)" in texts["critical sets"] and "global_min" in texts["critical sets"]
    assert (
        "reached global_min (attractor #1)" in texts["trajectory"]
        and "(x, y)" in texts["trajectory"]
    )
    assert "point (x, y)" in texts["basin map"] and "measure zero" in texts["basin map"]
    assert texts["attractor"].startswith("Attractor(#0 global_min")
    assert "double well" in texts["portrait"] and "3 critical sets" in texts["portrait"]
    assert str(path.status) == "converged" and str(gradflow.Outcome.NON_SMOOTH) == "non_smooth"


def test_notebook_displays_are_pictures_and_tables() -> None:
    m = WELL.bind()
    sets = gradflow.critical_sets(m)
    assert (
        sets._repr_html_().startswith("<table>") and "<th>sample (x, y)</th>" in sets._repr_html_()
    )
    assert gradflow.flow(m, [0.3, 1.5])._repr_png_().startswith(PNG)
    assert (
        gradflow.basins(m, region=gradflow.Region.of(m, grid=5), progress=False)
        ._repr_png_()
        .startswith(PNG)
    )


def test_titles_and_units_come_from_the_model() -> None:
    """No hyperparameters: no dangling comma; not a cross-entropy: no nats."""
    picture = gradflow.portrait(
        WELL.bind(), region=gradflow.Region.of(WELL.bind(), grid=5), show_basins=False
    )
    assert picture.title() == "double well: gradient flow in the (x, y) plane"
    assert "nats" not in repr(gradflow.critical_sets(WELL.bind()))
    from gradflow.systems import markov

    canonical = markov.canonical(0.7, 0.6)
    assert canonical.title == "canonical, p = 0.7, q = 0.6"
    assert "L (nats)" in repr(gradflow.critical_sets(canonical))


def test_a_user_model_puts_its_first_parameter_on_the_horizontal_axis() -> None:
    assert WELL.plane == ("x", "y") and gradflow.basins(
        WELL.bind(), region=gradflow.Region.of(WELL.bind(), grid=3), progress=False
    ).plane == ("x", "y")


def test_sample_points_lie_in_the_drawn_box_and_agree_between_commands() -> None:
    """Γ*'s sample is its point nearest the centre of the box; critical and portrait (which
    searches a box twice as wide, sampled 801 times) print the same one."""
    from gradflow.systems import markov

    m = markov.canonical(0.7, 0.6)
    plain = {s.name + s.kind: s.sample for s in gradflow.critical_sets(m)}
    drawn = {
        s.name + s.kind: s.sample
        for s in gradflow.portrait(
            m, region=gradflow.Region.of(m, grid=5), show_basins=False
        ).shown()
    }
    assert plain.keys() == drawn.keys()
    for key in plain:
        np.testing.assert_allclose(plain[key], drawn[key], atol=1e-9)
        assert np.all(np.abs(plain[key]) <= 3)


def test_a_table_too_wide_cuts_long_cells_never_its_headers() -> None:
    """Four columns of 40 characters in 100: body cells are shortened (ending in '…') to fit,
    each header stays whole; headers alone wider than the table are all kept whole."""
    from gradflow import format_table

    header = ["a", "a header of twenty-one", "c", "d"]
    head, _, row = format_table(header, [["x" * 40] * 4], width=100).split("\n")
    assert "a header of twenty-one" in re.split(r"\s{2,}", head)
    assert "…" in row and len(head) <= 100 and len(row) <= 100
    wide = [f"{i}" * 30 for i in range(4)]
    head, _, row = format_table(wide, [["y"] * 4], width=100).split("\n")
    assert head.split() == wide and "…" not in row


def test_every_printed_point_and_box_names_its_coordinates() -> None:
    """The canonical model's points are (e, w), its plane (w, e): neither order is left to be
    guessed — a box is printed range by range, a point with its names, and a trajectory's picture
    is drawn in the plane of the portraits, w horizontal."""
    from gradflow.systems import markov

    m = markov.canonical(0.7, 0.6)
    bm = gradflow.basins(
        m, region=gradflow.Region.of(m, grid=5, box=(-2, 1, 0.5, 1.5)), progress=False
    )
    first = repr(bm).split("\n")[0]
    assert first.endswith("of the (w, e) plane: w ∈ [-2, 1], e ∈ [0.5, 1.5]")
    assert "point (e, w)" in repr(bm)
    path = gradflow.flow(m, [0.5, -0.5])
    assert path.plane == ("w", "e") and "(e, w)" in repr(path)
    axes = path.figure().axes[0]
    assert (axes.get_xlabel(), axes.get_ylabel()) == ("$w$", "$e$")
    np.testing.assert_allclose(axes.lines[0].get_xdata()[0], -0.5)
    try:
        gradflow.Region.of(m, 5, (-3, 3, 0))
    except gradflow.GradflowError as error:
        assert "expected four numbers (wmin, wmax, emin, emax)" in str(error)
    else:
        raise AssertionError("a box of three numbers was accepted")
