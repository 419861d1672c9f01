"""The weights' relative change over training, against the NTK: one GD step by hand."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from gradflow.systems.shallow_ntk.encoder import init_encoder, predict, synthetic_data
from gradflow.systems.shallow_ntk.ntk import empirical_ntk
from gradflow.systems.shallow_ntk.sweep import run_width


def test_one_step_moves_the_weights_by_the_kernel_norm_of_the_residual():
    """For ``ℓ = ½‖f − y‖²`` the gradient is ``Jᵀ r`` and ``‖Jᵀ r‖² = rᵀ J Jᵀ r = rᵀ K_0 r``, so one
    GD step moves the weights by exactly ``γ √(r_0ᵀ K_0 r_0)``; relative to ``‖θ_0‖`` that is
    the run's ``weight_change``."""
    X, y = synthetic_data(jax.random.PRNGKey(3), 6, 4, 8)
    run = run_width(X, y, 16, init="lecun", scaling="sqrt", steps=1, seed=2)
    model = init_encoder(jax.random.PRNGKey(2), 8, 16, init="lecun", scaling="sqrt")
    r0 = np.asarray(predict(model, X) - y)
    K0 = np.asarray(empirical_ntk(model, X)["total"])
    norm0 = np.sqrt(sum(np.sum(np.asarray(a) ** 2) for a in jax.tree.leaves(model) if a.ndim))
    assert run.weight_change == pytest.approx(run.lr * np.sqrt(r0 @ K0 @ r0) / norm0, rel=1e-9)
