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

import itertools
import json

import numpy as np
import pytest
import sympy as sp

from gradflow import GradflowError, certify, critical_sets, loss_model
from gradflow._symbolic.facts import real_point, solve_gradient
from gradflow.systems.markov.reduced import canonical

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
    sets = critical_sets(
        model, box=model.search_box({"x": (0, 2), "y": (-1, 1)}), starts=0, certify=True
    )
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
    assert 0 < c.metadata()["unresolved"]["volume"] < 1e-3
    assert "NOT complete" in c.text()


def test_a_removable_singularity_is_left_unresolved_and_the_true_minimum_certified():
    c = certified("((x**2 - 1)/(x - 1))**2 + y**2", [[-3, 3], [-1, 1]], min_width=1 / 64)
    assert not c.complete
    (minimum,) = c.isolated
    assert inside(np.array([-1.0, 0.0]), minimum.enclosure)
    assert (minimum.kind, minimum.morse_index) == ("local_min", 0)  # SymPy proves no L ≥ 0
    boxes = c.unresolved
    assert any(inside(np.array([1.0, 0.0]), b) for b in boxes)  # off y = 0, ∂L/∂y = 2y ≠ 0
    report = c.metadata()["unresolved"]
    assert report["count"] == len(boxes) and report["hull"][0][0] <= 1 <= report["hull"][0][1]


def test_points_the_search_misses_are_added_from_the_certificate():
    """``10¹²(eˣ - 1)²(eˣ - a)² + y²``, ``a = e^{1/1000}``: minima at ``x = 0`` and ``x = 1/1000``,
    a saddle where ``d/dx (eˣ - 1)(eˣ - a) = eˣ(2eˣ - 1 - a) = 0``, ``x = ln((1 + a)/2)``
    (``sympy.solve`` does not apply: the gradient is not rational in ``x``)."""
    model = loss_model("10**12*(exp(x) - 1)**2*(exp(x) - exp(1/1000))**2 + y**2").bind()
    box = {"x": (-1, 1), "y": (-1, 1)}
    plain = critical_sets(model, box=model.search_box(box), starts=64)
    sets = critical_sets(model, box=model.search_box(box), starts=64, certify=True)
    assert sets.certificate.complete
    saddle = np.log((1 + np.exp(1e-3)) / 2)
    samples = sorted((round(float(s.sample[0]), 9), s.kind) for s in sets)
    assert samples == [(0.0, "global_min"), (round(saddle, 9), "saddle"), (0.001, "global_min")]
    listed = np.concatenate([s.points for s in plain])
    added = [s for s in sets if s.name == "certified"]
    assert len(added) == len(sets.certificate.missing(listed)) > 0
    assert "certificate" in sets.metadata() and "complete: proven" in sets.table()


def test_a_point_the_search_reports_where_the_gradient_is_proven_nonzero_is_dropped():
    """``(x − 1)³/3 + 10⁻¹²x + y²/2`` has no critical point (``∂L/∂x = (x − 1)² + 10⁻¹² > 0``).
    At ``(1, 0)`` the gradient ``(10⁻¹², 0)`` is below what the search can tell from rounding
    (a Newton step leaves ``10⁻¹²``, under ``10⁻¹²`` times the gradient scale, unexplained), so
    the search reports a degenerate point there; the certificate proves ``∇L ≠ 0`` on every box
    and the point is dropped, with a caveat saying so."""
    model = loss_model("(x - 1)**3/3 + x/10**12 + y**2/2").bind()
    box = {"x": (-1, 3), "y": (-1, 1)}
    assert [s.name for s in critical_sets(model, box=model.search_box(box))] == ["numerical"]
    sets = critical_sets(model, box=model.search_box(box), certify=True)
    assert len(sets) == 0 and sets.certificate.complete and not sets.certificate.isolated
    assert len(sets.caveats) == 1 and "proves ∇L ≠ 0" in sets.caveats[0]
    assert sets.metadata()["caveats"] == list(sets.caveats)
    assert sets.caveats[0] in sets.table()


def test_certify_refuses_a_slice_and_a_loss_without_sympy():
    model = loss_model(DOUBLE_WELL).bind()
    with pytest.raises(GradflowError, match="slice"):
        critical_sets(model, box=model.search_box(None, {"y": 0.0}), certify=True)
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


def cardano(a: float) -> list[float]:
    """The real roots of ``x³ − 3x + a = 0`` for ``|a| < 2``, ascending: with ``x = 2cos θ``,
    ``8cos³θ − 6cos θ = 2cos 3θ = −a``, so ``θ = (arccos(−a/2) + 2πk)/3``, ``k = 0, 1, 2``."""
    theta = (np.arccos(-a / 2) + 2 * np.pi * np.arange(3)) / 3
    return sorted(2 * np.cos(theta))


