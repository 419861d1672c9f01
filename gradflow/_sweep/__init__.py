"""Sweeps over hyperparameters: the cells (``sweep``), critical points continued from cell to cell
and their bifurcations (``continuation``: the numerics on one landscape in ``corrector``, the
walk along one line of cells in ``line``, the events typed and tracks joined in ``events``, the
results in ``branches``), attractors matched across cells (``matching``).
"""
