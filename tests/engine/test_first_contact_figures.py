"""A flow's picture is titled with what flowed, where it started and what it reached.

``L = x² + y²`` from ``(1, 2)`` flows straight into its minimum at the origin.
"""

from __future__ import annotations

import csv
import dataclasses

import numpy as np

import gradflow as gf


def test_the_flow_picture_names_the_model_the_start_and_the_end():
    model = gf.loss_model("x**2 + y**2").bind()
    path = gf.flow(model, np.array([1.0, 2.0]))
    titled = dataclasses.replace(path, title="bowl, induced metric")
    title = titled.figure()._suptitle.get_text()
    assert title.startswith("bowl, induced metric: flow of (x, y) from (1, 2)\n")
    assert f"reached {path.reached}" in title


def test_a_basin_map_is_written_flat_beside_its_npz(cli):
    # the double well (x² − 1)² + y² on x, y ∈ {-3, 0, 3}: x < 0 ends at (-1, 0), x > 0 at
    # (1, 0), and x = 0 (invariant: ∂L/∂x = 4x(x² − 1) vanishes there) at the saddle (0, 0)
    run = cli("basins", "--loss", "(x**2 - 1)**2 + y**2", "--grid", "3")
    assert run.code == 0, run
    with open(cli.folder / "basins.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0][:5] == ["x", "y", "label", "attractor", "time"]
    assert len(rows) == 1 + 9
    data = np.load(cli.folder / "basins.npz")
    ids = data["attractor_ids"].reshape(-1)
    for row, id in zip(rows[1:], ids):
        x = float(row[0])
        assert row[2] == ("saddle" if x == 0 else "global_min")
        assert row[3] == str(id)
    assert len({row[3] for row in rows[1:] if float(row[0]) < 0}) == 1
