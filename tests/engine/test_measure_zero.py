"""Which attractors a basin map calls measure zero."""

from __future__ import annotations

import gradflow


def test_a_coarse_grid_calls_no_minimum_measure_zero() -> None:
    """``(x² − 1)² + y²`` on ``[−2, 2]²`` at a 3 × 3 grid: the columns x = −2 and x = 2 flow to
    the minima (∓1, 0) and the column x = 0, the saddle's stable manifold, to the saddle (0, 0).
    No attractor holds a 2 × 2 block of grid points, but a minimum's basin is open (a
    neighbourhood of it flows to it): only the saddle is measure zero."""
    bound = gradflow.loss_model("(x**2 - 1)**2 + y**2", ["x", "y"]).bind()
    region = gradflow.Region.of(bound, grid=3, box=(-2.0, 2.0, -2.0, 2.0))
    bm = gradflow.basins(bound, region=region, progress=False)
    starred = {(a.kind, a.measure_zero) for a in bm.reached()}
    assert starred == {("global_min", False), ("saddle", True)}
    assert [a.fraction for a in bm.reached() if a.kind == "saddle"] == [1 / 3]
