"""The full-model contract, checked on every registered reduced model with a full model.

At random reduced points (float64, the full loss enumerated over all ``2^N`` sequences):
``L_full(embed θ) = L(θ)``; the full gradient pulled back, ``Jᵀ∇L_full``, equals ``∇L``; the
closed-form metric equals ``JᵀJ`` from automatic differentiation; ``project(embed θ) = θ``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

import gradflow as gf
from gradflow.systems.markov.full_model import FULL_MODELS, full_model

LENGTH = 4
BOX = {"e": (0.2, 1.5), "w": (-1.5, 1.5), "a": (-0.8, 0.8), "b": (-1.0, 1.0)}


@pytest.mark.parametrize("name", sorted(FULL_MODELS))
def test_full_model_contract(name):
    full = full_model(name, length=LENGTH, d=4)
    bound = full.reduced.bind(p=0.3, q=0.55)
    h = bound.h
    rng = np.random.default_rng(7)
    lo, hi = np.array([BOX[n] for n in full.reduced.param_names]).T
    # each side compiled whole: op by op, the transformer is a hundred programs or more
    loss = jax.jit(lambda t, h: full.loss(full.embed(t, h), h))
    pulled = jax.jit(full.value.pulled_gradient)
    jacobian = jax.jit(jax.jacfwd(lambda t, h: ravel_pytree(full.embed(t, h))[0]))
    metric = jax.jit(full.metric)
    projected = jax.jit(lambda t, h: full.project(full.embed(t, h)))
    for theta in rng.uniform(lo, hi, size=(3, full.reduced.dim)):
        t = jnp.asarray(theta)
        assert float(loss(t, h)) == pytest.approx(float(bound.loss(theta)), abs=1e-12)
        np.testing.assert_allclose(pulled(t, h), bound.grad(theta), atol=1e-11)
        jac = jacobian(t, h)
        np.testing.assert_allclose(metric(t, h), jac.T @ jac, atol=1e-12)
        np.testing.assert_allclose(projected(t, h), theta, atol=1e-12)


def test_models_without_a_full_model_are_refused():
    with pytest.raises(gf.GradflowError, match="has no full model"):
        full_model("induction-heads")
    with pytest.raises(gf.GradflowError, match="exact only for the models without a"):
        full_model("canonical-attention", attention="softmax")


def test_the_models_with_a_full_model_are_the_registry_entries_marked_full():
    """One list: an entry is marked ``full`` exactly when its model declares a full model."""
    from gradflow.systems import MODELS

    for name, entry in MODELS.items():
        assert entry.full == (entry.model().full is not None), name
    assert FULL_MODELS == tuple(n for n, e in MODELS.items() if e.full and "markov" in e.factory)


@pytest.mark.parametrize("name", ["canonical", "canonical-attention-bias"])
def test_the_induced_metric_is_the_default_full_models(name):
    """``metric="induced"`` is the metric of the full model ``full_model(name)`` builds: the
    embedding moves ``e = eα`` and each of the ``N`` positions by ``−(e/2)α``, so ``G_ee`` holds
    ``1 + N/4`` and no other entry depends on ``N``: against ``N = 8`` the default ``N = 6``
    differs by exactly ``−1/2`` in ``G_ee``."""
    full = full_model(name)
    bound = full.reduced.bind(p=0.3, q=0.55)
    theta = jnp.asarray([0.7, -0.4, 0.3, 0.2][: bound.dim])
    induced = np.asarray(bound.induced_metric(theta, bound.h))
    np.testing.assert_array_equal(induced, np.asarray(full.metric(theta, bound.h)))
    longer = np.asarray(full_model(name, length=8).metric(theta, bound.h))
    expected = np.zeros((bound.dim, bound.dim))
    expected[0, 0] = (6 - 8) / 4
    np.testing.assert_allclose(induced - longer, expected, atol=1e-15)
