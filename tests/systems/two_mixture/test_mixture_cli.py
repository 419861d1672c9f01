"""``gradflow mixture``: bad input is one line, exit status 2, nothing written; a run writes its
NPZ and JSON and reports the stage times it detected."""

from __future__ import annotations

import json

import numpy as np
import pytest

BAD = [
    (["--k", "1"], "K = 1"),
    (["--k", "3", "--d", "5"], "d = 5"),
    (["--m", "0"], "m = 0"),
    (["--omega", "0"], "omega = 0.0"),
    (["--omega", "-0.1"], "omega = -0.1"),
    (["--omega", "nan"], "omega = nan"),
    (["--combine", "product"], "--combine"),
    (["--schedule", "cyclic"], "--schedule"),
    (["--method", "adam"], "--method"),
    (["--readout", "max"], "--readout"),
    (["--neurons", "pairs"], "--neurons"),
    (["--bogus"], "unrecognized arguments"),
    (["--m", "two"], "--m"),
    (["--lr", "0.07"], "whole number"),
    (["--schedule", "staged", "--stage-times", "105", "500"], "record grid"),
    (["--out", "run.txt"], ".npz"),
    (["--out", "missing/run.npz"], "does not exist"),
]


@pytest.mark.parametrize(("argv", "named"), BAD)
def test_bad_input_is_one_line_exit_2_nothing_written(argv, named, cli):
    cli.assert_rejected(["mixture", *argv], named)


def _small_run(cli, *extra: str) -> tuple[dict, dict, np.lib.npyio.NpzFile]:
    out = cli.folder / "run.npz"
    argv = [
        "mixture",
        "--k",
        "2",
        "--d",
        "5",
        "--m",
        "4",
        "--omega",
        "0.5",
        "--t-max",
        "20",
        "--lr",
        "0.5",
        "--records",
        "8",
        "--out",
        str(out),
        "--json",
        *extra,
    ]
    run = cli(*argv)
    assert run.code == 0
    printed = json.loads(run.out)
    with np.load(out) as data:
        arrays = dict(data)
    assert out.with_suffix(".png").exists()
    return printed, json.loads(out.with_suffix(".json").read_text()), arrays


def test_reduced_run_writes_npz_and_json_with_the_stage_times(cli):
    printed, meta, data = _small_run(cli, "--reduced", "--schedule", "staged")
    assert printed["kind"] == "reduced" and printed["status"] == "horizon"
    assert meta["stages"] == printed["stages"] and "versions" in meta
    assert data["ts"].tolist() == pytest.approx(np.arange(9) * 2.5)
    assert data["scores"].shape == (9, 2, 4, 4) and data["neurons"].shape == (9, 2, 4, 4)
    assert printed["final"]["loss"] == pytest.approx(float(data["loss"][-1]))
    assert data["loss"][0] == pytest.approx(np.log(2), abs=0.05)
    assert data["loss"][-1] < data["loss"][0]


@pytest.mark.slow
def test_full_run_reports_conservation_drift_and_matches_the_reduced_run(cli):
    full, _, full_data = _small_run(cli)
    reduced, _, reduced_data = _small_run(cli, "--reduced")
    assert full["kind"] == "full" and full["max_conservation_drift"] is not None
    assert np.abs(full_data["scores"] - reduced_data["scores"]).max() < 1e-11
    assert full["stages"] == reduced["stages"]
