"""Outputs that cannot be written are refused before any work: one line, exit status 2."""

from __future__ import annotations

import time

import pytest

import gradflow
from gradflow import GradflowError
from gradflow.systems.markov import figure_fig1 as fig1


def _no_work(*args, **kwargs):
    raise AssertionError("the command computed before checking where it writes")


def test_a_figure_into_an_unwritable_folder_is_refused_before_it_computes(
    cli, unwritable, monkeypatch
) -> None:
    monkeypatch.setattr(fig1, "compute", _no_work)
    start = time.perf_counter()
    cli.assert_rejected(["figures", fig1.NAME, "--out", str(unwritable)], "cannot write in")
    assert time.perf_counter() - start < 5.0


def test_a_figure_from_an_unwritable_working_folder_is_refused_before_it_computes(
    cli, unwritable, monkeypatch, capsys
) -> None:
    monkeypatch.setattr(fig1, "compute", _no_work)
    monkeypatch.chdir(unwritable)
    code, _, err = cli("figures", fig1.NAME)
    assert code == 2
    assert len(err.strip().split("\n")) == 1 and "--out '.': cannot write in" in err


@pytest.mark.parametrize(
    "argv, computes",
    [
        (["basins", "--p", "0.7", "--q", "0.6", "--out", "{ro}/b.npz"], "basins"),
        (["portrait", "--p", "0.7", "--q", "0.6", "--out", "{ro}/p.png"], "portrait"),
        (["sweep", "--p", "0.5,0.6", "--q", "0.6", "--out", "{ro}/s.npz"], "sweep"),
    ],
)
def test_model_commands_refuse_an_unwritable_folder_before_any_work(
    argv, computes, cli, unwritable, monkeypatch
) -> None:
    monkeypatch.setattr(gradflow, computes, _no_work)
    argv = [a.format(ro=unwritable) for a in argv]
    cli.assert_rejected(argv, "cannot write in")


def test_python_errors_name_the_argument_not_the_option(unwritable) -> None:
    from gradflow.systems.figures import save

    with pytest.raises(GradflowError, match=r"^folder '.*': cannot write in"):
        save(fig1, None, unwritable)
    with pytest.raises(GradflowError, match=r"^out '.*': folder '.*' does not exist"):
        gradflow.check_output(unwritable / "missing" / "x.npz", (".npz",), "the map")


def test_a_checkpoint_folder_that_cannot_be_written_is_refused_before_the_first_cell(
    unwritable,
) -> None:
    with pytest.raises(GradflowError, match="checkpoint folder .* cannot be written"):
        gradflow.run_cells(_cell, [1, 2], checkpoint=unwritable / "cells", manifest={"a": 1})
    with pytest.raises(GradflowError, match="checkpoint folder .* cannot be written"):
        gradflow.run_cells(_cell, [1, 2], checkpoint=unwritable, manifest={"a": 1})


def _cell(cell: int) -> dict[str, int]:
    raise AssertionError("a cell was computed before the checkpoint folder was checked")


def test_a_sweep_whose_results_cannot_fit_is_refused_before_a_cell_is_bound(
    cli, monkeypatch
) -> None:
    monkeypatch.setattr("gradflow._output.memory.available_memory", lambda: 16 * 2**30)
    monkeypatch.setattr(gradflow, "sweep", _no_work)
    argv = ["sweep", "--p", "0.05:0.95:1000", "--q", "0.05:0.95:1000"]
    cli.assert_rejected(argv, "1000000 cells × 101² = 1.02e+10 flows needs about")


def test_a_sweep_estimated_past_the_limit_needs_allow_long(cli, monkeypatch) -> None:
    """250,000 cells at 0.4 s each (the canonical model's fixed cost per cell) are 28 h, past
    the 30 min limit."""
    monkeypatch.setattr("gradflow._output.memory.available_memory", lambda: 2**40)
    monkeypatch.setattr(gradflow, "sweep", _no_work)
    argv = ["sweep", "--p", "0.05:0.95:500", "--q", "0.05:0.95:500", "--grid", "5"]
    cli.assert_rejected(argv, "would take about 28 h on 2 CPU cores")
    cli.assert_rejected(argv, "past the 30 min a job runs without --allow-long")
    with pytest.raises(AssertionError, match="computed before checking"):
        cli(*argv, "--allow-long")


def test_python_refuses_a_basin_map_beyond_memory_before_allocating_it(monkeypatch) -> None:
    monkeypatch.setattr("gradflow._output.memory.available_memory", lambda: 16 * 2**30)
    landscape = gradflow.loss_model("x**2 + y**2").bind()
    start = time.perf_counter()
    with pytest.raises(GradflowError, match=r"^grid 200000 × 200000 needs about 7\.\d+e\+04 GiB"):
        gradflow.basins(landscape, region=gradflow.Region.of(landscape, grid=200000))
    assert time.perf_counter() - start < 5.0
