"""Losses declared in SymPy: the grammar of a loss written as text (``grammar``, ``expression``),
the reduced model and its binding to values (``model``), the full model it comes from
(``full``), its critical sets in closed form
(``closed_forms``), SymPy → JAX lowering (``functions``, the stable functions; ``stabilize``, the
unstable forms rewritten into them; ``lowering``; ``compiled``), what SymPy can establish about a
loss (``facts``) and its sign symmetries (``symmetries``), interval evaluation of SymPy
expressions (``interval``), the time budget of every symbolic step (``budget``) and the symbolic
results kept between processes (``kept``).
"""
