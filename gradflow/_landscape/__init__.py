"""What the engine's algorithms need of a loss: the :class:`Landscape` base class (``base``), a
loss written in JAX (``jax``), flows in a metric (``metric``), the scales every tolerance is
relative to (``scales``) and the region a map covers (``region``).
"""
