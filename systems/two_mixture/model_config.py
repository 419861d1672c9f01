"""The two-mixture model's sizes, initialization scale and named options, checked without JAX.

:mod:`gradflow.systems.two_mixture.transformer` (the model itself, module docstring there) re-exports
everything here; the command line checks its arguments with it before JAX is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gradflow import GradflowError

from .data import BASES, FILLERS, Population, check_sizes, population, signal_basis

__all__ = ["COMBINES", "NEURONS", "READOUTS", "MixtureConfig"]

COMBINES = ("difference", "signed-sum", "tied")
"""Values of the ``combine`` option: how the two heads make the logit."""

READOUTS = ("sqrt", "mean")
"""Values of the ``readout`` option: ``κ = 1/√m`` or ``κ = 1/m`` in front of the neuron sum."""

NEURONS = ("average", "tokens")
"""Values of the ``neurons`` option: what a head's neurons read.  ``"average"``: the attention
output averaged over the queries, ``ReLU(⟨w, Σ_i α_i x_i⟩)``; ``"tokens"``: every token alone,
their outputs averaged with the same weights, ``Σ_i α_i ReLU(⟨w, x_i⟩)``, where
``α_i = (1/L) Σ_j att_ij`` is the attention mass on token ``i`` averaged over the queries."""


@dataclass(frozen=True)
class MixtureConfig:
    """Sizes, initialization scale and the named options of the two-mixture model.

    Attributes:
        K: groups (mixture components), ``K ≥ 2``.
        d: token dimension, ``d ≥ 2K``.
        m: ReLU neurons per head, ``m ≥ 1``.
        omega: initialization scale ``ω > 0``: every weight is ``N(0, ω²/m)``.
        L: tokens per sample, ``L ≥ 3``.
        combine: ``"difference"``, ``"signed-sum"`` or ``"tied"`` (module docstring).
        readout: ``"sqrt"`` or ``"mean"`` (module docstring).
        neurons: ``"average"`` or ``"tokens"`` (:data:`NEURONS`).
        d_head: inner dimension of ``W_Q, W_K``; ``None`` means ``m``.
        filler: tokens beyond the third, ``"zero"``, ``"cycle"`` or ``"distractors"``
            (:mod:`gradflow.systems.two_mixture.data`).
        basis: the signal frame ``U``, ``"standard"`` or ``"random"``.
        seed: seed of the initialization, the token orders and a random frame.

    Raises:
        GradflowError: a size or ``ω`` out of range, or an unknown option value.
    """

    K: int = 2
    d: int = 8
    m: int = 256
    omega: float = 0.05
    L: int = 3
    combine: str = "difference"
    readout: str = "sqrt"
    neurons: str = "average"
    d_head: int | None = None
    filler: str = "zero"
    basis: str = "standard"
    seed: int = 0

    def __post_init__(self) -> None:
        check_sizes(self.K, self.d)
        if int(self.m) != self.m or self.m < 1:
            raise GradflowError(f"m = {self.m!r} neurons per head: need an integer m ≥ 1")
        if not (np.isfinite(self.omega) and self.omega > 0):
            raise GradflowError(f"omega = {self.omega!r}: the initialization scale must be > 0")
        if int(self.L) != self.L or self.L < 3:
            raise GradflowError(f"L = {self.L!r} tokens: need an integer L ≥ 3")
        if self.d_head is not None and (int(self.d_head) != self.d_head or self.d_head < 1):
            raise GradflowError(f"d_head = {self.d_head!r}: need an integer ≥ 1")
        for name, allowed in (
            ("combine", COMBINES),
            ("readout", READOUTS),
            ("neurons", NEURONS),
            ("filler", FILLERS),
            ("basis", BASES),
        ):
            if getattr(self, name) not in allowed:
                raise GradflowError(
                    f"{name} = {getattr(self, name)!r} is not one of {', '.join(allowed)}"
                )

    @property
    def head_dim(self) -> int:
        """``d_head``, defaulting to ``m``."""
        return self.m if self.d_head is None else int(self.d_head)

    @property
    def kappa(self) -> float:
        """The readout scale ``κ``: ``1/√m`` or ``1/m``."""
        return 1.0 / self.m if self.readout == "mean" else float(1.0 / np.sqrt(self.m))

    def frame(self) -> np.ndarray:
        """The signal frame ``U = [c_1..c_K, v_1..v_K]``, shape ``(d, 2K)``."""
        return signal_basis(self.K, self.d, self.basis, self.seed)

    def population(self) -> Population:
        """The ``4K(K-1)`` samples, token orders drawn with ``seed``."""
        return population(self.K, self.L, self.filler, self.seed)
