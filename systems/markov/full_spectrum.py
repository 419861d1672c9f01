"""The reduced critical sets seen from the full model: Hessian spectra at ``embed(θ*)``.

At a reduced critical point ``θ*`` the embedded weights ``embed(θ*)`` are a critical point of the
full model's exact loss as well (the full gradient there is ``0``: the rank-one family is
invariant and the reduced gradient vanishes).  Its Hessian over every full weight says what the
full model makes of it: its Morse index in the full model (negative eigenvalues, directions in
which full training leaves it) and how those escape directions split over the parameter groups.

On the reduced set ``e = 0`` every input of the FFN is 0, on the kink of its ReLU, where the
Hessian is not defined; there the spectrum is reported one-sided, at ``e = ±ε`` on the embedded
line (the limits from either side), as for kinks of reduced losses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .chain import c_star
from .chain import p as p_sym
from .chain import q as q_sym
from .full_landscape import embed_batch, full_hessian
from .full_model import MarkovFullModel

__all__ = [
    "KINK_OFFSET",
    "FullSpectrum",
    "critical_set_indices",
    "full_spectrum",
    "index_lines",
    "reduced_critical_points",
]

KINK_OFFSET = 1e-5
"""``ε``: the one-sided spectra at ``e = 0`` are taken at ``e = ±ε``."""
NEGATIVE_TOL = 1e-8
"""Eigenvalues below ``-NEGATIVE_TOL · max|λ|`` count as negative."""


@dataclass(frozen=True)
class FullSpectrum:
    """The full Hessian's spectrum at ``embed(θ)``.

    Attributes:
        name: which reduced critical set (``"e = 0, w = -1.5 (e → 0+)"``).
        theta: the reduced point, shape ``(dim,)``.
        eigenvalues: ascending, shape ``(P,)`` (``P`` full weights), nats per weight².
        morse_index: the number of negative eigenvalues (the full model's Morse index).
        escape_groups: for the negative eigenvalues together, the share of each parameter group
            in their eigenvectors (sums to 1; empty without negative eigenvalues).
    """

    name: str
    theta: np.ndarray
    eigenvalues: np.ndarray
    morse_index: int
    escape_groups: dict[str, float]

    def metadata(self) -> dict[str, Any]:
        """JSON record: the point, index, the lowest five eigenvalues, the escape groups."""
        return {
            "set": self.name,
            "theta": self.theta,
            "full_morse_index": self.morse_index,
            "lowest_eigenvalues": self.eigenvalues[:5],
            "escape_groups": self.escape_groups,
        }


def _groups(full: MarkovFullModel, h: jax.Array) -> dict[str, np.ndarray]:
    """Masks over the flat weights (``ravel_pytree`` order), one per parameter group."""
    params = full.embed(jnp.zeros(full.reduced.dim).at[0].set(1.0), h)
    owners = []
    for path, leaf in jax.tree_util.tree_leaves_with_path(params):
        owners += [path[0].name] * int(np.size(leaf))
    owners = np.asarray(owners)
    return {g: np.isin(owners, names) for g, names in full.groups.items()}


def full_spectrum(full: MarkovFullModel, theta: Any, h: Any, name: str) -> FullSpectrum:
    """The spectrum of the full Hessian at ``embed(θ)`` (module docstring)."""
    h = jnp.asarray(h, jnp.float64)
    flat = embed_batch(full)(np.asarray(theta, float)[None], h)[0]
    lam, vec = np.linalg.eigh(full_hessian(full, flat, h))
    negative = lam < -NEGATIVE_TOL * max(float(np.max(np.abs(lam))), 1e-300)
    escape = {}
    if negative.any():
        weight = np.sum(vec[:, negative] ** 2, axis=1)
        escape = {g: float(weight[m].sum() / weight.sum()) for g, m in _groups(full, h).items()}
    return FullSpectrum(
        name=name,
        theta=np.asarray(theta, float),
        eigenvalues=lam,
        morse_index=int(negative.sum()),
        escape_groups=escape,
    )


def reduced_critical_points(p: float, q: float, dim: int) -> list[tuple[str, np.ndarray]]:
    """Representative points of the canonical model's critical sets at ``(p, q)``: the saddle
    ``(0, -1/√2)``, the line ``e = 0`` at ``w = -1.5`` and ``w = -0.3`` on either side of it
    (each on the ReLU kink, so one-sided at ``e = ±ε``), and one global minimum on ``Γ*``
    (``e²(1 + 2w|w|) = c*`` at ``w = -1.5`` for ``p + q > 1``, ``w = 0.5`` for ``p + q < 1``).
    Coordinates ``(e, w)`` padded with ``a = 0`` to ``dim``."""
    c = float(c_star.subs({p_sym: p, q_sym: q}))
    w_gamma = -1.5 if c < 0 else 0.5
    points = []
    for w in (-1 / math.sqrt(2), -1.5, -0.3):
        label = "saddle e = 0, w = -1/√2" if w == -1 / math.sqrt(2) else f"e = 0, w = {w:g}"
        for side, e in (("+", KINK_OFFSET), ("-", -KINK_OFFSET)):
            points.append((f"{label} (e → 0{side})", (e, w)))
    if c != 0:
        e_gamma = math.sqrt(c / (1 + 2 * w_gamma * abs(w_gamma)))
        points.append((f"Γ*: e = {e_gamma:.4f}, w = {w_gamma:g}", (e_gamma, w_gamma)))
    return [(name, np.pad(np.asarray(pt), (0, dim - 2))) for name, pt in points]


def critical_set_indices(full: MarkovFullModel, p: float, q: float) -> list[dict[str, Any]]:
    """Per reduced critical set (a representative point of each, one-sided on the ReLU kink at
    ``e = 0``: :func:`~gradflow.systems.markov.full_spectrum.reduced_critical_points`), its Morse
    index in the reduced model and in the full model, the full Hessian's lowest eigenvalues
    (nats per weight²) and the parameter groups of its escape directions.

    At a critical point the full Hessian pulls back to the reduced one, ``JᵀH_full J = H``
    (the full gradient vanishes there), so the full index is at least the reduced index.
    """
    bound = full.reduced.bind(p=p, q=q)
    out = []
    for name, theta in reduced_critical_points(p, q, full.reduced.dim):
        record = full_spectrum(full, theta, bound.h, name).metadata()
        lam = np.linalg.eigvalsh(np.asarray(bound.hessian(theta), float))
        negative = lam < -NEGATIVE_TOL * max(float(np.max(np.abs(lam))), 1e-300)
        record.update(
            theta=[float(v) for v in record["theta"]],
            lowest_eigenvalues=[float(v) for v in record["lowest_eigenvalues"]],
            reduced_morse_index=int(negative.sum()),
        )
        out.append(record)
    return out


def index_lines(records: Sequence[dict[str, Any]]) -> list[str]:
    """Report lines of :func:`critical_set_indices`' records (none for no records)."""
    lines = ["Morse index of the reduced critical sets, reduced → full model:"] if records else []
    for rec in records:
        escape = ", ".join(f"{g} {100 * v:.0f} %" for g, v in rec["escape_groups"].items())
        lines.append(
            f"  {rec['set']}: {rec['reduced_morse_index']} → {rec['full_morse_index']} "
            f"(lowest full eigenvalue {rec['lowest_eigenvalues'][0]:.3g}"
            + (f"; escape directions: {escape})" if escape else ")")
        )
    return lines
