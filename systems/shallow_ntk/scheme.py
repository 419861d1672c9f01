"""The shallow encoder's sizes, score scalings and initializations, checked without JAX.

The table of initializations and the scalings are those of :mod:`gradflow.systems.shallow_ntk.encoder`
(Wu et al., NeurIPS 2023), which re-exports everything here; the command line checks its
arguments with these before JAX is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gradflow import GradflowError

__all__ = [
    "INITS",
    "SCALINGS",
    "InitScheme",
    "check_size",
    "check_choice",
    "init_scheme",
    "tau0_of",
]

SCALINGS = ("sqrt", "linear")
"""Scalings of the attention scores: ``τ0 = d_m^{-1/2}`` (``"sqrt"``) or ``d_m^{-1}``."""

INITS = ("lecun", "he", "ntk")
"""Initializations: LeCun (variance 1/fan-in), He (2/fan-in), NTK (variance 1, τ1 = d_m^{-1/2})."""


def check_size(name: str, value: object) -> int:
    """``value`` as a positive integer.

    Raises:
        GradflowError: ``value`` is not an integer ≥ 1 (booleans and non-integral floats included).
    """
    ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    if not ok and isinstance(value, (float, np.floating)) and float(value).is_integer():
        value, ok = int(value), True
    if not ok or int(value) < 1:
        raise GradflowError(f"{name} = {value!r} must be a positive integer (≥ 1)")
    return int(value)


def check_choice(name: str, value: str, valid: tuple[str, ...]) -> str:
    if value not in valid:
        raise GradflowError(f"{name} = {value!r} is not one of {', '.join(valid)}")
    return value


def tau0_of(scaling: str, d_m: int) -> float:
    """The score scale ``τ0``: ``d_m^{-1/2}`` for ``"sqrt"``, ``d_m^{-1}`` for ``"linear"``.

    Raises:
        GradflowError: unknown scaling or a width that is not a positive integer.
    """
    d_m = check_size("d_m", d_m)
    return d_m**-0.5 if check_choice("scaling", scaling, SCALINGS) == "sqrt" else 1.0 / d_m


@dataclass(frozen=True)
class InitScheme:
    """Variances of the initial weights and the forward multipliers of one initialization.

    Attributes:
        var_in: variance of each entry of ``W_Q``, ``W_K``, ``W_V`` (fan-in ``d``).
        var_out: variance of each entry of ``w_O`` and ``W_H`` (fan-in ``d_m``).
        tau1: output multiplier ``τ1``.
        tau_H: multiplier ``τ_H`` of the hidden layer.
    """

    var_in: float
    var_out: float
    tau1: float
    tau_H: float


def init_scheme(init: str, d: int, d_m: int) -> InitScheme:
    """The variances and multipliers of ``init`` (table in the module docstring).

    Raises:
        GradflowError: unknown init or sizes that are not positive integers.
    """
    d, d_m = check_size("d", d), check_size("d_m", d_m)
    init = check_choice("init", init, INITS)
    if init == "ntk":
        return InitScheme(var_in=1.0, var_out=1.0, tau1=d_m**-0.5, tau_H=d_m**-0.5)
    gain = 1.0 if init == "lecun" else 2.0
    return InitScheme(var_in=gain / d, var_out=gain / d_m, tau1=1.0, tau_H=1.0)
