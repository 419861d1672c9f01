"""Saved runs drawn on a portrait (``portrait --overlay RUN.npz``, ``portrait(overlays=…)``).

The overlay's points are known by construction: a file naming its columns ``(y, x)`` holds the
plane points ``(x, y)`` with its columns swapped, so the drawn line must be the file's array with
its columns reversed, starting at its first row and ending at its last.  Every refused file is
one line naming the file and what is wrong, status 2 on the command line, nothing written.
"""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.colors import to_hex

import gradflow as gf

LOSS = "x**2 + y**2"
RUN = np.array([[1.0, 2.0], [0.5, 1.0], [0.2, 0.1], [0.0, 0.0]])
"""A run in the file's column order (y, x): from (x, y) = (2, 1) to the minimum (0, 0)."""


@pytest.fixture(scope="module")
def picture() -> gf.Portrait:
    """A portrait of x² + y² without basins (shared: the critical sets and streamlines)."""
    model = gf.loss_model(LOSS).bind()
    return gf.portrait(model, region=gf.Region.of(model, grid=5), show_basins=False)


def save(path, coords, names=("y", "x")):
    np.savez(path, coords=np.asarray(coords), coordinate_names=np.array(names))
    return path


def overlay_lines(fig):
    """``(color, xy)`` of every line an overlay drew (zorder 6: the overlays' own)."""
    (ax,) = fig.axes
    return [(to_hex(line.get_color()), line.get_xydata()) for line in ax.lines if line.zorder >= 6]


def test_a_hand_made_run_is_drawn_at_its_points(picture, tmp_path):
    drawn = picture.with_overlays(save(tmp_path / "run.npz", RUN))
    fig = drawn.figure()
    lines = overlay_lines(fig)
    path = RUN[:, ::-1]
    color = gf.Overlay("", path, *_first_style()).color
    assert [c for c, _ in lines] == [color] * 3
    np.testing.assert_array_equal(lines[0][1], path)  # the line
    np.testing.assert_array_equal(lines[1][1], [[2.0, 1.0]])  # the start's dot
    np.testing.assert_array_equal(lines[2][1], [[0.0, 0.0]])  # the end's cross
    (cased,) = [line for line in fig.axes[0].lines if line.get_path_effects()]
    np.testing.assert_array_equal(cased.get_xydata(), path)  # the line, cased in white
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "run.npz (• start, × end)" in labels
    assert picture.overlays == []  # the portrait given is unchanged
    np.testing.assert_array_equal(drawn.arrays()["overlays"], path)
    assert drawn.metadata()["overlays"] == ["run.npz (• start, × end)"]
    assert "run.npz (• start, × end): 4 points from (x, y) = (2, 1) to (0, 0)" in drawn.text()


def _first_style() -> tuple[str, str]:
    from gradflow._portrait.overlay import OVERLAY_STYLES

    return OVERLAY_STYLES[0]


def test_several_runs_and_files_are_told_apart(picture, tmp_path):
    runs = save(tmp_path / "runs.npz", [RUN, RUN / 2])
    other = save(tmp_path / "other.npz", [[3.0, -1.0], [0.0, 0.0]], names=("x", "y"))
    drawn = picture.with_overlays(runs, other)
    assert [o.label.split(" (")[0] for o in drawn.overlays] == [
        "runs.npz, run 0",
        "runs.npz, run 1",
        "other.npz",
    ]
    assert len({(o.color, o.linestyle) for o in drawn.overlays}) == 3
    np.testing.assert_array_equal(drawn.overlays[1].path, RUN[:, ::-1] / 2)
    np.testing.assert_array_equal(drawn.overlays[2].path, [[3.0, -1.0], [0.0, 0.0]])


def test_many_runs_share_one_legend_entry(tmp_path):
    overlays = gf.read_overlays(save(tmp_path / "many.npz", [RUN] * 12), ("x", "y"))
    assert len(overlays) == 12 and len({o.label for o in overlays}) == 1
    assert overlays[0].label.startswith("many.npz: 12 runs")


def test_the_portrait_function_reads_a_file_before_any_work(tmp_path):
    model = gf.loss_model(LOSS).bind()
    with pytest.raises(gf.GradflowError, match="no 'coordinate_names'"):
        np.savez(tmp_path / "bare.npz", coords=RUN)
        gf.portrait(model, overlays=[tmp_path / "bare.npz"])


@pytest.mark.parametrize(
    ("make", "named"),
    [
        (lambda d: d / "absent.npz", "absent.npz does not exist"),
        (lambda d: d, "is a folder"),
        (
            lambda d: (d / "t.npz").write_text("not an archive") and d / "t.npz",
            "t.npz is not an NPZ archive (as np.savez writes)",
        ),
        (
            lambda d: (d / "z.npz").write_bytes(b"PK\x03\x04 cut short") and d / "z.npz",
            "z.npz is not an NPZ archive",
        ),
        (lambda d: np.save(d / "a.npy", RUN) or d / "a.npy", "a single NumPy array"),
        (
            lambda d: np.savez(d / "k.npz", path=RUN) or d / "k.npz",
            "has no 'coords' or 'coordinate_names' (it holds path)",
        ),
        (lambda d: save(d / "s.npz", RUN[:1]), "has shape (1, 1, 2)"),
        (lambda d: save(d / "s.npz", RUN[None, None]), "has shape (1, 1, 4, 2)"),
        (lambda d: save(d / "s.npz", RUN, names=("y", "x", "z")), "it must be (T, 3)"),
        (lambda d: save(d / "s.npz", RUN.astype(str)), "must be numbers"),
        (lambda d: save(d / "s.npz", RUN, names=("x", "x")), "must be distinct strings"),
        (
            lambda d: save(d / "s.npz", RUN, names=("e", "w")),
            "named (e, w); the portrait's plane is (x, y), and x, y is not among them",
        ),
        (
            lambda d: save(d / "s.npz", [RUN, np.where(np.arange(4)[:, None] == 2, np.nan, RUN)]),
            "run 1, row 2 of 'coords' is not finite in (x, y) (1 such rows)",
        ),
    ],
    ids=[
        "missing",
        "folder",
        "text",
        "cut zip",
        "npy",
        "key",
        "one-point",
        "4-d",
        "columns",
        "strings",
        "names",
        "plane",
        "nan",
    ],
)
def test_a_bad_file_is_refused_in_one_line(tmp_path, make, named):
    path = make(tmp_path)
    with pytest.raises(gf.GradflowError) as refused:
        gf.read_overlays(path, ("x", "y"))
    assert named in str(refused.value) and "\n" not in str(refused.value)


def test_an_overlay_path_is_checked():
    with pytest.raises(gf.GradflowError, match=r"shape \(n, 2\)"):
        gf.Overlay("a", np.zeros((3, 3)))
    with pytest.raises(gf.GradflowError, match="row 1 of the path is not finite"):
        gf.Overlay("a", [[0.0, 0.0], [np.inf, 1.0]])


def test_the_command_refuses_a_bad_overlay_and_writes_nothing(cli):
    save(cli.folder / "run.npz", RUN, names=("e", "w"))
    run = cli("portrait", "--loss", LOSS, "--no-basins", "--overlay", "run.npz")
    lines = run.err.strip().split("\n")
    assert run.code == 2 and len(lines) == 1 and "the portrait's plane is (x, y)" in lines[0]
    assert sorted(p.name for p in cli.folder.iterdir()) == ["run.npz"]
