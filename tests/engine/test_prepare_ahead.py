"""Programs made ahead: a batch of flows, or a basin map, prepared in a second thread runs the
program prepared for its first rounds (it is not compiled again) and ends where it ends
unprepared."""

from __future__ import annotations

import threading

import numpy as np

import gradflow
from gradflow._basins.basins import FAST_ROUND, fast_basin_options, prepare_basins
from gradflow._flow.batched import _own_round
from gradflow._flow.flows import batch_flow
from gradflow._flow.prepare import prepare_endpoints

WELL = "(x**2 - 1)**2 + 3*y**2/4"
"""A double well: minima ``(±1, 0)`` at ``L = 0``, a saddle at the origin (``L = 1``)."""


def test_a_batch_prepared_in_a_second_thread_runs_its_program() -> None:
    """The starts ``x = ±0.5, ±1.5`` (``y = 0.3``) end at the minimum on their side; the round
    program the second thread made is the one the batch runs (made once in all)."""
    model = gradflow.loss_model(WELL, ["x", "y"]).bind()
    starts = np.array([[-1.5, 0.3], [-0.5, 0.3], [0.5, 0.3], [1.5, 0.3]])
    options = gradflow.FlowOptions(solver="Tsit5")
    ahead = threading.Thread(target=prepare_endpoints, args=(model, starts, options))
    ahead.start()
    ahead.join()
    _, _, field, _, _, scaled = batch_flow(model, starts, options, None)
    program = _own_round(field, scaled[0].with_stop(gtol=1.0), 32, False)
    assert program.compiles + program.loads == 1
    ends = gradflow.flow_endpoints(model, starts, options)
    assert program.compiles + program.loads == 1
    np.testing.assert_allclose(ends.endpoints, [[-1, 0], [-1, 0], [1, 0], [1, 0]], atol=1e-4)


def test_a_map_prepared_in_a_second_thread_runs_the_float32_pass_prepared() -> None:
    """On a 9 × 9 grid of the box ``[−2, 2]²`` the column ``x = 0`` lies on the saddle's stable
    manifold and the other 72 points go to the well on their side; the float32 pass runs the
    round program made ahead (made once in all)."""
    model = gradflow.loss_model(WELL, ["x", "y"]).bind()
    region = gradflow.Region.of(model, grid=9, box=(-2.0, 2.0, -2.0, 2.0))
    ahead = threading.Thread(target=prepare_basins, args=(model, region))
    ahead.start()
    ahead.join()
    flat = region.points().reshape(-1, 2)
    _, _, field, _, _, scaled = batch_flow(model, flat, fast_basin_options(), None)
    program = _own_round(field, scaled[0].with_stop(gtol=1.0), FAST_ROUND, False)
    assert program.compiles + program.loads == 1
    ids = gradflow.basins(model, region=region, progress=False).attractor_ids
    assert program.compiles + program.loads == 1
    assert (ids[:, :4] == ids[0, 0]).all() and (ids[:, 5:] == ids[0, 8]).all()
    assert ids[0, 0] != ids[0, 8] and ids[0, 0] >= 0 and ids[0, 8] >= 0
