"""The reduced models and the full JAX models they come from (``gradflow.models``).

``MODELS`` lists the reduced models the command line can use by name; each entry names a
factory returning a :class:`gradflow.ReducedModel`, imported only when the model is used.
"""

from __future__ import annotations

from gradflow.cli._registry import ModelEntry

__all__ = ["MODELS"]

MODELS = {
    "canonical": ModelEntry(
        "gradflow.models.markov:canonical_model",
        ("p", "q"),
        "two-scalar canonical Markov model L(e, w), bias optimized out",
    ),
    "canonical-bias": ModelEntry(
        "gradflow.models.markov:canonical_bias_model",
        ("p", "q"),
        "canonical Markov model with the bias trained, L(e, w, b)",
    ),
    "canonical-attention": ModelEntry(
        "gradflow.models.markov_attention:canonical_attention_model",
        ("p", "q"),
        "three-scalar canonical model with linear attention L(e, w, a), bias optimized out",
    ),
    "canonical-attention-bias": ModelEntry(
        "gradflow.models.markov_attention:canonical_attention_bias_model",
        ("p", "q"),
        "canonical model with linear attention and the bias trained, L(e, w, a, b)",
    ),
}
