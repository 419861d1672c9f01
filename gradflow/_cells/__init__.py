"""Grids of independent cells: computed once, checkpointed and returned in order (``cells``), in
this process or on a Dask cluster (``cluster``).
"""
