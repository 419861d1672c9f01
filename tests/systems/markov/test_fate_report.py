"""What the canonical fate map's report says about its settings: nothing is run."""

from __future__ import annotations

import dataclasses

import pytest


def test_the_noise_step_is_printed_only_where_a_run_has_noise(hand_made_fate) -> None:
    """A map of σ = 0 alone descends nothing by gradient descent, so it names no step η; add
    σ = 0.01 and the first line names η = 0.02 (the default step) and t = 150 (half of the
    budget t = 300)."""
    fate = hand_made_fate(["global"] * 4, {"euclidean": ["global"] * 4, "induced": ["global"] * 4})
    assert "η" not in fate.detail_lines()[0]
    noisy = dataclasses.replace(fate, config=dataclasses.replace(fate.config, sigma=(0.0, 0.01)))
    assert "noise gradient descent at η = 0.02 to t = 150 first" in noisy.detail_lines()[0]


def test_the_csv_has_a_row_per_comparison_with_its_runs_values(hand_made_fate) -> None:
    """Run (e0 = 0.5, w0 = 1) ends local where the Euclidean map predicts global and the induced
    one local: a mismatch in the Euclidean rows whose reason is the metric; run (1, 1) ends
    global where the induced map predicts local: the same in the induced rows."""
    fate = hand_made_fate(
        ["global", "local", "global", "global"],
        {"euclidean": ["global"] * 4, "induced": ["global", "local", "global", "local"]},
        steps=[10, 20, 30, 40],
        rise=[float("nan"), 0.5, 0.0, 0.0],
    )
    header, rows = fate.csv_table()
    assert header[:9] == [
        "e0",
        "w0",
        "sigma",
        "seed",
        "group",
        "reduced",
        "full",
        "agree",
        "reason",
    ]
    assert header[-1] == "detail" and {"times", "steps", "rise"} <= set(header)
    assert len(rows) == 8  # two metrics × four runs
    row = dict(zip(header, rows[1]))
    assert (row["e0"], row["w0"], row["sigma"], row["seed"]) == ("0.5", "1.0", "0.0", 0)
    assert (row["group"], row["reduced"], row["full"]) == ("euclidean σ=0", "global", "local")
    assert (row["agree"], row["reason"], row["steps"], row["rise"]) == (
        "False",
        "metric",
        20,
        "0.5",
    )
    induced = [dict(zip(header, r)) for r in rows[4:]]
    assert [r["agree"] for r in induced] == ["True", "True", "True", "False"]
    assert induced[0]["reason"] == "" and induced[0]["rise"] == ""  # not recorded: nan


@pytest.mark.slow
def test_a_fate_map_is_written_with_its_csv(hand_made_fate, tmp_path) -> None:
    import csv

    import gradflow

    outcomes = ["global", "local", "global", "local"]
    fate = hand_made_fate(outcomes, {"euclidean": outcomes, "induced": outcomes})
    written = gradflow.save_result(fate, tmp_path / "fate.npz")
    assert tmp_path / "fate.csv" in written
    with open(tmp_path / "fate.csv", newline="") as f:
        table = list(csv.reader(f))
    assert table[0][:4] == ["e0", "w0", "sigma", "seed"] and len(table) == 9
