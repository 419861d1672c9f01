"""One trajectory's program takes its budget (``t_max``) and steady-state tolerance (``gtol``)
as arguments: flows of one field with other budgets share it, and end where the mathematics
says."""

from __future__ import annotations

import math

import jax.monitoring
import jax.numpy as jnp
import numpy as np

import gradflow
from gradflow._flow.integrate import path_program


def test_flows_with_other_budgets_and_tolerances_share_one_program() -> None:
    """``L = ½(x² + 4y²)`` from ``(1, 1)``: ``x = e^{−t}``, ``y = e^{−4t}``.  Budgets ``t_max``
    of ½ and 1 end there (not converged); ``gtol = 10⁻²`` stops the flow where
    ``‖∇L‖ = ‖(x, 4y)‖`` first falls to it, at ``t ≈ ln 100 = 4.6`` (``x`` dominates by then).
    The three flows compile one program."""
    field = gradflow.GradientField.from_loss(lambda th, _: 0.5 * (th[0] ** 2 + 4 * th[1] ** 2))
    before, traces = path_program.cache_info(), []

    def count(event: str, duration: float, fun_name: str = "", **kwargs) -> None:
        if event == "/jax/core/compile/jaxpr_trace_duration" and fun_name == "run":
            traces.append(duration)

    ends = []
    jax.monitoring.register_event_duration_secs_listener(count)
    try:
        for t_max, gtol in ((0.5, 1e-12), (1.0, 1e-12), (100.0, 1e-2)):
            options = gradflow.FlowOptions(
                solver="Tsit5",
                controller=gradflow.PID(rtol=1e-10, atol=1e-12),
                stop=gradflow.StopRule(gtol=gtol, t_max=t_max),
            )
            ends.append(gradflow.flow(field, jnp.ones(2), options))
    finally:
        jax.monitoring.unregister_event_duration_listener(count)
    after = path_program.cache_info()
    assert (after.misses, after.hits) == (before.misses + 1, before.hits + 2)
    assert len(traces) == 1
    for path, t in zip(ends[:2], (0.5, 1.0)):
        assert path.status is gradflow.Outcome.NOT_CONVERGED
        assert path.time == t
        np.testing.assert_allclose(path.endpoint, [math.exp(-t), math.exp(-4 * t)], rtol=1e-8)
    stopped = ends[2]
    assert stopped.status is gradflow.Outcome.CONVERGED
    x, y = stopped.endpoint
    assert math.hypot(x, 4 * y) <= 1e-2 and stopped.time == np.float64(stopped.ts[-1])
    assert abs(stopped.time - math.log(100)) < 0.2
