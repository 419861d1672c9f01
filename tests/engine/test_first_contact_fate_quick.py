"""``gradflow fate --quick`` with a size option given says which wins, in one line.

``quick_config`` keeps every option the user gave and applies the quick settings to the rest,
so ``--grid 500 --quick`` is a 500 × 500 map: the command says so before it starts.
"""

from __future__ import annotations

import argparse

import pytest

import gradflow as gf
from gradflow.cli.fate import _note_quick_kept, interrupted
from gradflow.systems.fate import quick_config
from gradflow.systems.markov.config import FateConfig


def test_a_grid_given_with_quick_is_named_as_winning(capsys):
    given = FateConfig(p=0.5, q=0.8, grid=500)
    quick = quick_config(given)
    assert quick.grid == 500 and quick.seeds == FateConfig.QUICK["seeds"]
    _note_quick_kept(quick)
    err = capsys.readouterr().err.strip().split("\n")
    assert len(err) == 1 and "--quick: --grid 500 as given" in err[0]


def test_quick_alone_says_nothing(capsys):
    given = FateConfig(p=0.5, q=0.8)
    _note_quick_kept(quick_config(given))
    assert capsys.readouterr().err == ""


def test_a_fate_map_beyond_memory_is_refused_in_one_line(cli):
    # 10¹⁰ grid points × 7 runs × 27 float64 kept per run alone are 15 TB
    cli.assert_rejected(["fate", "--grid", "100000"], "--grid 100000 --sigma 0.0,0.01,0.1")


def test_the_quick_map_is_sized_with_its_quick_settings(cli):
    # one run per point with --quick: 10¹⁰ runs of 27 float64 still cannot fit, named as it runs
    cli.assert_rejected(["fate", "--grid", "100000", "--quick"], "--sigma 0.0 --seeds 1")


def test_the_memory_bound_counts_the_runs():
    # 100 points × 4 runs (σ = 0 once, σ = 0.1 three draws): 27 float64 in 3 copies and two
    # comparisons of 6 KiB per run; the (e, w) start and two predictions per point
    config = FateConfig(p=0.5, q=0.8, grid=10, sigma=(0.0, 0.1), seeds=3)
    assert config.memory_bytes() == 400 * (3 * 8 * 27 + 2 * 6 * 1024) + 100 * 8 * 4


def test_a_figure_into_a_file_path_is_refused(cli):
    (cli.folder / "afile").write_text("")
    run = cli("figures", "local-to-global-fig1", "--out", "afile/figs", "--grid", "3")
    assert run.code == 2 and "'afile' is not an existing folder" in run.err
    assert [p.name for p in cli.folder.iterdir()] == ["afile"]


@pytest.mark.slow
def test_a_missing_figure_folder_is_created(cli):
    run = cli("figures", "local-to-global-fig1", "--out", "docs/figures", "--grid", "3")
    assert run.code == 0, run
    assert sorted(p.suffix for p in (cli.folder / "docs" / "figures").iterdir()) == [
        ".json",
        ".npz",
        ".png",
    ]


def _square(cell: float) -> dict[str, float]:
    return {"y": cell * cell}


def test_a_resumed_grid_of_cells_says_how_many_are_done(tmp_path, capsys):
    folder = tmp_path / "map.runs"
    manifest = {"what": "squares"}
    first = gf.run_cells(_square, [1.0, 2.0, 3.0], checkpoint=folder, manifest=manifest)
    assert [float(c["y"]) for c in first] == [1.0, 4.0, 9.0]
    capsys.readouterr()
    (folder / "cell00001.npz").unlink()
    again = gf.run_cells(_square, [1.0, 2.0, 3.0], checkpoint=folder, manifest=manifest)
    assert [float(c["y"]) for c in again] == [1.0, 4.0, 9.0]
    assert "resuming: 2 of 3 cells done" in capsys.readouterr().err


def test_an_interrupted_fate_map_names_what_it_kept(tmp_path):
    runs = tmp_path / "fate.runs"
    runs.mkdir()
    for k in range(15):
        (runs / f"cell{k:05d}.npz").write_bytes(b"")
    args = argparse.Namespace(out=tmp_path / "fate.npz")
    assert interrupted(args) == (
        f"no output written; kept 15 finished cells in {runs}/; the same command resumes"
    )
    empty = argparse.Namespace(out=tmp_path / "other.npz")
    assert interrupted(empty) == "no output written; no cell had finished"
