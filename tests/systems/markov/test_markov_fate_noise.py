"""Runs with noise recorded for their evidence: which runs are replayed, and that the replay is
the descent the run ran (``w ← w − η ∇L(w)``, written out here step by step)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from gradflow.systems.markov.config import FateConfig
from gradflow.systems.markov.fate_runs import recorded_paths
from gradflow.systems.markov.full_landscape import FullLandscape, embed_batch

P, Q, LR = 0.5, 0.8, 0.05


@pytest.mark.slow  # 11 s: compiles the full model's gradient and its descent
def test_only_runs_unlike_a_prediction_are_replayed_and_the_replay_is_their_descent() -> None:
    config = FateConfig(p=P, q=Q, grid=2, sigma=(0.01,), seeds=1, length=3, d=4, lr=LR)
    full = config.full()
    h = full.reduced.bind(p=P, q=Q).h
    land = FullLandscape(full, h)
    clean = np.asarray(embed_batch(full)(config.region().points().reshape(-1, 2), h))
    starts = clean + 0.01 * np.random.default_rng(0).standard_normal(clean.shape)
    # four runs stopped at t = 0.3, 0.5, 0.2, 0.4 (6, 10, 4 and 8 steps of η = 0.05)
    runs = [SimpleNamespace(time=t) for t in (0.3, 0.5, 0.2, 0.4)]
    fates = ["global", "local", "local", "undecided"]
    labels = {
        "euclidean": lambda ys: np.array(["global"] * len(ys)),
        "induced": lambda ys: np.array(["global", "local", "global", "global"][: len(ys)]),
    }
    found = dict(recorded_paths(land, runs, starts, clean, fates, labels, config))
    # run 1 is local where the Euclidean map says global, run 2 where both do; run 0 agrees and
    # run 3 did not finish (its reason is slow-corner whatever its path)
    assert sorted(found) == [1, 2]
    for i, path in found.items():
        w = starts[i]
        np.testing.assert_array_equal(path.ys[0], w)
        for k in range(1, len(path.ts)):
            steps = round((path.ts[k] - path.ts[k - 1]) / LR)
            for _ in range(steps):
                w = w - LR * land.grad(w)
            np.testing.assert_allclose(path.ys[k], w, rtol=0, atol=1e-12)
        # recorded up to the first point at or past the run's stop, and no further
        assert path.ts[-1] >= runs[i].time - 1e-12 and path.ts[-2] < runs[i].time
        np.testing.assert_allclose(path.vs, -land.grad(path.ys), rtol=0, atol=1e-15)
    # without noise every run is its own recorded path
    clean_runs = [SimpleNamespace(ts=np.array([0.0, 1.0]), thetas=np.stack([s, s])) for s in clean]
    every = dict(recorded_paths(land, clean_runs, clean, clean, fates, labels, config))
    assert sorted(every) == [0, 1, 2, 3]
