"""Sweeps over (p, q): a cell is the single basin map at its values; interrupted sweeps resume
to identical files; two devices give the same labels as one."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import gradflow
from gradflow.systems.markov.reduced import canonical_model

SMALL = ["--p", "0.3,0.7", "--q", "0.2:0.8:2", "--grid", "9"]


def test_a_cell_is_the_basin_map_at_its_values(cli, tmp_path) -> None:
    assert cli("sweep", *SMALL, "--json").code == 0
    record = json.loads((tmp_path / "sweep.json").read_text())
    assert record["axes"] == {"p": [0.3, 0.7], "q": [0.2, 0.8]}
    cell = record["cells"][3]
    assert (cell["p"], cell["q"]) == (0.7, 0.8)
    run = json.loads(cli("basins", "--p", "0.7", "--q", "0.8", "--grid", "9", "--json").out)
    assert cell["fractions"] == run["fractions"]
    assert [a["fraction"] for a in cell["attractors"]] == [a["fraction"] for a in run["attractors"]]
    with np.load(tmp_path / "sweep.npz") as saved, np.load(tmp_path / "basins.npz") as single:
        np.testing.assert_array_equal(saved["attractor_ids"][1, 1], single["attractor_ids"])
        np.testing.assert_array_equal(saved["labels"][1, 1], single["labels"])


def test_an_interrupted_sweep_resumes_to_identical_files(cli, tmp_path, monkeypatch) -> None:
    assert cli("sweep", *SMALL, "--out", "whole.npz").code == 0
    from gradflow._sweep import sweep as _sweep

    computed = []
    cell = _sweep._cell

    def crash_on_the_third(*args, **kwargs):
        if len(computed) == 2:
            raise KeyboardInterrupt
        computed.append(1)
        return cell(*args, **kwargs)

    monkeypatch.setattr(_sweep, "_cell", crash_on_the_third)
    run = cli("sweep", *SMALL, "--out", "parts.npz")
    assert run.code == 130 and not (tmp_path / "parts.npz").exists()
    assert len(list((tmp_path / "parts.cells").glob("cell-*.npz"))) == 2
    monkeypatch.setattr(_sweep, "_cell", cell)
    assert cli("sweep", *SMALL, "--out", "parts.npz").code == 0
    assert not (tmp_path / "parts.cells").exists()
    assert (tmp_path / "parts.npz").read_bytes() == (tmp_path / "whole.npz").read_bytes()
    whole = json.loads((tmp_path / "whole.json").read_text())
    parts = json.loads((tmp_path / "parts.json").read_text())
    assert whole == parts


@pytest.mark.slow
def test_a_sweep_on_two_local_workers_writes_the_files_of_the_serial_run(cli, tmp_path) -> None:
    assert cli("sweep", *SMALL, "--out", "one.npz").code == 0
    run = cli("sweep", *SMALL, "--out", "two.npz", "--workers", "2")
    assert run.code == 0
    assert "local Dask cluster of 2 worker processes; dashboard http" in run.err
    for suffix in (".npz", ".json"):
        one, two = (tmp_path / f"{name}{suffix}" for name in ("one", "two"))
        assert one.read_bytes() == two.read_bytes()


def test_p_plus_q_equal_one_is_where_the_line_e_0_changes_kind() -> None:
    """Across p + q = 1 the sign of Φ'(0) = π0 π1 (p + q - 1) flips: the piece of e = 0 through
    the origin is a line of local minima for p + q > 1, of local maxima for p + q < 1, and every
    critical point is a global minimum on p + q = 1."""
    result = gradflow.sweep(
        canonical_model(),
        {"p": [0.3], "q": [0.2, 0.7, 0.9]},
        region=gradflow.Region.of(canonical_model(), grid=5),
    )
    kinds = [
        {
            s["kind"]
            for s in cell.record["critical_sets"]
            if s["name"] == "e = 0" and s["sample"] == [0.0, 0.0]
        }
        for cell in result.cells
    ]
    assert kinds == [{"local_max"}, {"global_min"}, {"local_min"}]
    moves = {(t["from"], t["to"]) for t in result.transitions() if t["at"] == [0.0, 0.0]}
    assert moves == {("local_max", "global_min"), ("global_min", "local_min")}


@pytest.mark.slow
def test_two_devices_give_the_labels_of_one(tmp_path) -> None:
    code = (
        "import sys, numpy as np, gradflow, jax\n"
        "from gradflow.systems.markov.reduced import canonical_model\n"
        "assert len(jax.devices()) == int(sys.argv[2])\n"
        "s = gradflow.sweep(canonical_model(), {'p': [0.3, 0.7], 'q': [0.6]}, grid=41)\n"
        "np.save(sys.argv[1], s.arrays()['attractor_ids'])\n"
    )
    for devices in (1, 2):
        env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}")
        out = tmp_path / f"ids{devices}.npy"
        subprocess.run([sys.executable, "-c", code, str(out), str(devices)], env=env, check=True)
    np.testing.assert_array_equal(np.load(tmp_path / "ids1.npy"), np.load(tmp_path / "ids2.npy"))
