"""The shallow-NTK system: the NTK Gram matrix of a shallow encoder transformer.

Source: Y. Wu, F. Liu, G. Chrysos, V. Cevher, "On the Convergence of Encoder-only Shallow
Transformers" (NeurIPS 2023).  Its folder holds the scalings and initializations (``scheme``),
the encoder (``encoder``), the limiting kernel (``limit``), the empirical NTK and its bound
(``ntk``), the settings checked without JAX (``config``), training (``dynamics``), the width
sweep and its fit (``sweep``, ``threshold``, ``draw``), the fate map (``fate``, ``fate_figure``)
and the figure (``figure``).
"""
