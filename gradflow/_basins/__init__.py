"""Basins of attraction: the integration over a grid (``basins``), the map as a result
(``basin_map``), the sublevel shortcut (``sublevel``), stable manifolds at a basin's edge
(``stable_manifolds``), the evidence of each label and the sets "found by the flow"
(``evidence``) and the shares over nested grids and tolerances (``convergence``).
"""
