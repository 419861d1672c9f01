"""The agreement of a fate map over random draws: per-draw shares, mean, range and t-interval."""

from __future__ import annotations

import math

import pytest

from gradflow import GradflowError
from gradflow.systems.fate import FateCell
from gradflow.systems.fate_spread import agreement_over_draws, spread_line


def _cells(agree_by_seed: dict[int, list[bool]], group: str = "g") -> list[FateCell]:
    return [
        FateCell(
            {"m": i, "seed": seed}, "a", "a" if ok else "b", ok, group, None if ok else "assumption"
        )
        for seed, flags in agree_by_seed.items()
        for i, ok in enumerate(flags)
    ]


def test_shares_mean_range_and_student_interval_by_hand():
    """Draws agreeing in 2, 4 and 3 of 4 cells: shares ½, 1, ¾, mean ¾, sample standard deviation
    ¼, so the 95 % interval is ``¾ ± t_{0.975,2} · ¼/√3``, clipped at 1, where Student's t with two
    degrees of freedom has the closed-form quantile ``t_p = (2p − 1)/√(2p(1 − p))``; a second
    group is kept apart."""
    cells = _cells({0: [1, 1, 0, 0], 1: [1, 1, 1, 1], 2: [1, 1, 1, 0]})
    cells += _cells({0: [1, 0], 1: [1, 0]}, group="h")
    spread = agreement_over_draws(cells, "seed")
    g = spread["g"]
    assert g["draws"] == [0, 1, 2] and g["shares"] == [0.5, 1.0, 0.75]
    assert (g["mean"], g["low"], g["high"]) == (0.75, 0.5, 1.0)
    quantile = 0.95 / math.sqrt(2 * 0.975 * 0.025)
    half = quantile * 0.25 / math.sqrt(3)
    assert g["interval"] == pytest.approx([0.75 - half, 1.0], abs=1e-12)
    assert spread["h"]["shares"] == [0.5, 0.5] and spread["h"]["interval"] == [0.5, 0.5]
    assert "mean 75.0 %" in spread_line("g", g)


def test_one_draw_has_no_interval_and_a_missing_coordinate_is_refused():
    spread = agreement_over_draws(_cells({3: [1, 0, 0, 0]}), "seed")
    assert spread["g"]["mean"] == 0.25 and spread["g"]["interval"] is None
    with pytest.raises(GradflowError, match="draw = 'sigma'"):
        agreement_over_draws(_cells({0: [1]}), "sigma")
