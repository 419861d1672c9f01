"""The canonical Markov system: a single-layer transformer learning a binary Markov chain.

Source: Makkuva et al., "Local to Global: Learning Dynamics and Effect of Initialization for
Transformers" (NeurIPS 2024) and "Attention with Markov" (ICLR 2025).  Its folder holds the
reduced models (``reduced``: ``L(e, w)``, ``L(e, w, b)``; ``attention``: ``L(e, w, a)``,
``L(e, w, a, b)``), the closed forms of the chain (``chain``), the full transformer and its exact
population loss over every sequence (``transformer``, ``causal_attention``, ``data``,
``ranges``), the embedding of the reduced coordinates (``ansatz``, ``embedding``,
``full_model``), the analyses (``training``, ``compare``, ``checks``, ``full_spectrum``,
``full_landscape``, ``rays``, ``fate``, ``fate_runs``), the ``k``-state chains and their
transformer (``states``, ``states_transformer``, ``states_embedding``: the rank-``(k − 1)`` init,
``states_training``), the settings checked without JAX (``config``), the paper's figures
(``figure_*``) and a PyTorch reference (``torch_reference``).

The reduced models are importable from here without naming their module::

    from gradflow.systems import markov

    m = markov.canonical(p=0.7, q=0.6)

Importing this package imports no model (they load on first use), so the command line checks
its arguments before JAX is loaded.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "attention_energy",
    "canonical",
    "canonical_attention",
    "canonical_attention_bias",
    "canonical_attention_bias_model",
    "canonical_attention_model",
    "canonical_bias",
    "canonical_bias_model",
    "canonical_model",
    "energy",
]

_HOME = {name: "attention" if "attention" in name else "reduced" for name in __all__}
"""Which module of this package defines each exported name."""


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