def within(value: float, bounds) -> bool:
    """Whether ``value``, computed in floating point from a formula (a few ulps off), lies in
    ``bounds`` widened by ``10⁻¹⁵``."""
    return bounds[0] - 1e-15 <= value <= bounds[1] + 1e-15


def quartic(x: float, a: float) -> float:
    return x**4 / 4 - 3 * x**2 / 2 + a * x


def test_roots_written_with_i_are_certified_on_the_command_line(cli):
    """``x⁴/4 − 3x²/2 + x + y²/2``: ``∂L/∂x = x³ − 3x + 1`` has three real roots
    ``2cos(2πk/9 + 2π/9)`` (:func:`cardano`, ``a = 1``: −1.879385, 0.347296, 1.532089), which
    ``sympy.solve`` writes with complex cube roots (casus irreducibilis); ``∂L/∂y = y``.
    ``L'' = 3x² − 3`` is positive at ``±1.53…, −1.88`` (minima) and negative at 0.347 (a saddle).
    The loss is a coercive polynomial (leading form ``x⁴/4 + y²/2``), so its certified infimum
    is proven: ``L(−1.879385, 0) = −4.0586`` below ``L(1.532089, 0) = −0.6114``, the one global
    minimum."""
    run = cli(
        "critical", "--loss", "x**4/4 - 3*x**2/2 + x + y**2/2", "--params", "x,y",
        "--box", "-3", "3", "-1", "3", "--certify", "--json",
    )  # fmt: skip
    assert run.code == 0, run.err
    report = json.loads(run.out)
    assert report["certificate"]["complete"]
    sets = sorted(report["critical_sets"], key=lambda s: s["sample"][0])
    roots = cardano(1.0)
    assert [s["kind"] for s in sets] == ["global_min", "saddle", "local_min"]
    assert all(s["name"].startswith("sympy.solve") for s in sets)
    np.testing.assert_allclose([s["sample"] for s in sets], [[r, 0] for r in roots], atol=1e-12)
    np.testing.assert_allclose([s["loss"] for s in sets], [quartic(r, 1) for r in roots])
    isolated = sorted(report["certificate"]["isolated"], key=lambda c: c["point"][0])
    assert [c["morse_index"] for c in isolated] == [0, 1, 0]
    for c, r in zip(isolated, roots):
        assert within(r, c["enclosure"][0])


def test_roots_written_with_i_in_three_parameters_with_a_hyperparameter():
    """``x⁴/4 − 3x²/2 + ax + y²/2 + (z − 1)²`` at ``a = −1``: the roots of ``x³ − 3x − 1``,
    ``2cos 20°, 2cos 100°, 2cos 140°`` (1.879385, −0.347296, −1.532089), at ``y = 0, z = 1``;
    minima at the outer two (``3x² − 3 > 0``), a saddle between.  ``sympy.solve`` solves with
    ``a`` a symbol, so at ``a = −1`` even the root without an explicit ``I`` takes the square
    root of ``729a² − 2916 < 0``.  ``L(1.879385, 0, 1) = −4.0586`` is the proven infimum of the
    coercive polynomial (``L(−1.532089, 0, 1) = −0.6114``): a global and a local minimum."""
    model = loss_model(
        "x**4/4 - 3*x**2/2 + a*x + y**2/2 + (z - 1)**2", params=["x", "y", "z"], hyperparams=["a"]
    ).bind(a=-1.0)
    sets = critical_sets(model, box=model.search_box({"x": (-3, 3), "y": (-1, 1)}), certify=True)
    assert sets.certificate.complete
    ordered = sorted(sets, key=lambda s: s.sample[0])
    assert [s.kind for s in ordered] == ["local_min", "saddle", "global_min"]
    assert all(s.name.startswith("sympy.solve") for s in ordered)
    np.testing.assert_allclose(
        [s.sample for s in ordered], [[r, 0, 1] for r in cardano(-1.0)], atol=1e-12
    )


def test_the_real_value_of_a_root_written_with_i_is_an_isolating_interval():
    """Each ``sympy.solve`` solution of ``x⁴/4 − 3x²/2 + x + y²/2`` is proven real, its bounds a
    few ulps around ``2cos(…)``.  ``∂L/∂x = x³ + x + 1`` of ``x⁴/4 + x²/2 + x + y²/2`` has one
    real root, Cardano's ``∛(−1/2 + √(31/108)) + ∛(−1/2 − √(31/108))``, and a complex pair,
    which is proven not real."""
    x, y = sp.symbols("x y", real=True)
    loss = x**4 / 4 - 3 * x**2 / 2 + x + y**2 / 2
    found = []
    for solution in solve_gradient((x, y), loss, []).solutions:
        bounds = real_point((x, y), loss, tuple(solution.items()), ())
        assert bounds is not None and np.all(bounds[:, 1] - bounds[:, 0] < 1e-14)
        found.append(bounds)
    for root, bounds in zip(cardano(1.0), sorted(found, key=lambda b: b[0, 0])):
        assert within(root, bounds[0]) and bounds[1, 0] <= 0 <= bounds[1, 1]
    one_real = x**4 / 4 + x**2 / 2 + x + y**2 / 2
    solutions = solve_gradient((x, y), one_real, []).solutions
    points = [real_point((x, y), one_real, tuple(s.items()), ()) for s in solutions]
    assert len(points) == 3 and sum(p is None for p in points) == 2
    (real,) = [p for p in points if p is not None]
    root = np.cbrt(-1 / 2 + np.sqrt(31 / 108)) + np.cbrt(-1 / 2 - np.sqrt(31 / 108))
    assert within(root, real[0])


