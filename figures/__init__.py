"""One module per paper figure, each a thin call into the analyses plus matplotlib.

``FIGURES`` maps a figure's name to its module (``add_arguments(parser)`` and ``run(args)``),
imported only when ``gradflow figures NAME`` asks for it.
"""

from __future__ import annotations

from gradflow.cli._registry import Command

__all__ = ["FIGURES"]

FIGURES = {
    "local-to-global-fig1": Command(
        "gradflow.figures.local_to_global_fig1",
        "Local to Global, Fig. 1: canonical flow with energy contours and basins, p = q = 0.1 and 0.9",
    ),
}
