"""The certificate on losses whose critical points are known by hand.

- ``(x² - 1)² + y²``: ``∇L = (4x(x² - 1), 2y)`` vanishes at ``(-1, 0), (0, 0), (1, 0)`` only;
  Hessians ``diag(8, 2)`` at the minima, ``diag(-4, 2)`` at the saddle.
- ``((x - 1)(x - 1.001))² + y²``: with ``f = (x - 1)(x - 1.001)``, ``∂L/∂x = 2 f f'`` vanishes at
  the roots of ``f`` (``L = 0``, ``L_xx = 2f'² = 2·10⁻⁶ > 0``) and at ``f' = 0``, ``x = 1.0005``,
  where ``L = (0.0005²)² = 6.25·10⁻¹⁴`` and ``L_xx = 2 f f'' = -10⁻⁶``: a saddle in the plane
  (a maximum along ``x``, a minimum along ``y``).
- ``(1 - xy)²``: ``∇L = -2(1 - xy)(y, x)`` vanishes on the hyperbola ``xy = 1`` and at ``(0, 0)``,
  where the Hessian ``[[0, -2], [-2, 0]]`` has eigenvalues ``±2``: a saddle.
- ``|x| + y²``: ``∇L = (sign x, 2y)`` jumps across ``x = 0``; the only candidate is the kink
  point ``(0, 0)``, which no smooth test can settle.
- ``((x² - 1)/(x - 1))² + y²`` equals ``(x + 1)² + y²`` except on ``x = 1``, where it is
  undefined: one minimum ``(-1, 0)``, and the point ``(1, 0)`` cannot be settled (SymPy proves
  no lower bound of a quotient, so the minimum is reported as local).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from gradflow import GradflowError, certify, critical_sets, loss_model
from gradflow.models.markov import canonical

DOUBLE_WELL = "(x**2 - 1)**2 + y**2"
CLOSE_WELLS = "((x - 1)*(x - 1001/1000))**2 + y**2"
HYPERBOLA = "(1 - x*y)**2"


def certified(text: str, box: list[list[float]], **options):
    return certify(loss_model(text).bind(), np.array(box, dtype=float), **options)


def inside(point, box) -> bool:
    return bool(np.all((box[:, 0] <= point) & (point <= box[:, 1])))


@pytest.fixture(scope="module")
def double_well():
    return certified(DOUBLE_WELL, [[-2, 2], [-2, 2]])


def test_the_double_well_has_exactly_three_critical_points_each_proven_unique(double_well):
    c = double_well
    assert c.complete and not len(c.unresolved) and not c.explained
    exact = [(-1.0, 0.0), (0.0, 0.0), (1.0, 0.0)]
    assert len(c.isolated) == 3
    for point, truth, kind, index in zip(
        c.isolated, exact, ["global_min", "saddle", "global_min"], [0, 1, 0]
    ):
        assert inside(np.array(truth), point.enclosure)
        assert np.max(point.enclosure[:, 1] - point.enclosure[:, 0]) < 1e-12
        assert (point.kind, point.morse_index) == (kind, index)
    assert "complete: proven" in c.text()


def test_a_reported_point_where_the_gradient_is_proven_nonzero_is_not_accounted_for(
    double_well,
):
    held = double_well.accounts_for(np.array([[1.0, 0.0], [0.0, 0.0], [0.5, 0.5]]))
    assert held.tolist() == [True, True, False]


def test_the_certificate_does_not_change_with_the_loss_scale(double_well):
    scaled = certified(f"(1/1000000)*({DOUBLE_WELL})", [[-2, 2], [-2, 2]])
    assert scaled.complete
    assert [c.kind for c in scaled.isolated] == [c.kind for c in double_well.isolated]
    np.testing.assert_allclose(
        [c.point for c in scaled.isolated], [c.point for c in double_well.isolated], atol=1e-12
    )


def test_mpmath_intervals_prove_the_same(double_well):
    c = certified(DOUBLE_WELL, [[-2, 2], [-2, 2]], interval="mpmath")
    assert c.complete and "mpmath" in c.method
    np.testing.assert_allclose(
        [p.point for p in c.isolated], [p.point for p in double_well.isolated], atol=1e-12
    )


def test_three_critical_points_a_thousandth_apart_are_certified_and_separated():
    c = certified(CLOSE_WELLS, [[0, 2], [-1, 1]])
    assert c.complete
    assert [round(float(p.point[0]), 9) for p in c.isolated] == [1.0, 1.0005, 1.001]
    for p in c.isolated:
        assert inside(np.array([p.point[0], 0.0]), p.enclosure)
        assert abs(p.point[1]) < 1e-12
    assert [(p.kind, p.morse_index) for p in c.isolated] == [
        ("global_min", 0),
        ("saddle", 1),
        ("global_min", 0),
    ]
    assert c.isolated[1].loss == pytest.approx(0.0005**4, rel=1e-6)
    a, b, d = (p.unique_in for p in c.isolated)
    for first, second in [(a, b), (b, d), (a, d)]:
        assert np.any((first[:, 1] < second[:, 0]) | (second[:, 1] < first[:, 0]))


def test_the_proven_morse_index_corrects_a_saddle_reported_as_a_minimum():
    """``L = 6.25·10⁻¹⁴`` at ``x = 1.0005`` is within the classifier's tolerance of ``inf L = 0``;
    the Hessian eigenvalue ``-10⁻⁶`` there, proven negative, makes it a saddle."""
    model = loss_model(CLOSE_WELLS).bind()
    sets = critical_sets(model, bounds={"x": (0, 2), "y": (-1, 1)}, starts=0, certify=True)
    kinds = sorted((round(float(s.sample[0]), 9), s.kind) for s in sets)
    assert kinds == [(1.0, "global_min"), (1.0005, "saddle"), (1.001, "global_min")]


def test_the_hyperbola_is_explained_and_the_saddle_certified():
    c = certified(HYPERBOLA, [[-3, 3], [-3, 3]])
    assert c.complete
    (saddle,) = c.isolated
    assert inside(np.zeros(2), saddle.enclosure)
    assert (saddle.kind, saddle.morse_index) == ("saddle", 1)
    (curve,) = c.explained
    assert curve.equation == "x = 1/y"
    corners = np.stack([np.outer(b[0], b[1]).ravel() for b in curve.boxes])
    assert np.all((corners.min(axis=1) <= 1) & (corners.max(axis=1) >= 1))


def test_a_kink_is_left_unresolved_never_called_complete():
    c = certified("Abs(x) + y**2", [[-1, 1], [-1, 1]], min_width=1e-4)
    assert not c.complete and not c.isolated
    assert all(np.any(np.all((b[:, 0] <= 0) & (0 <= b[:, 1]), axis=0)) for b in c.unresolved)
    assert 0 < c.to_dict()["unresolved"]["volume"] < 1e-3
    assert "NOT complete" in c.text()


def test_a_removable_singularity_is_left_unresolved_and_the_true_minimum_certified():
    c = certified("((x**2 - 1)/(x - 1))**2 + y**2", [[-3, 3], [-1, 1]], min_width=1 / 64)
    assert not c.complete
    (minimum,) = c.isolated
    assert inside(np.array([-1.0, 0.0]), minimum.enclosure)
    assert (minimum.kind, minimum.morse_index) == ("local_min", 0)  # SymPy proves no L ≥ 0
    boxes = c.unresolved
    assert any(inside(np.array([1.0, 0.0]), b) for b in boxes)  # off y = 0, ∂L/∂y = 2y ≠ 0
    report = c.to_dict()["unresolved"]
    assert report["count"] == len(boxes) and report["hull"][0][0] <= 1 <= report["hull"][0][1]


def test_points_the_search_misses_are_added_from_the_certificate():
    """``10¹²(eˣ - 1)²(eˣ - a)² + y²``, ``a = e^{1/1000}``: minima at ``x = 0`` and ``x = 1/1000``,
    a saddle where ``d/dx (eˣ - 1)(eˣ - a) = eˣ(2eˣ - 1 - a) = 0``, ``x = ln((1 + a)/2)``
    (``sympy.solve`` does not apply: the gradient is not rational in ``x``)."""
    model = loss_model("10**12*(exp(x) - 1)**2*(exp(x) - exp(1/1000))**2 + y**2").bind()
    box = {"x": (-1, 1), "y": (-1, 1)}
    plain = critical_sets(model, bounds=box, starts=64)
    sets = critical_sets(model, bounds=box, starts=64, certify=True)
    assert sets.certificate.complete
    saddle = np.log((1 + np.exp(1e-3)) / 2)
    samples = sorted((round(float(s.sample[0]), 9), s.kind) for s in sets)
    assert samples == [(0.0, "global_min"), (round(saddle, 9), "saddle"), (0.001, "global_min")]
    listed = np.concatenate([s.points for s in plain])
    added = [s for s in sets if s.name == "certified"]
    assert len(added) == len(sets.certificate.missing(listed)) > 0
    assert "certificate" in sets.metadata() and "complete: proven" in sets.table()


def test_a_point_the_search_reports_where_the_gradient_is_proven_nonzero_is_an_error():
    """``10⁻⁹x + y²`` has no critical point (``∂L/∂x = 10⁻⁹``); a search that accepts
    ``‖∇L‖ ≤ 10⁻⁷`` reports the line ``y = 0``, and the certificate refutes it."""
    model = loss_model("x/10**9 + y**2").bind()
    box = {"x": (-1, 1), "y": (-1, 1)}
    if len(critical_sets(model, bounds=box, starts=16)):
        with pytest.raises(GradflowError, match="proves ∇L ≠ 0"):
            critical_sets(model, bounds=box, starts=16, certify=True)
    else:
        sets = critical_sets(model, bounds=box, starts=16, certify=True)
        assert sets.certificate.complete and not sets.certificate.isolated


def test_certify_refuses_a_slice_and_a_loss_without_sympy():
    model = loss_model(DOUBLE_WELL).bind()
    with pytest.raises(GradflowError, match="slice"):
        critical_sets(model, fixed={"y": 0.0}, certify=True)
    with pytest.raises(GradflowError, match="interval arithmetic 'ball'"):
        certify(model, np.array([[-1.0, 1.0], [-1.0, 1.0]]), interval="ball")


def test_critical_certify_on_the_command_line(cli):
    run = cli("critical", "--loss", HYPERBOLA, "--certify", "--json")
    assert run.code == 0
    certificate = json.loads(run.out)["certificate"]
    assert set(certificate) >= {"complete", "isolated", "explained", "unresolved", "method"}
    assert certificate["complete"] and certificate["unresolved"]["count"] == 0
    assert [p["kind"] for p in certificate["isolated"]] == ["saddle"]
    cli.assert_rejected(
        ["critical", "--loss", DOUBLE_WELL, "--certify", "--fixed", "y=0"], "--certify"
    )


def test_the_canonical_saddle_is_explained_by_the_line_e_0():
    """Near ``(0, -1/√2)`` the whole Hessian of ``L(e, w) = Φ(e²(1 + 2w|w|))`` vanishes, so no
    Krawczyk test applies; ``∂L/∂w = 4e²|w|Φ'(c)`` with ``Φ'(c) ≠ 0`` for ``c`` near 0 (``c* ≠ 0``
    when ``p + q ≠ 1``) forces ``e = 0``."""
    model = canonical(0.7, 0.6)
    c = certify(model, np.array([[-0.5, 0.5], [-1.0, -0.4]]))
    assert c.complete and not c.isolated
    (line,) = c.explained
    assert line.name == "e = 0" and "saddle (0, -1/√2)" in line.points


@pytest.mark.slow
def test_the_canonical_model_is_certified_complete():
    """``∇L = Φ'(c)·(2e(1 + 2w|w|), 4e²|w|)``: zero on Γ* (``Φ'(c) = 0``, ``c = c*``) and on
    ``e = 0`` (with the saddle), nowhere else."""
    model = canonical(0.7, 0.6)
    c = certify(model, np.array([[-3.0, 3.0], [-3.0, 3.0]]))
    assert c.complete and not c.isolated
    sets = {e.name: e for e in c.explained}
    assert set(sets) == {"Γ*", "e = 0"}
    assert "saddle (0, -1/√2)" in sets["e = 0"].points
    assert all(b[0, 0] <= 0 <= b[0, 1] for b in sets["e = 0"].boxes)
    c_star = model.references["c_star"]
    for b in sets["Γ*"].boxes:
        e2 = [0.0 if b[0, 0] <= 0 <= b[0, 1] else min(b[0] ** 2), max(b[0] ** 2)]
        gain = [1 + 2 * w * abs(w) for w in b[1]]  # increasing in w
        corners = [s * g for s in e2 for g in gain]
        assert min(corners) <= c_star <= max(corners)
