"""A flow's picture stays legible for a short path far from 0: the small start (0.05, 0.05) of
the canonical model moves w by about 1.2e-4 (0.05 → 0.04988), whose tick labels are seven
characters each; on the path's axis they must not overlap."""

from __future__ import annotations

import numpy as np

from gradflow import Outcome, Trajectory


def test_the_path_axis_tick_labels_do_not_overlap():
    t = np.linspace(0.0, 1.0, 20)
    path = np.stack([0.05 * (1 - t) ** 4, 0.05 - 1.24e-4 * t], 1)  # (e, w): e → 0, w drifts
    trajectory = Trajectory(
        ts=t,
        thetas=path,
        losses=1 - t,
        status=Outcome.CONVERGED,
        param_names=("e", "w"),
        plane=("w", "e"),
    )
    fig = trajectory.figure()
    fig.canvas.draw()
    path_ax = fig.axes[0]
    boxes = [label.get_window_extent() for label in path_ax.get_xticklabels() if label.get_text()]
    assert len(boxes) >= 2
    boxes.sort(key=lambda b: b.x0)
    assert all(a.x1 < b.x0 for a, b in zip(boxes, boxes[1:])), [b.bounds for b in boxes]
