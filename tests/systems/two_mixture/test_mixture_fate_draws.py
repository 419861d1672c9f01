"""The two-mixture fate map over several finite-width draws (no training: the run list)."""

from __future__ import annotations

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
