"""Every benchmark of ``gradflow bench`` runs to its report at a tiny size.

The full sizes take minutes and are measured by hand (docs/performance.md); here each benchmark
runs on its smallest configuration, and its report is checked against the arithmetic it
states: sizes from the configuration, ratios as the quotient of the two times measured in the
same run, a capped baseline counted at its cap.
"""

from __future__ import annotations

import json
import os

import jax
import numpy as np
import pytest

from gradflow.benchmarks import (
    basins,
    bifurcations,
    fate,
    induction_heads,
    shallow_ntk,
    startup,
    sweep,
    train,
)


def _is_json(record: dict) -> None:
    assert json.loads(json.dumps(record)) == json.loads(json.dumps(record, sort_keys=True))


@pytest.fixture
def small_grid_of_three(monkeypatch: pytest.MonkeyPatch) -> None:
    """The map whose cost per trajectory is compared with the timed grid's at the timed grid's
    own size, 3 × 3 (its default, 100 × 100, adds 20,000 trajectories and their batch sizes'
    programs, and no arithmetic the tests check)."""
    monkeypatch.setattr(basins, "SMALL_GRID", 3)


@pytest.mark.usefixtures("small_grid_of_three")
def test_bench_basins_counts_a_capped_baseline_at_its_cap_as_a_lower_bound() -> None:
    """With a cap of 1 µs no scipy trajectory can finish: each is counted at the cap, so the
    mean is exactly 1e-3 ms, flagged a lower bound, and the text says "≥"."""
    kept = (os.environ.get("GRADFLOW_CACHE_DIR"), jax.config.jax_enable_compilation_cache)
    report = basins.bench(basins.Config(grid=3, lsoda_samples=2, rk45_samples=1, cap=1e-6))
    # the cold map ran with nothing kept; the process's settings are restored after it
    assert (os.environ.get("GRADFLOW_CACHE_DIR"), jax.config.jax_enable_compilation_cache) == kept
    record = report.metadata()
    _is_json(record)
    assert record["grid"] == 3 and report.trajectories == 9
    assert set(record["baselines"]) == {"scipy_rk45", "scipy_lsoda"}
    for name, samples in (("scipy_lsoda", 2), ("scipy_rk45", 1)):
        b = record["baselines"][name]
        assert (b["samples"], b["capped"], b["lower_bound"]) == (samples, samples, True)
        assert b["ms_per_trajectory"] == pytest.approx(1e-3)
        assert b["extrapolated_seconds"] == pytest.approx(1e-3 * 9 / 1e3)
        assert b["speedup"] == pytest.approx(b["extrapolated_seconds"] / report.seconds)
    assert "≥ 0.00" in report.text()
    assert report.seconds_without_compile <= report.seconds
    assert record["us_per_trajectory_small_grid"]["grid"] == 3
    # the evidence's own time is part of the warm map's
    assert 0 < report.evidence_seconds <= report.seconds_without_compile
    assert record["evidence_share"] == pytest.approx(
        report.evidence_seconds / report.seconds_without_compile
    )


@pytest.mark.usefixtures("small_grid_of_three")
def test_bench_basins_baseline_stops_by_the_maps_rule() -> None:
    """Uncapped, the baselines finish every sampled trajectory by the map's stop rule (a
    relative gradient, its time budget, its decision level) well within a minute's cap."""
    report = basins.bench(basins.Config(grid=3, lsoda_samples=3, rk45_samples=1, cap=60.0))
    for b in report.baselines.values():
        assert b.capped == 0 and b.ms_per_trajectory < 60e3
    assert "≥" not in report.text()


def test_bench_basins_rejects_a_cap_that_is_not_positive() -> None:
    with pytest.raises(basins.GradflowError, match="--cap 0"):
        basins.Config(cap=0)


