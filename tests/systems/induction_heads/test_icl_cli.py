"""``gradflow icl``: bad input, a tiny run end to end, and the phase bookkeeping."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gradflow.systems.induction_heads.phases import phases


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--k", "1"], "k = 1"),
        (["--T", "1"], "T = 1"),
        (["--prior", "mixture:1.5"], "[0, 1]"),
        (["--prior", "mixture:-0.2"], "[0, 1]"),
        (["--prior", "zipf"], "unknown prior 'zipf'"),
        (["--model", "lstm"], "unknown model 'lstm'"),
        (["--mixing", "cosine"], "unknown positional mixing"),
        (["--seeds", "0"], "--seeds 0"),
        (["--k", "5", "--prior", "doubly-stochastic"], "k = 5"),
        (["--k", "2", "--T", "12", "--eval-every", "2", "--lr", "1e6"], "diverged"),
    ],
)
def test_bad_input_one_line_exit_2_nothing_written(cli, argv, match):
    cli.assert_rejected(["icl", *argv, "--steps", "4", "--out", "run.npz"], match)


def test_tiny_run_json(cli, tmp_path):
    out = tmp_path / "run.npz"
    argv = [
        "icl",
        "--model",
        "minimal",
        "--k",
        "2",
        "--T",
        "12",
        "--steps",
        "6",
        "--eval-every",
        "3",
        "--seeds",
        "2",
        "--json",
        "--out",
        str(out),
    ]
    run = cli(*argv)
    assert run.code == 0
    record = json.loads(run.out)
    assert record["setting"]["model"] == "minimal" and len(record["runs"]) == 2
    assert set(record["runs"][0]["final_distance"]) == {"uniform", "unigram", "bigram"}
    with np.load(out) as data:
        assert data["seed1_steps"].tolist() == [0, 3, 6]
        assert data["seed0_theta"].shape == (3, 2 + 11)
    assert (tmp_path / "run.json").exists() and (tmp_path / "run.png").exists()
    text = cli(*[a for a in argv if a != "--json"][:-1], str(tmp_path / "text.npz")).out
    for r in record["runs"]:
        intervals = r["phases"]["intervals"]
        whole = " → ".join(f"{m} [{a:g}, {b:g}]" for m, a, b in intervals)
        assert f"seed {r['seed']} phases (steps): {whole}\n" in text


def test_phases_bookkeeping():
    steps = np.arange(0, 100, 10)
    # nearest: uniform ×2, unigram ×3, bigram ×1, unigram ×1, bigram ×3
    order = [0, 0, 1, 1, 1, 2, 1, 2, 2, 2]
    distances = np.ones((10, 3))
    distances[np.arange(10), order] = 0.0
    ph = phases(steps, distances)
    assert ph.order == ["uniform", "unigram", "bigram", "unigram", "bigram"]
    assert ph.intervals[1] == ("unigram", 20.0, 40.0)
    assert ph.transition_step == 70.0 and ph.unigram_onset == 20.0 and ph.plateau_length == 50.0
    censored = phases(steps[:5], distances[:5])
    assert (
        censored.censored and censored.plateau_length is None and censored.transition_step is None
    )
    direct = phases(steps[:2], np.array([[0, 1, 1], [1, 1, 0]]))
    assert direct.plateau_length == 0.0 and direct.unigram_onset is None
