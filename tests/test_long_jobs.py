"""Long jobs say their size and a rough duration before they start, and refuse, in one line with
status 2 and no file left behind, what cannot fit in memory and what runs past the limit
(30 min on 2 cores) unless ``--allow-long`` (``allow_long=True``) asks for it.  Nothing here runs
a map: the checks read the sizes alone.
"""

from __future__ import annotations

import pytest

import gradflow
from gradflow import GradflowError
from gradflow.systems.fate import quick_config, run_fate
from gradflow.systems.markov.config import FateConfig, TrainConfig
from gradflow.systems.markov.costs import FATE_FIXED_S, NOISE_RUN_S, SLIDE_RUN_S

LIMIT = "past the 30 min a job runs without --allow-long"


def _no_map(*args, **kwargs):
    raise GradflowError("the map would start here")


@pytest.fixture
def memory(monkeypatch):
    """16 GiB available, whatever the machine has now."""
    monkeypatch.setattr("gradflow._output.memory.available_memory", lambda: 16 * 2**30)


def _refused(cli, argv: list[str], *named: str) -> None:
    """One run refused in one line naming every one of ``named``, nothing written."""
    for text in named[1:]:
        assert text in cli(*argv).err
    cli.assert_rejected(argv, named[0])


def test_a_quick_map_on_a_large_grid_is_refused_with_its_size_and_estimate(cli, memory) -> None:
    """500² starts, one run each without noise at 0.31 s: 250,000 runs, 21.5 h."""
    argv = ["fate", "--grid", "500", "--quick"]
    _refused(cli, argv, LIMIT, "250,000 runs of the full model", "about 22 h on 2 CPU cores")


def test_allow_long_runs_it_after_saying_its_size(cli, memory, monkeypatch) -> None:
    monkeypatch.setattr("gradflow.systems.fate.run_fate", _no_map)
    err = cli("fate", "--grid", "500", "--quick", "--allow-long").err
    assert "gradflow fate: 250,000 runs of the full model" in err
    assert "the map would start here" in err
    err = cli("fate", "--quick").err
    assert "gradflow fate: 16 runs of the full model (4 × 4 starts: 16 without noise)" in err


def test_the_default_map_is_estimated_from_its_runs() -> None:
    """144 starts without noise and 2 × 3 noise draws of each: 144 + 864 runs."""
    estimate = FateConfig().estimate()
    assert estimate.size.startswith("1,008 runs of the full model")
    start = FATE_FIXED_S
    assert estimate.seconds == pytest.approx(start + 144 * SLIDE_RUN_S + 864 * NOISE_RUN_S)
    longer = FateConfig(length=8).estimate()  # 2^8 sequences instead of 2^6
    assert longer.seconds - start == pytest.approx(4 * (estimate.seconds - start))


def test_python_refuses_a_long_map_before_making_its_folder(tmp_path, memory) -> None:
    config = quick_config(FateConfig(grid=500))
    with pytest.raises(GradflowError, match="without allow_long=True"):
        run_fate("canonical", config, checkpoint=tmp_path / "fate.runs")
    assert list(tmp_path.iterdir()) == []


def test_a_map_beyond_memory_is_refused_from_python(tmp_path, memory) -> None:
    config = FateConfig(grid=100000)
    with pytest.raises(GradflowError, match="needs about .* of memory"):
        run_fate("canonical", config, checkpoint=tmp_path / "fate.runs", allow_long=True)
    assert list(tmp_path.iterdir()) == []


def test_the_memory_bound_counts_what_a_run_keeps(hand_made_fate) -> None:
    """Every array of a map's NPZ with a run axis: per run 6 scalars, the projected (e, w), the
    distance from the family at the start and the end, and 17 evidence values: 27 float64."""
    from gradflow.systems.markov.costs import KEPT_PER_RUN
    from gradflow.systems.markov.departure import EVIDENCE

    outcomes = ["global", "local", "global", "local"]
    fate = hand_made_fate(
        outcomes,
        {"euclidean": outcomes, "induced": outcomes},
        **{k: [0.0] * 4 for k in EVIDENCE},
    )
    per_run = sum(a.size for a in fate.arrays().values() if a.shape[:3] == (1, 2, 2)) / 4
    assert per_run == KEPT_PER_RUN + 2 == 27