def test_bench_sweep_at_one_cell() -> None:
    report = sweep.bench(sweep.Config(cells=1, grid=3))
    record = report.metadata()
    _is_json(record)
    assert record["cells"] == 1 and record["trajectories"] == 9
    assert record["ratio_to_warm_cells"] == pytest.approx(
        record["seconds"] / record["baseline_cell_seconds"]
    )
    assert record["ratio_with_bifurcations"] == pytest.approx(
        (record["seconds"] + record["follow_seconds"]) / record["seconds"]
    )


def test_bench_bifurcations_at_three_cells() -> None:
    report = bifurcations.bench(bifurcations.Config(cells=3, grid=3))
    record = report.metadata()
    _is_json(record)
    assert record["a"] == [-1.0, 1.0, 3]
    assert record["total_seconds"] == pytest.approx(record["seconds"] + record["follow_seconds"])
    # one critical point (a minimum) at a = -1, three (two minima and a saddle) at a = 1: the
    # pitchfork at a = 0 is a bifurcation the cells a = -1, 0, 1 must show
    assert record["bifurcations"]


def test_bench_fate_at_a_two_by_two_grid() -> None:
    report = fate.bench(fate.Config(grid=2, length=3, d=4, t_max=1.0))
    record = report.metadata()
    _is_json(record)
    assert record["runs"] == 4 and sum(record["counts"].values()) == 4
    assert record["ratio_vmapped_to_one_at_a_time"] == pytest.approx(
        record["gradient_seconds_vmapped"] / record["gradient_seconds_one_at_a_time"]
    )


def test_bench_train_at_two_short_lengths() -> None:
    config = train.Config(lengths=(2, 4), steps=2, torch_steps=20, chunk=2, repeats=1)
    record = train.bench(config).metadata()
    _is_json(record)
    assert list(record["lengths"]) == ["2", "4"]
    assert len(record["cost_growth_per_round"]) == 1  # steps / chunk = one round
    for rates in record["lengths"].values():
        assert rates["min_steps_per_second"] <= rates["steps_per_second"]
        assert rates["steps_per_second"] <= rates["max_steps_per_second"]
    assert record["cost_growth"] == pytest.approx(np.median(record["cost_growth_per_round"]))
    assert record["exact"]["sequences"] == 2**train.EXACT_LENGTH


def test_bench_icl_at_one_step() -> None:
    record = induction_heads.bench(induction_heads.Config(steps=1, chunk=1)).metadata()
    _is_json(record)
    full, minimal = record["transformer"], record["minimal"]
    assert record["scan_over_loop"] == pytest.approx(
        full["scan_steps_per_s"] / full["loop_steps_per_s"]
    )
    assert record["minimal_over_transformer"] == pytest.approx(
        minimal["scan_steps_per_s"] / full["scan_steps_per_s"]
    )


def test_bench_ntk_at_width_two_agrees_with_its_baseline() -> None:
    config = shallow_ntk.Config(n_samples=2, d_s=2, d=2, width=2, repeats=1)
    record = shallow_ntk.bench(config).metadata()
    _is_json(record)
    assert record["parameters"] == 3 * 2 * 2 + 2
    first = record["implementations"][0]
    assert (first["method"], first["per_block"]) == shallow_ntk.BASELINE
    assert first["speedup_vs_jacobian"] == pytest.approx(1.0)
    for timing in record["implementations"]:
        assert timing["max_rel_difference"] < 1e-12
        assert timing["speedup_vs_jacobian"] == pytest.approx(first["ms"] / timing["ms"])


def test_bench_startup_times_the_help_and_a_rejected_argument(monkeypatch) -> None:
    """The command list cut to ``gradflow --help`` and the main job left out: two fresh
    interpreters, each answering before JAX is imported."""
    monkeypatch.setattr(startup, "_commands", lambda env, cwd: [()])
    report = startup.bench(startup.Config(repeats=1, main_job=False))
    record = report.metadata()
    _is_json(record)
    assert list(record["help_seconds"]) == ["gradflow --help"]
    assert record["cold_seconds"] is None and record["warm_seconds"] is None
    assert record["rejected_seconds"] > 0
