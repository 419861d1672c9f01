"""The two-mixture system: a two-headed transformer on a mixture of linear classification tasks.

Source: "Transformers Provably Learn Two-Mixture of Linear Classification via Gradient Flow"
(ICLR 2025), reconstructed here without its text (every uncertain choice a named option).  Its
folder holds the data and the signal basis (``data``), the model's sizes and options checked
without JAX (``model_config``, ``config``), the full transformer (``transformer``), the reduced
score dynamics and their ``m → ∞`` limit (``reduced``, ``limit``), training and the stages
(``training``, ``stages``, ``runs``, ``experiment``, ``draw``), the fate map (``fate``,
``fate_figure``) and the figure (``figure``).
"""