def test_a_training_run_past_the_limit_is_refused(cli, memory) -> None:
    """10⁶ steps at N = 1024: 22 ms a step (the benchmark's 43–46 steps/s), about 6 h."""
    argv = ["train", "--p", "0.5", "--q", "0.8", "--steps", "1000000", "--seq-len", "1024"]
    cli.assert_rejected(argv, LIMIT)
    assert TrainConfig(p=0.5, q=0.8).estimate().seconds < 60


def test_the_estimate_line_names_size_duration_basis_and_memory() -> None:
    estimate = gradflow.Estimate("3 runs", 150.0, "50 s a run", 3 * 2**20)
    assert (
        estimate.line()
        == "3 runs: about 2.5 min on 2 CPU cores (50 s a run; an estimate), about 3 MiB of memory"
    )
    estimate.check()
    with pytest.raises(GradflowError, match="^3 runs would take about 60 min on 2 CPU cores"):
        gradflow.Estimate("3 runs", 3600.0, "20 min a run").check()
    gradflow.Estimate("3 runs", 3600.0, "20 min a run").check(allow_long=True)


def test_a_two_mixture_map_of_huge_width_is_refused_before_it_allocates(cli, memory) -> None:
    """Width 10⁸ at K = 3 (d = 6, 24 samples of 3 tokens): 151 records of 12·3·10⁸ weights and
    8·3·24 activations per neuron each are 8 B · 10⁸ · 151 · 612 = 7.39·10¹³ B, 6.89·10⁴ GiB."""
    cli.assert_rejected(
        ["fate", "--model", "two-mixture", "--widths", "100000000"], "needs about 6.89e+04 GiB"
    )


def test_an_induction_heads_map_of_many_seeds_is_refused(cli, memory, monkeypatch) -> None:
    """10⁵ seeds × 9 points keep 2.7·10⁶ runs and 3.6·10⁶ comparisons: beyond 8 GiB; with the
    memory, 9·10⁵ points of 1000 transformer steps at 4.8 ms are 50 days and more."""
    argv = ["fate", "--model", "induction-heads", "--seeds", "100000"]
    cli.assert_rejected(argv, "--seeds 100000")
    monkeypatch.setattr("gradflow._output.memory.available_memory", lambda: 2**40)
    _refused(cli, argv, LIMIT, "2,700,000 runs")


def test_a_shallow_ntk_map_of_many_draws_is_refused(cli, memory) -> None:
    """28 cells a draw × 1000 draws of 1000 steps at 0.2 ms, 0.06 s a cell: about 2 h."""
    _refused(cli, ["fate", "--model", "shallow-ntk", "--seeds", "1000"], LIMIT, "28,000 cells")


def test_a_plane_map_of_a_large_grid_is_refused(cli, monkeypatch) -> None:
    monkeypatch.setattr("gradflow._output.memory.available_memory", lambda: 2**40)
    argv = ["fate", "--model", "canonical-bias", "--hyper", "p=0.5", "q=0.8", "--grid", "400"]
    _refused(cli, argv, LIMIT, "160,000 runs of the full model (400 × 400 starts)")


def test_python_refuses_a_long_sweep_before_a_cell_is_bound(memory, monkeypatch) -> None:
    """250,000 cells of 5² flows: 64 KiB kept a cell are 15.3 GiB, beyond half of 16 GiB; with
    the memory, 0.4 s a cell are 28 h."""
    model = gradflow.loss_model("(x**2 - 1)**2 + k*y**2", ["x", "y"], ["k"])
    ks = [1.0 + i / 250000 for i in range(250000)]
    region = gradflow.Region.of(model, grid=5)
    with pytest.raises(GradflowError, match="^250000 cells × 5 × 5 = 6.25e.06 flows needs abo"):
        gradflow.sweep(model, {"k": ks}, region=region)
    monkeypatch.setattr("gradflow._output.memory.available_memory", lambda: 2**40)
    with pytest.raises(GradflowError, match="flows would take about 28 h .* allow_long=True"):
        gradflow.sweep(model, {"k": ks}, region=region)
