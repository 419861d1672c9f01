"""A flow's picture is titled with what flowed, where it started and what it reached.

``L = x² + y²`` from ``(1, 2)`` flows straight into its minimum at the origin.
"""

from __future__ import annotations

import dataclasses

import numpy as np

import gradflow as gf


def test_the_flow_picture_names_the_model_the_start_and_the_end():
    model = gf.loss_model("x**2 + y**2").bind()
    path = gf.flow(model, np.array([1.0, 2.0]))
    titled = dataclasses.replace(path, title="bowl, induced metric")
    title = titled.figure()._suptitle.get_text()
    assert title.startswith("bowl, induced metric: flow of (x, y) from (1, 2)\n")
    assert f"reached {path.reached}" in title
