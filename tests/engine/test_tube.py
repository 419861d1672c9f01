"""The certified tube around a line of minima, on losses worked out by hand.

- ``L = (1 + w²) e²/2``: ``∇L = ((1 + w²) e, w e²)`` vanishes on the line ``e = 0``, whose
  transverse curvature ``∂²L/∂e² = 1 + w² ≥ 1`` never vanishes; ``∂²L/∂e∂w = 2we`` is at most
  ``2ρ|w|`` on the tube ``|e| ≤ ρ``.  A flow from ``(e₀, w₀)`` has ``|e|`` decaying at least like
  ``e^{−t}`` and ``w`` moving by at most ``2ρ|w|·|e₀|``: every end near the line is proven.
- ``L = w² e²/2``: the same line, but its transverse curvature ``w²`` vanishes at ``w = 0``, so
  the segments holding ``w = 0`` are not proven; ends at ``w = ±1`` are.
"""

from __future__ import annotations

import threading

import numpy as np

import gradflow._critical.tube as tube_module
from gradflow import loss_model
from gradflow._critical.branch_bound import Search
from gradflow._critical.interval_system import bound_system
from gradflow._critical.tube import SEGMENTS, tube
from gradflow._symbolic import budget

SPAN = np.array([[0.0, -1.0], [0.0, 1.0]])


def test_a_line_with_positive_transverse_curvature_gets_a_tube_everywhere() -> None:
    landscape = loss_model("(1 + w**2)*e**2/2", ["e", "w"]).bind()
    t = tube(landscape, np.array([0.0, 0.3]), SPAN)
    assert t is not None and t.normal == (0,) and t.free == 1
    assert np.all(t.kappa > 0.99) and np.all(t.kappa <= 2.0)  # 1 + w² on [−1, 1]
    assert np.all(t.mixed <= 2 * t.radius * np.abs(t.edges).max() * (1 + 1e-6))  # 2ρ max|w|
    ends = np.array([[1e-6, -0.9], [1e-6, 0.0], [-1e-8, 0.7], [2 * t.radius, 0.0]])
    assert t.holds(ends, np.zeros(4)).tolist() == [True, True, True, False]


def test_the_segments_where_the_curvature_vanishes_are_not_proven() -> None:
    landscape = loss_model("w**2*e**2/2", ["e", "w"]).bind()
    t = tube(landscape, np.array([0.0, 0.5]), SPAN)
    assert t is not None
    middle = SEGMENTS // 2  # the segments meeting at w = 0
    assert t.kappa[middle - 1] == 0 and t.kappa[middle] == 0
    assert t.kappa[0] > 0.9 and t.kappa[-1] > 0.9  # w² near ±1
    ends = np.array([[1e-6, 0.0], [1e-6, -0.98], [1e-6, 0.98]])
    assert t.holds(ends, np.zeros(3)).tolist() == [False, True, True]


def test_a_tube_is_proven_once_and_read_back_in_another_process(tmp_path, monkeypatch) -> None:
    """The second landscape (as a new process would bind it) reads the first one's proof from
    the cache folder, equal to it; another hyperparameter value is another proof, with its own
    curvature: κ ≥ k on ``(k + w²) e²/2``."""
    monkeypatch.setenv("GRADFLOW_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(budget, "_RAN_OUT", threading.Event())  # no step has run out here
    model = loss_model("(k + w**2)*e**2/2", ["e", "w"], hyperparams=["k"])
    first = tube(model.bind(k=1.0), np.array([0.0, 0.3]), SPAN)
    (kept,) = (tmp_path / "tubes").iterdir()
    with monkeypatch.context() as no_proof:
        no_proof.setattr(tube_module, "_proven", None)  # read back, or this call fails
        again = tube(model.bind(k=1.0), np.array([0.0, 0.3]), SPAN)
    assert again is not first and again.normal == first.normal and again.free == first.free
    for name in ("value", "edges", "kappa", "mixed", "radius"):
        np.testing.assert_array_equal(getattr(again, name), getattr(first, name))
    other = tube(model.bind(k=3.0), np.array([0.0, 0.3]), SPAN)
    assert len(list((tmp_path / "tubes").iterdir())) == 2
    assert np.all(other.kappa > 2.99) and np.all(first.kappa < 2.01)
    kept.write_bytes(b"not an archive")  # a file that cannot be read is proven again
    rewritten = tube(model.bind(k=1.0), np.array([0.0, 0.3]), SPAN)
    np.testing.assert_array_equal(rewritten.kappa, first.kappa)


def test_the_interval_hessian_encloses_every_entry_of_the_exact_one() -> None:
    """``L = x²y + sin(xz) + e^{y − 2z}``, whose Hessian is worked out by hand: ``∂²/∂x² = 2y −
    z² sin(xz)``, ``∂²/∂x∂y = 2x``, ``∂²/∂x∂z = cos(xz) − xz sin(xz)``, ``∂²/∂y² = e^{y−2z}``,
    ``∂²/∂y∂z = −2e^{y−2z}``, ``∂²/∂z² = −x² sin(xz) + 4e^{y−2z}``.  Its interval form over a box
    of side 10⁻³ holds the exact Hessian at the box's corners and centre, above and below the
    diagonal alike, and is tight (each entry within 0.05)."""
    landscape = loss_model("x**2*y + sin(x*z) + exp(y - 2*z)", ["x", "y", "z"]).bind()
    system, hyper = bound_system(landscape)
    centre = np.array([0.3, -0.2, 0.5])
    box = np.stack([centre - 5e-4, centre + 5e-4], axis=1)
    bounds = Search(system, hyper, box, 1, 1e-7).jacobian(box)

    def exact(x: float, y: float, z: float) -> np.ndarray:
        s, c, g = np.sin(x * z), np.cos(x * z), np.exp(y - 2 * z)
        xz = c - x * z * s
        return np.array(
            [[2 * y - z**2 * s, 2 * x, xz], [2 * x, g, -2 * g], [xz, -2 * g, -(x**2) * s + 4 * g]]
        )

    corners = [box[np.arange(3), list(k)] for k in np.ndindex(2, 2, 2)]
    for point in [centre, *corners]:
        h = exact(*point)
        assert np.all(bounds[..., 0] <= h) and np.all(h <= bounds[..., 1])
    assert np.all(bounds[..., 1] - bounds[..., 0] < 0.05)
