"""A JAX loss with declared scales reads its flow options in them, not in scales measured on
its default ranges."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import pytest

import gradflow


def test_a_jax_loss_reads_t_max_and_gtol_in_the_scales_it_declares() -> None:
    """``L = 5x²``: ``dx/dt = −10x``, ``x(t) = e^{−10t}`` from 1.  Declared scales ``ℓ = 1``,
    ``g = 2`` make the time unit ``ℓ/g = ½``: a budget ``t_max = 1`` ends the run at flow time
    ½, at ``x = e^{−5}`` (measured on the default range ``[−3, 3]`` the gradient scale would be
    the median of ``|10x|`` there, and the run would end elsewhere)."""
    landscape = gradflow.JaxLandscape(lambda th, _: 5 * th[0] ** 2, ["x"], scales=(1.0, 2.0))
    assert gradflow.loss_scales(landscape).time == 0.5
    options = gradflow.FlowOptions(solver="Tsit5", stop=gradflow.StopRule(gtol=1e-12, t_max=1.0))
    path = gradflow.flow(landscape, np.array([1.0]), options)
    assert path.status is gradflow.Outcome.NOT_CONVERGED
    assert path.time == pytest.approx(0.5, rel=1e-12)
    np.testing.assert_allclose(path.endpoint, [math.exp(-5)], rtol=1e-5)


@pytest.mark.parametrize("scales", [(0.0, 1.0), (1.0, math.inf), (1.0,)])
def test_scales_that_are_not_two_positive_numbers_are_refused(scales) -> None:
    with pytest.raises(gradflow.GradflowError, match=r"scales = .* must be two positive"):
        gradflow.JaxLandscape(lambda th, _: jnp.sum(th**2), ["x"], scales=scales)
