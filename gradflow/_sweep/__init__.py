"""Sweeps over hyperparameters: the cells (``sweep``), critical points continued from cell to cell
and their bifurcations (``continuation``), attractors matched across cells (``matching``).
"""
