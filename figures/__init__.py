"""One module per paper figure, each a thin call into the analyses plus matplotlib.

``FIGURES`` maps a figure's name to its module (``add_arguments(parser)`` and ``run(args)``),
imported only when ``gradflow figures NAME`` asks for it.
"""

from __future__ import annotations

from gradflow.cli._registry import Command

__all__ = ["FIGURES"]

FIGURES = {
    "local-to-global-training": Command(
        "gradflow.figures.local_to_global_training",
        "Local to Global: full-model test loss vs iteration, standard vs recommended init, p = 0.5, q = 0.8",
    ),
    "local-to-global-overlay": Command(
        "gradflow.figures.local_to_global_overlay",
        "Local to Global: full-model training projected onto (w, e) over the canonical portrait and basins",
    ),
    "canonical-attention": Command(
        "gradflow.figures.canonical_attention",
        "three-scalar model L(e, w, a): basins on slices of a, rays from the origin, 3-D trajectories",
    ),
    "local-to-global-fig1": Command(
        "gradflow.figures.local_to_global_fig1",
        "Local to Global, Fig. 1: canonical flow with energy contours and basins, p = q = 0.1 and 0.9",
    ),
    "two-mixture": Command(
        "gradflow.figures.two_mixture",
        "Two-mixture classification (reconstruction): neuron alignment, scores per query, loss, stages; attention stage vs ω",
    ),
    "shallow-ntk": Command(
        "gradflow.figures.shallow_ntk",
        "Wu et al. 2023: λ_min(K0), α0, kernel change vs width; GD vs linearized flow",
    ),
    "induction-heads": Command(
        "gradflow.figures.induction_heads",
        "Evolution of Statistical Induction Heads: phases, positional vector, doubly-stochastic share, reduced (a, b, v_1) flow",
    ),
}
