"""The two-mixture fate map: its configuration, its runs (the padded full model is the width-m
model exactly), the comparison of every full run with the m → ∞ limit, the resumable grid, and
``gradflow fate --model two-mixture``.  The maps train networks, so they are marked ``slow``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gradflow import GradflowError
from gradflow.systems.fate import FATE_SYSTEMS, REASONS, config_type, quick_config
from gradflow.systems.two_mixture.config import MixtureFateConfig

LN2 = np.log(2.0)
TINY = {
    "ks": (2,),
    "omegas": (0.1, 0.3),
    "widths": (4, 8),
    "particles": 16,
    "t_max": 300.0,
    "records": 30,
}
"""A map small enough for a test: 8 full runs and 4 limit runs of 600 descent steps."""


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"ks": (1,)}, "every K must be ≥ 2"),
        ({"ks": ()}, "ks = ()"),
        ({"omegas": (0.1, 0.0)}, "omegas"),
        ({"omegas": (0.1, 0.1)}, "distinct"),
        ({"widths": (4, 2.5)}, "widths"),
        ({"particles": 100}, "particles = 100"),
        ({"neurons": "pairs"}, "neurons"),
        ({"combine": "product"}, "combine"),
        ({"lr": 0.7}, "whole number"),
        ({"fit_level": 0.7}, "fit_level"),
        ({"escape_level": 0.0}, "escape_level"),
        ({"band": 1.0}, "band"),
    ],
)
def test_bad_fate_settings_raise_one_line_errors(kwargs, named):
    with pytest.raises(GradflowError, match=named) as info:
        MixtureFateConfig(**kwargs)
    assert "\n" not in str(info.value)


def test_two_mixture_is_a_fate_system_with_a_quick_map():
    assert config_type("two-mixture") is MixtureFateConfig
    assert FATE_SYSTEMS["two-mixture"].run == "gradflow.systems.two_mixture.fate:fate_map"
    quick = quick_config(MixtureFateConfig(omegas=(0.05, 0.5)))
    assert quick.omegas == (0.05, 0.5)  # an option given wins
    assert quick.ks == (2,) and quick.widths == MixtureFateConfig.QUICK["widths"]


def test_bad_fate_options_are_one_line_exit_2_nothing_written(cli):
    cli.assert_rejected(["fate", "--model", "two-mixture", "--particles", "100"], "particles")
    cli.assert_rejected(["fate", "--model", "two-mixture", "--neurons", "pairs"], "--neurons")


def test_fate_help_lists_the_two_mixture_options(cli):
    code, out, _ = cli("fate", "--model", "two-mixture", "--help")
    assert code == 0
    for option in ("--omegas", "--widths", "--particles", "--neurons", "--escape-level", "--k"):
        assert option in out


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from gradflow.systems.two_mixture.fate import fate_map

    folder = tmp_path_factory.mktemp("fate") / "runs"
    return fate_map(MixtureFateConfig(**TINY), checkpoint=folder, progress=False), folder


@pytest.mark.slow
def test_every_full_run_is_compared_with_its_limit_run(tiny):
    """The limit starts at f ≡ 0 (loss ln 2 on every sample) and, with the attention frozen,
    keeps B = 0 exactly; a frozen full run keeps its initial scores; every mismatch has a
    reason."""
    result, _ = tiny
    cells = result.cells()
    assert len(cells) == 8 and result.groups() == ["joint", "attention frozen"]
    assert {(c.coords["omega"], c.coords["m"]) for c in cells} == {
        (w, m) for w in (0.1, 0.3) for m in (4, 8)
    }
    for cell in cells:
        assert cell.agree == (cell.reason is None) and (cell.agree or cell.reason in REASONS)
    arrays = result.arrays()
    assert np.allclose(arrays["limit_loss_hard"][:, 0], LN2, rtol=0, atol=1e-15)
    assert np.allclose(arrays["limit_loss_consistent"][:, 0], LN2, rtol=0, atol=1e-15)
    frozen_limit = ~arrays["limit_attention"]
    assert np.array_equal(arrays["limit_max_score"][frozen_limit], np.zeros((2, 31)))
    frozen_full = arrays["full_max_score"][~arrays["full_attention"]]
    assert np.array_equal(frozen_full, np.repeat(frozen_full[:, :1], 31, axis=1))
    assert np.isfinite(arrays["limit_tangent"][frozen_limit]).all()
    assert np.isnan(arrays["limit_tangent"][~frozen_limit]).all()
    json.dumps(result.metadata())
    assert "slope dt*/d ln(1/ω)" in result.text()


@pytest.mark.slow
def test_a_rerun_resumes_from_the_checkpoint_with_the_same_results(tiny):
    from gradflow.systems.two_mixture.fate import fate_map

    result, folder = tiny
    assert len(list(folder.glob("*.npz"))) == 12
    again = fate_map(MixtureFateConfig(**TINY), checkpoint=folder, progress=False)
    first, second = result.arrays(), again.arrays()
    for name, values in first.items():
        assert np.array_equal(values, second[name], equal_nan=values.dtype.kind == "f"), name
    with pytest.raises(GradflowError, match="another computation|different"):
        fate_map(MixtureFateConfig(**{**TINY, "seed": 1}), checkpoint=folder, progress=False)


@pytest.mark.slow
@pytest.mark.parametrize("neurons", ["average", "tokens"])
def test_the_padded_full_run_is_the_width_m_run(neurons):
    """Zero attention rows and zero-output neurons add nothing and never move: the run padded to
    width 16 equals the width-5 model's own run (:func:`gradflow.systems.two_mixture.training.train`)."""
    from gradflow.systems.two_mixture.runs import cell_config, run_cell
    from gradflow.systems.two_mixture.training import TrainOptions, train

    cell = {
        "kind": "full",
        "K": 2,
        "omega": 0.3,
        "m": 5,
        "width": 16,
        "attention": True,
        "combine": "difference",
        "neurons": neurons,
        "seed": 3,
        "lr": 0.5,
        "steps": 200,
        "every": 20,
    }
    padded = run_cell(cell)
    run = train(cell_config(cell), TrainOptions(t_max=100.0, lr=0.5, records=10), progress=False)
    assert np.abs(np.logaddexp(0, -padded["margins"]).mean(axis=1) - run.loss).max() < 1e-13
    assert np.abs(padded["max_score"] - np.abs(run.scores).max(axis=(1, 2, 3))).max() < 1e-13
    assert run.loss[-1] < run.loss[0] - 0.05


