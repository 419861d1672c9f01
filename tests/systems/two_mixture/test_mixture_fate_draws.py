"""The two-mixture fate map over several finite-width draws (no training: the run list)."""

from __future__ import annotations

import numpy as np
import pytest

from gradflow import GradflowError
from gradflow.systems.two_mixture.config import MixtureFateConfig
from gradflow.systems.two_mixture.fate import _name, fate_cells


def test_every_full_run_is_repeated_per_draw_and_the_limit_is_not():
    """``K ∈ {2}``, ``ω ∈ {0.1}``, widths 4, 16, two groups: 2 limit runs and 2 × 2 × seeds full
    runs, seeds ``seed … seed + seeds − 1``, every run named apart."""
    config = MixtureFateConfig(ks=(2,), omegas=(0.1,), widths=(4, 16), seed=5, seeds=3)
    cells = fate_cells(config)
    full = [c for c in cells if c["kind"] == "full"]
    assert sum(c["kind"] == "limit" for c in cells) == 2 and len(full) == 12
    assert sorted({c["seed"] for c in full}) == [5, 6, 7]
    assert len({_name(c) for c in cells}) == len(cells)


@pytest.mark.parametrize("seeds", [0, 1.5])
def test_a_draw_count_that_is_not_a_whole_positive_number_is_refused(seeds):
    with pytest.raises(GradflowError, match="seeds"):
        MixtureFateConfig(seeds=seeds)


def test_a_run_from_a_tiny_start_is_recorded_to_its_horizon():
    """``ω = 10⁻³``, attention frozen, ``t = 1500``: the weights start at norm ``≈ 10⁻³`` and grow
    by far more than ten times as the neurons learn; that is learning, not divergence, so all
    ``steps/every + 1 = 31`` records are kept (the engine's default radius, ten times the start's
    norm, stopped this run after 7)."""
    from gradflow.systems.two_mixture.runs import run_cell

    cell = {"kind": "full", "K": 2, "omega": 1e-3, "m": 4, "width": 4, "attention": False}
    cell |= {"combine": "difference", "neurons": "average", "seed": 0}
    record = run_cell(cell | {"lr": 0.5, "steps": 3000, "every": 100})
    assert record["margins"].shape == (31, 8) and np.isfinite(record["margins"]).all()
