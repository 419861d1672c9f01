"""The picture ``gradflow sweep`` writes (:func:`gradflow._output.sweep_picture.sweep_figure`)
against the paper's phase diagram of the same ``(p, q)`` sweep, both from shares given by hand:
one orientation (``p`` across, ``q`` up), labelled colour bars, and the starts on a stable
manifold (measure zero) on a scale of their own instead of two near-empty panels.
"""

from __future__ import annotations

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg

from gradflow import LABELS
from gradflow._output.sweep_picture import sweep_figure
from gradflow.systems.figures import render
from gradflow.systems.markov import figure_phase_diagram as phase

P, Q = np.array([0.2, 0.8]), np.array([0.1, 0.5, 0.9])


def _shares() -> np.ndarray:
    """Over p ∈ {0.2, 0.8} (two values) and q ∈ {0.1, 0.5, 0.9} (three): the global minimum's
    share is (10 p + q)/10 (it tells p from q), a saddle takes 0.01 and a maximum 0.02 of the
    grid everywhere (their stable manifolds), the local minimum the rest."""
    fractions = np.zeros((2, 3, len(LABELS)))
    share = (10 * P[:, None] + Q[None, :]) / 10
    fractions[..., LABELS.index("global_min")] = share
    fractions[..., LABELS.index("saddle")] = 0.01
    fractions[..., LABELS.index("local_max")] = 0.02
    fractions[..., LABELS.index("local_min")] = 1 - share - 0.03
    return fractions


def _picture():
    fractions = _shares()
    return sweep_figure(
        {"p": P, "q": Q}, {n: fractions[..., i] for i, n in enumerate(LABELS)}, [], "by hand"
    )


def _panels(fig) -> list:
    return [ax for ax in fig.get_axes() if ax.get_label() != "<colorbar>"]


def _bar_labels(fig) -> list[str]:
    bars = [ax for ax in fig.get_axes() if ax.get_label() == "<colorbar>"]
    return [bar.get_xlabel() or bar.get_ylabel() for bar in bars]


def test_the_sweep_picture_and_the_phase_diagram_both_draw_p_across_and_q_up():
    """In both pictures the horizontal axis is p and the vertical q; each image's bottom row
    (q = 0.1) holds the global share at p = 0.2 and p = 0.8: 0.21, 0.81.  Every colour bar has
    a label with its unit in brackets, the loss gap's in nats."""
    arrays = {"fractions": _shares(), "label_names": np.array(LABELS), "axis_p": P, "axis_q": Q}
    record = {"box": [-3, 3, -3, 3], "grid": 5, "bifurcations": []}
    diagram = render(phase, phase.Data(phase.Config(), arrays, record, gap=np.ones((2, 3))))
    for fig in (_picture(), diagram):
        FigureCanvasAgg(fig).draw()
        panels = _panels(fig)
        assert {ax.get_xlabel() for ax in panels} == {"$p$"}
        assert panels[0].get_ylabel() == "$q$"
        image = (panels[0].images or panels[0].collections)[0]  # imshow, pcolormesh
        np.testing.assert_allclose(np.reshape(image.get_array(), (3, 2))[0], [0.21, 0.81])
        labels = _bar_labels(fig)
        assert labels and all("(" in label for label in labels), labels
    assert "(nats)" in _bar_labels(diagram)[1]


def test_the_sweep_picture_draws_the_stable_manifolds_on_a_scale_of_their_own():
    """A saddle's 0.01 and a maximum's 0.02 of the grid are measure zero: not two panels near
    0 on the 0–1 scale of the basins but one panel of their sum, 0.03, on a scale from 0 to
    0.03; the basins (global and local minimum) keep 0–1."""
    panels = _panels(_picture())
    assert [ax.get_title().split("\n")[0] for ax in panels] == [
        "share reaching global_min",
        "share reaching local_min",
        "share on a stable manifold (saddle, local_max):",
    ]
    limits = [ax.collections[0].get_clim() for ax in panels]
    np.testing.assert_allclose(limits, [(0, 1), (0, 1), (0, 0.03)])
    np.testing.assert_allclose(panels[2].collections[0].get_array(), 0.03)
