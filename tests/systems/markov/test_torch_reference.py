"""The PyTorch reference step: same chains, same loss and gradient as the JAX model (if installed)."""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gradflow import GradflowError
from gradflow.systems.markov import torch_reference
from gradflow.systems.markov.transformer import MarkovTransformer, sample_loss

P, Q = 0.3, 0.6


def test_without_torch_it_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # makes ``import torch`` raise ImportError
    assert torch_reference.torch_available() is False


def test_vectorized_sampler_is_the_step_by_step_chain():
    torch = pytest.importorskip("torch")
    batch, length = 300, 40
    x = torch_reference.sample_chains(torch.Generator().manual_seed(3), P, Q, batch, length)
    u = torch.rand(batch, length, generator=torch.Generator().manual_seed(3)).numpy()
    expected = np.zeros((batch, length), dtype=np.int64)
    expected[:, 0] = u[:, 0] < np.float32(P / (P + Q))
    for n in range(1, length):
        expected[:, n] = u[:, n] < np.where(expected[:, n - 1] == 1, np.float32(1 - Q), P)
    assert x.dtype == torch.int64
    np.testing.assert_array_equal(x.numpy(), expected)


def test_loss_and_gradient_equal_the_jax_model():
    torch = pytest.importorskip("torch")
    params = torch_reference._model(4, 12, torch.Generator().manual_seed(0))
    params = {k: (5 * v.detach().double()).requires_grad_() for k, v in params.items()}
    seqs = torch_reference.sample_chains(torch.Generator().manual_seed(1), P, Q, 6, 13)
    loss = torch_reference._loss(params, seqs)
    loss.backward()
    model = MarkovTransformer(
        **{k: jnp.asarray(v.detach().numpy()) for k, v in params.items()},
        unembed=None,
        attention="softmax",
    )
    x = jnp.asarray(seqs.numpy(), jnp.int32)
    value, grads = jax.value_and_grad(sample_loss)(model, x)
    assert float(value) == pytest.approx(loss.item(), rel=1e-12)
    for name, tensor in params.items():
        np.testing.assert_allclose(getattr(grads, name), tensor.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_torch_step_is_timed():
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    rate = torch_reference.torch_steps_per_second(8, 20, batch=4, p=P, q=Q, threads=1)
    assert np.isfinite(rate) and rate > 0 and torch.get_num_threads() == threads
    with pytest.raises(GradflowError, match="steps = 5"):
        torch_reference.torch_steps_per_second(8, 5)
    with pytest.raises(GradflowError, match="threads = 0"):
        torch_reference.torch_steps_per_second(8, 20, threads=0)
