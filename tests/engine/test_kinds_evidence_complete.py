"""Completeness of the numerical search: the box's centre is always a start, the images of
found points under the loss's sign symmetries are added, and a list without a certificate says
it is not proven complete.

Each right answer is worked out by hand in the test's docstring.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow

FACTOR = "((a**2 + b**2 - 3)**2 + 2*(a*c + b*d)**2 + (c**2 + d**2 - 1)**2)/4"
TRIMER = (
    "4*((a**2)**-6 - (a**2)**-3) + 4*((b**2 + c**2)**-6 - (b**2 + c**2)**-3)"
    " + 4*(((a - b)**2 + c**2)**-6 - ((a - b)**2 + c**2)**-3)"
)


def test_the_maximum_at_the_centre_is_listed() -> None:
    """``L = ‖UUᵀ − diag(3, 1)‖²/4`` with ``U = [[a, b], [c, d]]``.  At the origin every term's
    gradient has a factor ``a, b, c`` or ``d``: a critical point, ``L = (9 + 0 + 1)/4 = 5/2``.
    Its Hessian is ``diag(−3, −3, −1, −1)`` (from ``(a² + b² − 3)²/4``: ``∂²/∂a² = −3`` at 0;
    from ``(c² + d² − 1)²/4``: ``−1``; the cross term ``(ac + bd)²/2`` is of fourth order), so
    an index-4 maximum, proven by the interval Hessian.  The origin is the centre of the
    default box ``[−3, 3]⁴``."""
    model = gradflow.loss_model(FACTOR, params=("a", "b", "c", "d")).bind()
    sets = gradflow.critical_sets(model, starts=16)
    (top,) = [s for s in sets if s.kind == "local_max"]
    np.testing.assert_allclose(top.sample, 0.0, atol=1e-12)
    assert top.loss == pytest.approx(2.5, abs=1e-12)
    assert top.morse_index == 4 and top.evidence.proven
    assert "not proven complete" in sets.table()
    assert sets.metadata()["completeness"]["evidence"] == "numerical"


def test_mirror_image_minima_of_three_atoms(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three Lennard-Jones atoms in a plane, at ``(0, 0)``, ``(a, 0)`` and ``(b, c)``, pair
    potential ``f(r) = 4(r⁻¹² − r⁻⁶)`` (written in ``r²``).  ``L`` depends on ``c`` only through
    ``c²``: ``c → −c`` is a symmetry.  The minimum is the equilateral triangle of side
    ``2^{1/6} = 1.122462``: ``a = 2^{1/6}``, ``b = a/2 = 0.561231``, ``c = ±a√3/2 =
    ±0.972081``, ``L = 3 f(2^{1/6}) = 3·(−1) = −3``.  Both mirror images are listed, exact
    images of each other (even from few starts), with ``sympy.solve`` stopped at once."""
    monkeypatch.setenv("GRADFLOW_SYMBOLIC_SECONDS", "0.2")
    model = gradflow.loss_model(TRIMER, params=("a", "b", "c")).bind()
    box = model.search_box({"a": (0.8, 1.6), "b": (0.2, 1.0), "c": (-1.5, 1.3)})
    sets = gradflow.critical_sets(model, box=box, starts=8)
    minima = sorted(
        (s for s in sets if s.kind in ("local_min", "global_min")), key=lambda s: s.sample[2]
    )
    side = 2 ** (1 / 6)
    assert len(minima) == 2
    for s, sign in zip(minima, (-1, 1)):
        np.testing.assert_allclose(s.sample, [side, side / 2, sign * side * 3**0.5 / 2], atol=1e-9)
        assert s.loss == pytest.approx(-3.0, abs=1e-12)
    assert minima[0].sample[2] == -minima[1].sample[2]
