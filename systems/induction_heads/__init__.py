"""The induction-heads system: transformers learning in-context Markov chains.

Source: E. Edelman, N. Tsilivis, B. L. Edelman, E. Malach, S. Goel, "The Evolution of
Statistical Induction Heads: In-Context Learning Markov Chains" (ICML 2024).  Its folder holds
the task (``task``, ``data``), the reference strategies (``strategies``), the minimal model and
its ``(a, b, v)`` reduction (``minimal``, ``reduction``), the two-layer attention-only
transformer (``transformer``), the settings checked without JAX (``config``), training and the
detection of the stages uniform → unigram → bigram (``train``, ``drive``, ``phases``,
``experiment``, ``portrait``), the fate map (``fate``, ``fate_figure``) and the paper's figure
(``figure``).
"""
