"""Critical sets: the numerical search for ``∇L = 0`` (``roots``, ``clusters``) and its box
(``box``), closed-form sets (``pieces``, ``closed_sets``), Clarke-stationary points on kinks
(``kink_points``), classification (``classify``), sets merged and joined (``merging``), the
result (``sets``), the search that runs them all (``search``) and its results kept between
processes (``kept``), the proof that none is missed
(``certify``: the interval form of ``∇L`` and the closed-form sets in ``interval_system``, the
branch and bound in ``branch_bound``, what it proves in ``certificate``), the kinds proven by
interval arithmetic at each non-degenerate point (``proven_kinds``), the proven infimum of a
coercive polynomial (``coercive``), the attractors a flow can reach (``attractors``) and the
proofs of where a flow ends: certified regions of attraction, escape and refined endpoints
(``attraction``), certified tubes around lines of minima (``tube``), and the coordinate
hyperplanes that tell which component of the global minima a flow below a level reaches
(``sides``).
"""
