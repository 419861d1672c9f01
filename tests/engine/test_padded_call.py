"""Padded calls: points go to a batched function in a few shared batch sizes, and a call never
asks for more than ``CALL_ENTRIES`` numbers, whatever the size of each point's result."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from gradflow._landscape.base import CALL_ENTRIES, padded_call


def _recorded(calls: list[tuple[int, ...]]):
    def outer(theta, _):
        calls.append(theta.shape)
        return jnp.einsum("bi,bj->bij", theta, theta)

    return outer


def test_small_results_share_one_padded_batch() -> None:
    """Five points of 3 parameters, ``θθᵀ`` each: one call, padded to 512 (the matrix size)."""
    calls: list[tuple[int, ...]] = []
    theta = np.arange(15.0).reshape(5, 3)
    out = padded_call(_recorded(calls), theta, 3, (3, 3), None, (512,))
    assert calls == [(512, 3)]
    np.testing.assert_array_equal(out, theta[:, :, None] * theta[:, None, :])


def test_large_results_go_in_the_chunks_that_fit() -> None:
    """Five points of 1,024 parameters, ``θθᵀ`` each (2²⁰ numbers): 512 of them would be 2²⁹,
    so they go four at a time (2²² = CALL_ENTRIES), the last chunk padded."""
    calls: list[tuple[int, ...]] = []
    theta = np.random.default_rng(0).standard_normal((5, 1024))
    out = padded_call(_recorded(calls), theta, 1024, (1024, 1024), None, (512,))
    assert CALL_ENTRIES == 1 << 22 and calls == [(4, 1024), (4, 1024)]
    np.testing.assert_allclose(out, theta[:, :, None] * theta[:, None, :], rtol=1e-15)
