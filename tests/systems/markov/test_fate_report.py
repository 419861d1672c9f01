"""What the canonical fate map's report says about its settings: nothing is run."""

from __future__ import annotations

import dataclasses


def test_the_noise_step_is_printed_only_where_a_run_has_noise(hand_made_fate) -> None:
    """A map of σ = 0 alone descends nothing by gradient descent, so it names no step η; add
    σ = 0.01 and the first line names η = 0.02 (the default step) and t = 150 (half of the
    budget t = 300)."""
    fate = hand_made_fate(["global"] * 4, {"euclidean": ["global"] * 4, "induced": ["global"] * 4})
    assert "η" not in fate.detail_lines()[0]
    noisy = dataclasses.replace(fate, config=dataclasses.replace(fate.config, sigma=(0.0, 0.01)))
    assert "noise gradient descent at η = 0.02 to t = 150 first" in noisy.detail_lines()[0]
