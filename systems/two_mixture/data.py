"""Data of the two-mixture linear classification task: the finite population of samples.

Reconstruction of the data model of "Transformers Provably Learn Two-Mixture of Linear
Classification via Gradient Flow" (ICLR 2025; the paper's text was not available here, see
``docs/systems/two-mixture.md``).  Orthonormal group identifiers ``c_1..c_K`` and classification
features ``v_1..v_K`` span the signal space ``span U``, ``U = [c_1..c_K, v_1..v_K] ∈ R^{d×2K}``.
A sample of group ``k`` with label ``y ∈ {±1}`` and distractor sign ``ε ∈ {±1}`` is the sequence
of tokens

    X = [c_k, y·v_k, ε·v_k'],      k' ≠ k,

in a random order.  Samples with ``ε = y`` are *consistent* (the distractor agrees with the label),
samples with ``ε = -y`` are *hard*.  There are ``K(K-1)·2·2 = 4K(K-1)`` distinct samples, each
equally likely, so every population loss is an exact finite sum.

In the coordinates of ``U`` a token is a signed basis vector: a *slot* ``a`` (``c_k`` is slot
``k``, ``v_k`` is slot ``K + k``, counting from 0) and a sign.  :class:`Population` stores samples
that way; :meth:`Population.tokens` embeds them in ``R^d``.

Sequences longer than three tokens (``L > 3``) need filler tokens, a choice the reconstruction
leaves open; it is the named option ``filler``:

- ``"zero"``: the extra tokens are the zero vector (they take attention mass and carry nothing);
- ``"cycle"``: the three tokens are repeated in turn (``c_k, y v_k, ε v_k', c_k, …``);
- ``"distractors"``: every position beyond the third holds a distractor of its own,
  ``ε_j v_{k'_j}`` with its own group ``k'_j ≠ k`` and sign ``ε_j`` (the corrected form of the
  data model's definition as this project reads it): all ``(2(K − 1))^{L−3}`` choices enumerated,
  so the population has ``4K(K − 1)(2(K − 1))^{L−3}`` equally likely samples.  ``ε`` and ``k'``
  of a sample stay those of the third token (a hard sample is one with ``ε_3 = −y``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from gradflow import GradflowError

__all__ = [
    "BASES",
    "FILLERS",
    "Population",
    "check_groups",
    "check_sizes",
    "population",
    "signal_basis",
]

FILLERS = ("zero", "cycle", "distractors")
"""Values of the ``filler`` option: what occupies token positions beyond the third."""

BASES = ("standard", "random")
"""Values of the ``basis`` option: ``U`` as the first ``2K`` standard basis vectors of ``R^d``,
or a random orthonormal ``d × 2K`` frame (seeded)."""

ZERO_SLOT = -1
"""Slot index of a zero filler token."""


@dataclass(frozen=True)
class Population:
    """The equally likely samples (``4K(K-1)`` of them, more with ``"distractors"`` filling), as
    slots and signs on the signal span.

    Attributes:
        K: number of groups (mixture components), ``K ≥ 2``.
        slots: shape ``(n, L)``: the slot of each token (``k`` for ``c_k``, ``K + k`` for ``v_k``,
            ``-1`` for a zero filler token).
        signs: shape ``(n, L)``: each token's sign (``±1``; ``0`` for a zero filler token).
        y: labels, shape ``(n,)``, ``±1``.
        eps: distractor signs ``ε``, shape ``(n,)``, ``±1``.
        group: ``k`` of each sample, shape ``(n,)``.
        other: ``k'`` of each sample, shape ``(n,)``.
    """

    K: int
    slots: np.ndarray
    signs: np.ndarray
    y: np.ndarray
    eps: np.ndarray
    group: np.ndarray
    other: np.ndarray

    @property
    def n(self) -> int:
        """Number of distinct samples (``4K(K-1)`` but with ``"distractors"`` filling)."""
        return int(self.y.shape[0])

    @property
    def L(self) -> int:  # noqa: N802 - the paper's name for the sequence length
        """Tokens per sample."""
        return int(self.slots.shape[1])

    @property
    def hard(self) -> np.ndarray:
        """Boolean mask of the hard samples (``ε = -y``), shape ``(n,)``."""
        return self.eps == -self.y

    def coordinates(self) -> np.ndarray:
        """Tokens in the coordinates of ``U``: shape ``(n, L, 2K)``, signed unit vectors (or 0)."""
        out = np.zeros((self.n, self.L, 2 * self.K))
        i, j = np.nonzero(self.slots >= 0)
        out[i, j, self.slots[i, j]] = self.signs[i, j]
        return out

    def tokens(self, U: np.ndarray) -> np.ndarray:
        """Tokens in ``R^d``: shape ``(n, L, d)``, ``X[s, t] = sign · U[:, slot]``.

        Args:
            U: the signal frame, shape ``(d, 2K)`` with orthonormal columns.
        """
        return self.coordinates() @ np.asarray(U).T


def signal_basis(K: int, d: int, basis: str = "standard", seed: int = 0) -> np.ndarray:
    """The frame ``U = [c_1..c_K, v_1..v_K]``, shape ``(d, 2K)``, orthonormal columns.

    Args:
        K: number of groups, ``K ≥ 2``.
        d: token dimension, ``d ≥ 2K``.
        basis: ``"standard"`` (``c_k = e_k``, ``v_k = e_{K+k}``) or ``"random"`` (the Q factor of
            a seeded Gaussian ``d × 2K`` matrix).
        seed: seed of the random frame.

    Raises:
        GradflowError: ``K < 2``, ``d < 2K`` or an unknown ``basis``.
    """
    check_sizes(K, d)
    if basis not in BASES:
        raise GradflowError(f"basis = {basis!r} is not one of {', '.join(BASES)}")
    if basis == "standard":
        return np.eye(d)[:, : 2 * K]
    q, r = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, 2 * K)))
    return q * np.sign(np.diag(r))


def check_groups(K: int) -> None:
    """Raise :class:`GradflowError` unless ``K`` is an integer ``≥ 2``."""
    if int(K) != K or K < 2:
        raise GradflowError(f"K = {K!r} groups: need an integer K ≥ 2")


def check_sizes(K: int, d: int) -> None:
    """Raise :class:`GradflowError` unless ``K ≥ 2`` and ``d ≥ 2K`` (integers)."""
    check_groups(K)
    if int(d) != d or d < 2 * K:
        raise GradflowError(
            f"d = {d!r}: the 2K = {2 * K} signal directions need an integer d ≥ {2 * K}"
        )


def _distractors(
    slots: np.ndarray,
    signs: np.ndarray,
    y: np.ndarray,
    eps: np.ndarray,
    group: np.ndarray,
    other: np.ndarray,
    L: int,
    K: int,
) -> tuple[np.ndarray, ...]:
    """Every sample of ``L = 3`` extended by every choice of ``ε_j v_{k'_j}``, ``k'_j ≠ k``, at
    positions ``4 … L`` (module docstring); the per-sample arrays repeated to match."""
    choices = list(itertools.product(itertools.product(range(K - 1), (1, -1)), repeat=L - 3))
    rows = np.repeat(np.arange(len(y)), len(choices))
    extra_slots = np.empty((len(rows), L - 3), int)
    extra_signs = np.empty((len(rows), L - 3), int)
    for r, (i, choice) in enumerate(zip(rows, itertools.cycle(choices))):
        for j, (shift, sign) in enumerate(choice):
            k_other = (group[i] + 1 + shift) % K
            extra_slots[r, j], extra_signs[r, j] = K + k_other, sign
    return (
        np.concatenate([slots[rows], extra_slots], axis=1),
        np.concatenate([signs[rows], extra_signs], axis=1),
        y[rows],
        eps[rows],
        group[rows],
        other[rows],
    )


def population(K: int, L: int = 3, filler: str = "zero", seed: int | None = 0) -> Population:
    """All samples ``X = [c_k, y v_k, ε v_k', …]``, each in a random token order.

    Args:
        K: number of groups, ``K ≥ 2``.
        L: tokens per sample, ``L ≥ 3``; positions beyond the third are filled per ``filler``.
        filler: ``"zero"``, ``"cycle"`` or ``"distractors"`` (see the module docstring).
        seed: seed of the token orders; ``None`` keeps the order ``c_k, y v_k, ε v_k', …``.

    Returns:
        The population, samples ordered by ``(k, k', y, ε)``.

    Raises:
        GradflowError: ``K < 2``, ``L < 3`` or an unknown ``filler``.
    """
    check_groups(K)
    if int(L) != L or L < 3:
        raise GradflowError(f"L = {L!r} tokens: need an integer L ≥ 3 (c_k, y v_k, ε v_k')")
    if filler not in FILLERS:
        raise GradflowError(f"filler = {filler!r} is not one of {', '.join(FILLERS)}")
    rows = [
        (k, kp, y, e)
        for k, kp in itertools.permutations(range(K), 2)
        for y in (1, -1)
        for e in (1, -1)
    ]
    group, other, y, eps = (np.array(col) for col in zip(*rows))
    slots = np.stack([group, K + group, K + other], axis=1)
    signs = np.stack([np.ones_like(y), y, eps], axis=1)
    if L > 3 and filler == "distractors":
        slots, signs, y, eps, group, other = _distractors(slots, signs, y, eps, group, other, L, K)
    elif L > 3:
        if filler == "cycle":
            reps = np.arange(L) % 3
            slots, signs = slots[:, reps], signs[:, reps]
        else:
            pad = ((0, 0), (0, L - 3))
            slots = np.pad(slots, pad, constant_values=ZERO_SLOT)
            signs = np.pad(signs, pad, constant_values=0)
    if seed is not None:
        order = np.argsort(np.random.default_rng(seed).random(slots.shape), axis=1)
        slots = np.take_along_axis(slots, order, axis=1)
        signs = np.take_along_axis(signs, order, axis=1)
    return Population(K=int(K), slots=slots, signs=signs, y=y, eps=eps, group=group, other=other)
