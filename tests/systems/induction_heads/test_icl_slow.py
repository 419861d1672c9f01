"""Long ICL-MC runs (``pytest -m slow``): transformer phases, the doubly-stochastic plateau, and the
reduced flow against the minimal model trained directly."""

from __future__ import annotations

import numpy as np
import pytest

from gradflow.systems.induction_heads.data import parse_prior
from gradflow.systems.induction_heads.phases import phases
from gradflow.systems.induction_heads.train import RunSpec, train

pytestmark = pytest.mark.slow

STEPS = 1200


@pytest.fixture(scope="module")
def transformer_runs():
    """The transformer at k = 3, T = 100, seeds 0 and 1, Dirichlet and doubly-stochastic training."""
    return {
        (prior, seed): train(
            RunSpec(
                model="transformer", steps=STEPS, seed=seed, prior=parse_prior(prior), eval_every=25
            ),
            progress=False,
        )
        for prior in ("dirichlet", "doubly-stochastic")
        for seed in (0, 1)
    }


def test_transformer_passes_unigram_then_reaches_bigram(transformer_runs):
    for seed in (0, 1):
        history = transformer_runs[("dirichlet", seed)]
        ph = phases(history.steps, history.distance_mean)
        assert ph.order == ["uniform", "unigram", "bigram"], ph.describe()
        assert ph.plateau_length > 0
        # at the end the model predicts better than the in-context unigram strategy does
        assert history.distance_mean[-1, 2] < history.distance_mean[-1, 1]


def test_doubly_stochastic_training_shortens_the_plateau(transformer_runs):
    """Same seeds, same budget: without the unigram signal the induction head forms sooner."""
    for seed in (0, 1):
        steps = {}
        for prior in ("dirichlet", "doubly-stochastic"):
            history = transformer_runs[(prior, seed)]
            steps[prior] = phases(history.steps, history.distance_mean).transition_step
        assert steps["doubly-stochastic"] is not None and steps["dirichlet"] is not None, steps
        assert steps["doubly-stochastic"] < steps["dirichlet"], steps


def test_reduced_flow_follows_the_minimal_model_trained_by_sgd():
    """Lag-1 models: the reduced flow on 1024 sequences (× 3! relabellings) against SGD on (W, v_1).

    The reduced field is a Monte-Carlo mean; its relative standard error at the start sets the
    deviation allowed (3 standard errors), in ``a`` along the path and in the transition step
    (plus one evaluation interval).  SGD's own off-family part of ``W`` must have shrunk to a few
    percent of ``‖W‖_F`` by the end.
    """
    every, k = 5, 3
    minimal = train(
        RunSpec(model="minimal", steps=300, lr=4.0, eval_every=every, lags=1), progress=False
    )
    reduced = train(
        RunSpec(model="reduced", steps=300, lr=4.0, eval_every=every, lags=1, batch=1024),
        progress=False,
    )
    a_min, a_red = minimal.traces["theta"][:, 0], reduced.traces["theta"][:, 0]
    rel_se = reduced.traces["grad_se"][0, 0] / abs(reduced.traces["field"][0, 0])
    assert rel_se < 0.1
    assert np.max(np.abs(a_red - a_min)) < 3 * rel_se * np.max(np.abs(a_min))
    t_min = phases(minimal.steps, minimal.distance_mean).transition_step
    t_red = phases(reduced.steps, reduced.distance_mean).transition_step
    assert abs(t_red - t_min) <= 3 * rel_se * t_min + every
    a, b = minimal.traces["theta"][-1, :2]
    norm_W = np.sqrt(k * a**2 + 2 * k * a * b + k**2 * b**2)
    assert minimal.traces["off_family"][-1] < 0.05 * norm_W
