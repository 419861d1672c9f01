"""The reduced models and the full JAX models they come from (``gradflow.systems``).

:data:`MODELS` lists the reduced models by name, once: the command line's ``--model NAME``, its
``--p``/``--q`` options and ``gradflow models`` are derived from it.  Importing this package
imports no model module (so the command line checks its arguments before JAX is loaded).

Adding a model: a module here with a factory returning a :class:`gradflow.ReducedModel` (its
full model, if any, one value of the declaration: :class:`gradflow.FullModel`), one entry in
:data:`MODELS`, and its tests; ``tests/test_registry.py`` checks the entry against the model.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gradflow import ReducedModel

__all__ = ["MODELS", "SWITCHING", "ModelEntry"]


@dataclass(frozen=True)
class ModelEntry:
    """A reduced model the model commands can use by name.

    The parameter names and hyperparameter ranges repeat the model's declaration (a test checks
    they agree) so that the command line checks its input before importing the model.

    Attributes:
        factory: ``"module:function"`` returning the :class:`gradflow.ReducedModel`.
        params: its parameter names, in order.
        plane: the parameters its portraits put on the x and y axes.
        hyperparams: its hyperparameters and their open ranges ``(lo, hi)`` (each becomes a
            ``--NAME`` option).
        full: whether the model declares a full model (``ReducedModel.full``): then
            ``gradflow fate --model NAME`` runs a fate map on it, the system's own where the
            system registers one (:data:`gradflow.systems.fate.FATE_SYSTEMS`), else the plane
            fate map of :mod:`gradflow.systems.plane_fate`.
    """

    factory: str
    params: tuple[str, ...]
    plane: tuple[str, str]
    hyperparams: dict[str, tuple[float, float]]
    full: bool = False

    def model(self) -> ReducedModel:
        """The reduced model: its factory imported and called (this imports the model and
        JAX)."""
        module, _, name = self.factory.partition(":")
        return getattr(importlib.import_module(module), name)()


SWITCHING = {"p": (0.0, 1.0), "q": (0.0, 1.0)}
"""The Markov models' switching probabilities, each in the open interval (0, 1)."""

MODELS = {
    "canonical": ModelEntry(
        "gradflow.systems.markov.reduced:canonical_model",
        ("e", "w"),
        ("w", "e"),
        SWITCHING,
        full=True,
    ),
    "canonical-bias": ModelEntry(
        "gradflow.systems.markov.reduced:canonical_bias_model",
        ("e", "w", "b"),
        ("w", "e"),
        SWITCHING,
        full=True,
    ),
    "canonical-attention": ModelEntry(
        "gradflow.systems.markov.attention:canonical_attention_model",
        ("e", "w", "a"),
        ("w", "e"),
        SWITCHING,
        full=True,
    ),
    "canonical-attention-bias": ModelEntry(
        "gradflow.systems.markov.attention:canonical_attention_bias_model",
        ("e", "w", "a", "b"),
        ("w", "e"),
        SWITCHING,
        full=True,
    ),
}
"""Every reduced model the command line knows by name, in report order (the one list: the
models with a full model are the entries with ``full``)."""