@pytest.mark.slow
def test_with_neurons_reading_tokens_the_frozen_limit_never_fits_the_hard_samples():
    """At B = 0 (the limit with the attention frozen) the hard margins sum to 0 whatever the
    neurons (tests/test_mixture_model.py), so the hard loss stays ≥ ln 2 at every record, while
    the consistent loss falls; with the attention trained the hard loss falls below ln 2."""
    from gradflow.systems.two_mixture.data import population
    from gradflow.systems.two_mixture.runs import run_cell

    cell = {
        "kind": "limit",
        "K": 2,
        "omega": 0.1,
        "m": 16,
        "attention": False,
        "combine": "difference",
        "neurons": "tokens",
        "seed": 0,
        "lr": 0.5,
        "steps": 600,
        "every": 60,
    }
    mask = population(2).hard
    for attention in (False, True):
        out = run_cell({**cell, "attention": attention})
        ell = np.logaddexp(0, -out["margins"])
        if attention:
            assert ell[-1, mask].mean() < LN2 - 0.1
        else:
            assert (ell[:, mask].mean(axis=1) >= LN2 - 1e-12).all()
            assert ell[-1, ~mask].mean() < 0.2


@pytest.mark.slow
def test_the_quick_map_from_the_command_line(cli):
    out = cli.folder / "fate.npz"
    run = cli("fate", "--model", "two-mixture", "--quick", "--json", "--out", str(out))
    assert run.code == 0, run.err
    record = json.loads(run.out)
    assert record["system"] == "two-mixture" and record["cells"] == 8
    assert set(record["agreement"]) == {"joint", "attention frozen"}
    assert out.exists() and out.with_suffix(".png").exists() and out.with_suffix(".json").exists()
    assert not out.with_suffix(".runs").exists()
