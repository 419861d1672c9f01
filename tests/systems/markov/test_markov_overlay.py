"""``gradflow train``'s own record is an overlay file: its projected ``(e, w)`` path draws on the
canonical portrait's ``(w, e)`` plane as it is (the columns named ``e, w, a, b`` picked by name)."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from gradflow.systems.markov.training import TrainConfig, TrainResult

SMALLEST = ["--steps", "2", "--eval-every", "1", "--seeds", "2", "--seq-len", "1", "--d", "1"]
SMALLEST += ["--batch", "1"]
"""The smallest run ``train`` accepts (N = 1, d = 1, batch 1), two seeds, three evaluations."""


def test_the_record_s_arrays_are_an_overlay_file(tmp_path):
    """The keys a :class:`TrainResult` writes are those :func:`gradflow.read_overlays` reads:
    seed s's path at evaluation k is ``(w, e) = (10 s + k, -k)`` (columns e, w, a, b)."""
    seeds, m = 2, 3
    k = np.arange(m, dtype=float)
    coords = np.stack([np.stack([-k, 10 * s + k, k, k], 1) for s in range(seeds)])
    zeros = np.zeros((seeds, m))
    result = TrainResult(
        config=TrainConfig(p=0.5, q=0.8, seeds=seeds),
        train_loss=zeros,
        eval_steps=k,
        test_loss=zeros,
        test_se=zeros,
        coords=coords,
        diagnostics={},
        nan_step=None,
    )
    np.savez(tmp_path / "train.npz", **result.arrays())
    overlays = gf.read_overlays(tmp_path / "train.npz", ("w", "e"))
    for s, overlay in enumerate(overlays):
        np.testing.assert_array_equal(overlay.path, np.stack([10 * s + k, -k], 1))


@pytest.mark.slow
def test_a_training_run_draws_on_the_canonical_portrait(cli):
    """Slow (7–10 s: the transformer compiles): ``train`` at its smallest size, then
    ``portrait --overlay`` of its record."""
    run = cli("train", "--p", "0.5", "--q", "0.8", *SMALLEST, "--out", "train.npz")
    assert run.code == 0, run.err
    with np.load(cli.folder / "train.npz") as record:
        coords, names = record["coords"], list(record["coordinate_names"])
    run = cli("portrait", "--p", "0.5", "--q", "0.8", "--no-basins", "--overlay", "train.npz")
    assert run.code == 0, run.err
    assert "overlay train.npz, run 1 (• start, × end): 3 points" in run.out
    with np.load(cli.folder / "portrait.npz") as drawn:
        paths = drawn["overlays"]
    want = [coords[s][:, [names.index("w"), names.index("e")]] for s in range(2)]
    np.testing.assert_array_equal(paths, np.vstack([want[0], [[np.nan, np.nan]], want[1]]))
