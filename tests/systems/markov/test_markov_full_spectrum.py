"""Full Hessian spectra at embedded reduced critical points, against the reduced curvature.

At a critical point the second-order chain rule has no gradient term, so ``Jᵀ H_full J`` is the
reduced Hessian: a negative reduced curvature ``κ`` along ``e`` forces a full eigenvalue
``≤ κ / ‖J_e‖²``.  On the line ``e = 0`` of the canonical model ``∂²L/∂e² = 2Φ'(0)(1 + 2w|w|)``
with ``Φ'(0) = π0 π1 (p + q − 1)``; on ``Γ*`` (global minima) the full Hessian has no negative
eigenvalue.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from gradflow.systems.markov.full_model import full_model
from gradflow.systems.markov.full_spectrum import (
    critical_set_indices,
    full_spectrum,
    reduced_critical_points,
)

P, Q = 0.5, 0.8
LENGTH = 4


def test_full_spectra_bound_the_reduced_curvature():
    full = full_model("canonical", length=LENGTH, d=4)
    h = jnp.asarray([P, Q])
    points = dict(reduced_critical_points(P, Q, 2))
    w = -1.5
    slope = (Q / (P + Q)) * (P / (P + Q)) * (P + Q - 1)
    curvature = 2 * slope * (1 + 2 * w * abs(w))
    assert curvature < 0
    g_ee = float(full.metric(jnp.asarray(points["e = 0, w = -1.5 (e → 0+)"]), h)[0, 0])
    for side in "+-":
        name = f"e = 0, w = -1.5 (e → 0{side})"
        spectrum = full_spectrum(full, points[name], h, name)
        assert spectrum.morse_index >= 1
        assert spectrum.eigenvalues[0] <= 0.9 * curvature / g_ee
        assert math.isclose(sum(spectrum.escape_groups.values()), 1.0)
    (gamma,) = [k for k in points if k.startswith("Γ*")]
    spectrum = full_spectrum(full, points[gamma], h, gamma)
    assert spectrum.eigenvalues[0] >= -1e-8 * np.max(np.abs(spectrum.eigenvalues))


def test_fate_report_gives_both_morse_indices():
    """On ``e = 0`` the reduced index is 0 where ``κ > 0`` and 1 where ``κ < 0`` (the line is
    flat along ``w``); ``Γ*`` has index 0, the saddle ``(0, −1/√2)`` index 1.  The full index is
    at least the reduced one, since ``JᵀH_full J`` is the reduced Hessian."""
    full = full_model("canonical", length=LENGTH, d=4)
    records = {r["set"]: r for r in critical_set_indices(full, P, Q)}
    kappa_sign = {w: np.sign((P + Q - 1) * (1 + 2 * w * abs(w))) for w in (-1.5, -0.3)}
    for w, sign in kappa_sign.items():
        for side in "+-":
            assert records[f"e = 0, w = {w:g} (e → 0{side})"]["reduced_morse_index"] == (sign < 0)
    for side in "+-":
        assert records[f"saddle e = 0, w = -1/√2 (e → 0{side})"]["reduced_morse_index"] == 1
    (gamma,) = [k for k in records if k.startswith("Γ*")]
    assert records[gamma]["reduced_morse_index"] == 0
    for record in records.values():
        assert record["full_morse_index"] >= record["reduced_morse_index"]
