"""``gradflow train``, ``compare``, ``bench train`` and the two Local-to-Global figures."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest


def _entropy(x: float) -> float:
    return -x * math.log(x) - (1 - x) * math.log(1 - x)


H_RATE = (0.8 * _entropy(0.5) + 0.5 * _entropy(0.8)) / 1.3
SHORT = [
    "--p",
    "0.5",
    "--q",
    "0.8",
    "--steps",
    "300",
    "--seq-len",
    "32",
    "--d",
    "8",
    "--seeds",
    "3",
]
"""The settings of tests/test_markov_training.py, so that both use one compiled training step."""

BAD = {
    "p out of range": (
        ["train", "--p", "1.5", "--q", "0.8"],
        "p = 1.5 is outside the valid range (0, 1)",
    ),
    "no steps": (["train", "--p", "0.5", "--q", "0.8", "--steps", "0"], "steps = 0"),
    "no seeds": (["train", "--p", "0.5", "--q", "0.8", "--seeds", "0"], "seeds = 0"),
    "bad width": (["train", "--p", "0.5", "--q", "0.8", "--d", "-3"], "width d = -3"),
    "bad length": (["train", "--p", "0.5", "--q", "0.8", "--seq-len", "0"], "N = 0"),
    "bad lr": (["train", "--p", "0.5", "--q", "0.8", "--lr", "inf"], "lr = inf"),
    "bad init": (["train", "--p", "0.5", "--q", "0.8", "--init", "xavier"], "invalid choice"),
    "no folder": (
        ["train", "--p", "0.5", "--q", "0.8", "--out", "missing/t.npz"],
        "does not exist",
    ),
    "not npz": (["train", "--p", "0.5", "--q", "0.8", "--out", "t.csv"], ".npz"),
    "too long to enumerate": (
        ["compare", "--p", "0.5", "--q", "0.8", "--seq-len", "15"],
        "too long for exact enumeration (valid range 1…14): it sums over all 2^N = 32,768 sequences",
    ),
    "compare q": (["compare", "--p", "0.5", "--q", "1"], "q = 1 is outside the valid range (0, 1)"),
    "training figure seeds": (["figures", "local-to-global-training", "--seeds", "0"], "seeds = 0"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_exit_2_nothing_written(case, cli):
    cli.assert_rejected(*BAD[case])


def test_compare_report(cli):
    """Same shapes as tests/test_markov_checks.py (N = 8, d = 6, 20 points, 1200 steps)."""
    argv = ["compare", "--p", "0.5", "--q", "0.8", "--seq-len", "8", "--d", "6", "--steps", "1200"]
    code, out, _ = cli(*argv, "--lr", "0.1", "--json")
    assert code == 0
    report = json.loads(out)
    assert [m["model"] for m in report["models"]] == [
        "canonical",
        "canonical-bias",
        "canonical-attention",
        "canonical-attention-bias",
    ]
    for model in report["models"]:
        assert model["value_error"] <= 1e-9 and model["gradient_error"] <= 1e-7
        assert model["outside_rank_one_family"] <= 1e-12
    assert report["dynamics"]["full_loss"] == pytest.approx(H_RATE, abs=1e-6)
    code, out, _ = cli(*argv, "--lr", "0.1")
    assert code == 0 and "max deviation" in out and "canonical-attention-bias" in out
    assert sorted(p.name for p in cli.folder.iterdir()) == [
        "compare.json",
        "compare.npz",
        "compare.png",
    ]
    with np.load(cli.folder / "compare.npz") as saved:
        assert saved["full"].shape == saved["reduced"].shape == (len(saved["times"]), 4)


@pytest.mark.slow
def test_compare_lists_both_morse_indices_of_each_reduced_set(cli):
    """At p + q < 1 the line e = 0 holds reduced local minima (w < -1/√2, index 0) and saddles
    (w > -1/√2, index 1); the full index is never below the reduced one."""
    argv = ["compare", "--p", "0.2", "--q", "0.3", "--seq-len", "3", "--d", "4", "--points", "1"]
    code, out, _ = cli(*argv, "--steps", "1", "--dynamics-seq-len", "3", "--spectra", "--json")
    assert code == 0
    spectra = {r["set"]: r for r in json.loads(out)["spectra"]}
    assert spectra["e = 0, w = -1.5 (e → 0+)"]["reduced_morse_index"] == 0
    assert spectra["e = 0, w = -0.3 (e → 0+)"]["reduced_morse_index"] == 1
    assert all(r["full_morse_index"] >= r["reduced_morse_index"] for r in spectra.values())


def test_train_stops_at_a_nan_loss_and_keeps_the_steps_before(cli, tmp_path):
    code, out, err = cli("train", *SHORT, "--lr", "1e30", "--out", "run.npz")
    assert code == 1
    assert "not finite at step" in err
    step = int(err.split("not finite at step ")[1].split(";")[0])
    with np.load(tmp_path / "run.npz") as data:
        assert data["train_loss"].shape == (3, step - 1)
        assert np.all(np.isfinite(data["train_loss"]))
    meta = json.loads((tmp_path / "run.json").read_text())
    assert meta["nan_step"] == step and meta["config"]["lr"] == 1e30
    assert (tmp_path / "run.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_train_writes_no_file_when_its_picture_fails(cli, tmp_path, monkeypatch):
    """The picture, the NPZ and the JSON are written together or not at all."""
    from gradflow.systems.markov.training import TrainResult

    def broken(self):
        raise RuntimeError("drawing failed")

    monkeypatch.setattr(TrainResult, "figure", broken)
    with pytest.raises(RuntimeError, match="drawing failed"):
        cli("train", *SHORT, "--lr", "1e30", "--out", "run.npz")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_train_writes_the_record(cli, tmp_path):
    code, out, _ = cli("train", *SHORT, "--init", "paper", "--json")
    assert code == 0
    summary = json.loads(out)
    assert summary["steps_done"] == 300 and summary["nan_step"] is None
    assert np.all(np.abs(np.array(summary["final_test_loss"]) - H_RATE) < 0.01)
    with np.load(tmp_path / "train.npz") as data:
        assert data["coords"].shape[0] == 3
        assert list(data["coordinate_names"]) == ["e", "w", "a", "b"]


@pytest.mark.slow
def test_portrait_of_a_slice_of_the_three_scalar_model(cli, tmp_path):
    argv = [
        "portrait",
        "--model",
        "canonical-attention",
        "--p",
        "0.5",
        "--q",
        "0.8",
        "--fixed",
        "a=0.5",
    ]
    code, out, _ = cli(*argv, "--no-basins", "--out", "slice.png")
    assert code == 0 and "e²(1 + a e²/4)(1 + 2w|w|) = c*" in out
    assert "a e² = -4" not in out  # that curve lives at a < 0 only
    assert (tmp_path / "slice.png").exists() and (tmp_path / "slice.json").exists()
    code, out, _ = cli(*argv[:-1], "a=-0.5", "--no-basins", "--out", "negative.png")
    assert code == 0 and "w = -1/√2, a e² = -4" in out  # meets a = -0.5 at e = ±√8


@pytest.mark.slow
@pytest.mark.parametrize("name", ["local-to-global-training", "local-to-global-overlay"])
def test_figures(name, cli, tmp_path):
    code, _, _ = cli("figures", name, "--steps", "200")
    assert code == 0
    assert {p.name for p in tmp_path.iterdir()} == {f"{name}.png", f"{name}.npz", f"{name}.json"}


@pytest.mark.slow
def test_canonical_attention_figure(cli, tmp_path):
    code, _, _ = cli("figures", "canonical-attention", "--grid", "11", "--directions", "4")
    assert code == 0
    assert (tmp_path / "canonical-attention.png").exists()


@pytest.mark.slow
def test_bench_train(cli):
    argv = ["bench", "train", "--length", "16,32", "--steps", "40", "--chunk", "20"]
    code, out, _ = cli(*argv, "--torch-steps", "20", "--repeats", "2", "--json")
    assert code == 0
    record = json.loads(out)
    assert set(record["lengths"]) == {"16", "32"} and record["exact"]["sequences"] == 4096
    for timing in record["lengths"].values():
        assert 0 < timing["min_steps_per_second"] <= timing["steps_per_second"]
        assert timing["steps_per_second"] <= timing["max_steps_per_second"]
        assert (timing["ratio"] is None) == (not record["torch"])
    growths = record["cost_growth_per_round"]  # 40 steps in chunks of 20: two rounds
    assert len(growths) == 2 and record["cost_growth"] == pytest.approx(sum(growths) / 2)
    assert record["cores"] >= 1