def trig_roots(p: float, q: float) -> list[float]:
    """The three real roots of ``x³ + px + q = 0`` (``4p³ + 27q² < 0``), ascending (Viète):
    ``x = 2√(−p/3) cos(⅓ arccos((3q/2p)√(−3/p)) − 2πk/3)``."""
    m = 2 * np.sqrt(-p / 3)
    phi = np.arccos(3 * q / (2 * p) * np.sqrt(-3 / p)) / 3
    return sorted(m * np.cos(phi - 2 * np.pi * np.arange(3) / 3))


@pytest.mark.slow
@pytest.mark.parametrize("dim", [2, 3])
def test_styblinski_tang_is_certified(dim: int):
    """Styblinski–Tang, ``Σ (xᵢ⁴ − 16xᵢ² + 5xᵢ)/2``: each ``∂L/∂xᵢ = 2xᵢ³ − 16xᵢ + 5/2`` vanishes
    at the three roots of ``x³ − 8x + 5/4`` (:func:`trig_roots`: −2.903534, 0.156731, 2.746803),
    so ``3^dim`` critical points; ``∂²L/∂xᵢ² = 6xᵢ² − 16`` is negative only at the middle root,
    so the Morse index is the number of coordinates there (minima: none; maximum: all)."""
    names = "xyz"[:dim]
    text = " + ".join(f"({v}**4 - 16*{v}**2 + 5*{v})/2" for v in names)
    model = loss_model(text, params=list(names)).bind()
    sets = critical_sets(model, box=model.search_box({v: (-5, 5) for v in names}), certify=True)
    assert sets.certificate.complete
    roots = trig_roots(-8.0, 1.25)
    expected = {}
    for point in itertools.product(range(3), repeat=dim):
        index = sum(k == 1 for k in point)
        kind = "local_min" if index == 0 else "local_max" if index == dim else "saddle"
        expected[tuple(round(roots[k], 9) for k in point)] = kind
    found = {tuple(np.round(s.sample, 9)): s.kind for s in sets}
    assert found == expected
    assert all(s.name.startswith("sympy.solve") for s in sets)


@pytest.mark.slow
def test_himmelblau_and_beale_are_certified():
    """Himmelblau's ``(x² + y − 11)² + (x + y² − 7)²`` in [−5, 5]²: nine critical points
    (Himmelblau, *Applied Nonlinear Programming*, 1972): four minima with ``L = 0`` (among them
    ``(3, 2)``), four saddles and a maximum near ``(−0.270845, −0.923039)``.  Beale's
    ``(1.5 − x + xy)² + (2.25 − x + xy²)² + (2.625 − x + xy³)²``: its minimum ``(3, 1/2)``
    (``L = 0``), the saddle ``(0, 1)`` (on ``x = 0``, ``∂L/∂y = 0`` and ``∂L/∂x = (y − 1)(5.25y²
    + 9.75y + 12.75)``, whose quadratic has no real root) and one more saddle whose coordinates
    ``sympy.solve`` writes with cube roots; the other two solutions are complex."""
    himmelblau = loss_model("(x**2 + y - 11)**2 + (x + y**2 - 7)**2").bind()
    box = {"x": (-5, 5), "y": (-5, 5)}
    sets = critical_sets(himmelblau, box=himmelblau.search_box(box), certify=True)
    assert sets.certificate.complete
    kinds = sorted(s.kind for s in sets)
    assert kinds == ["global_min"] * 4 + ["local_max"] + ["saddle"] * 4
    (top,) = [s for s in sets if s.kind == "local_max"]
    np.testing.assert_allclose(top.sample, [-0.270845, -0.923039], atol=1e-6)
    assert any(np.allclose(s.sample, [3, 2]) for s in sets)
    beale = loss_model("(3/2 - x + x*y)**2 + (9/4 - x + x*y**2)**2 + (21/8 - x + x*y**3)**2").bind()
    sets = critical_sets(beale, box=beale.search_box(box), certify=True)
    assert sets.certificate.complete
    assert sorted(s.kind for s in sets) == ["global_min", "saddle", "saddle"]
    samples = sorted(tuple(np.round(s.sample, 12)) for s in sets)
    assert (0.0, 1.0) in samples and (3.0, 0.5) in samples
    assert all(s.name.startswith("sympy.solve") for s in sets)
