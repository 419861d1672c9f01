"""Streamlines computed in one batch against matplotlib's ``streamplot``, the reference: the
same streamlines, point for point, on fields with closed orbits, saddles, zeros and holes."""

import matplotlib
import numpy as np
import pytest

from gradflow._output.streamlines import streamlines

matplotlib.use("Agg")

XS = np.linspace(-2.5, 2.0, 80)
YS = np.linspace(-1.0, 1.6, 61)
X, Y = np.meshgrid(XS, YS)
HOLE = np.where((np.abs(X + 0.3) < 0.2) & (np.abs(Y - 0.4) < 0.2), np.nan, 1.0)

FIELDS = {
    "rotation": (-Y, X, 1.2),
    "saddle": (X, -Y, 1.2),
    "double well": (-(X**3 - X), -Y, 1.2),
    "double well with a hole": (-(X**3 - X) * HOLE, -Y, 1.2),
    "zero on a line": (np.zeros_like(X), Y * (Y - 0.5), 1.0),
    "waves, density 2": (np.sin(3 * Y), np.cos(2 * X), 2.0),
}


@pytest.mark.parametrize("name", FIELDS)
def test_same_streamlines_and_arrows_as_streamplot(name):
    import matplotlib.pyplot as plt

    u, v, density = FIELDS[name]
    fig, ax = plt.subplots()
    reference = ax.streamplot(XS, YS, u, v, density=density)
    plt.close(fig)
    ours = streamlines(XS, YS, u, v, density=density)
    expected = reference.lines.get_segments()
    assert len(ours) == len(expected) > 10
    for line, segment in zip(ours, expected):
        np.testing.assert_array_equal(line.points, segment)


def test_portrait_streamlines_drawn_as_streamplot_draws_them():
    """Lines and arrows together: the same pixels as ``streamplot`` with the portrait's style."""
    import matplotlib.pyplot as plt

    from gradflow._output.draw import STREAM_COLOR, draw_streamlines
    from gradflow._portrait.portrait import STREAM_DENSITY

    u, v, _ = FIELDS["double well with a hole"]
    pictures = []
    for draw in (
        lambda ax: ax.streamplot(
            XS, YS, u, v, color=STREAM_COLOR, linewidth=0.6, density=1.2, arrowsize=0.8
        ),
        lambda ax: draw_streamlines(ax, streamlines(XS, YS, u, v, STREAM_DENSITY), XS, YS),
    ):
        fig, ax = plt.subplots(figsize=(4, 3), dpi=100)
        draw(ax)
        fig.canvas.draw()
        pictures.append(np.asarray(fig.canvas.buffer_rgba()).copy())
        plt.close(fig)
    assert pictures[0].std() > 0
    np.testing.assert_array_equal(pictures[0], pictures[1])
