"""Losses declared in SymPy: the grammar of a loss written as text (``grammar``, ``expression``),
the reduced model and its binding to values (``model``), SymPy → JAX lowering (``lowering``,
``compiled``), what SymPy can establish about a loss (``facts``), interval evaluation of SymPy
expressions (``interval``) and the time budget of every symbolic step (``budget``).
"""
