"""gradflow: gradient-flow analysis of the reduced models of transformer training dynamics.

A reduced model is a loss ``L(θ; h)`` declared in SymPy (:class:`ReducedModel`).  The engine
lambdifies it to JAX and provides its gradient flow, critical sets, basins of attraction and
phase portraits.  Importing gradflow enables JAX's float64 mode: critical points, Hessian spectra
and conserved quantities need it.  It does not import matplotlib.
"""

from __future__ import annotations

import jax

jax.config.update("jax_enable_x64", True)

from ._basins import (  # noqa: E402
    LABELS,
    BasinMap,
    basins,
    default_basin_options,
    plane_grid,
    widened_bounds,
)
from ._bound import BoundModel  # noqa: E402
from ._classify import KINDS, classify_points  # noqa: E402
from ._critical import CriticalSet, critical_sets, decision_level  # noqa: E402
from ._errors import GradflowError  # noqa: E402
from ._flow import (  # noqa: E402
    FlowEndpoints,
    FlowOptions,
    GradientField,
    Status,
    Trajectory,
    descend,
    flow,
    flow_endpoints,
    gradient_descent,
    gradient_flow,
    integrate,
)
from ._io import atomic_outputs, check_output, save_with_data, to_jsonable  # noqa: E402
from ._model import CriticalSetSpec, ReducedModel  # noqa: E402
from ._portrait import Overlay, Portrait, portrait  # noqa: E402
from ._progress import progress_bar  # noqa: E402
from ._sym import LogSigmoid, Sigmoid, binary_cross_entropy, lambdify_jax, lambdify_numpy  # noqa: E402

__all__ = [
    "atomic_outputs",
    "check_output",
    "decision_level",
    "default_basin_options",
    "lambdify_numpy",
    "progress_bar",
    "save_with_data",
    "to_jsonable",
    "widened_bounds",
    "KINDS",
    "LABELS",
    "BasinMap",
    "CriticalSet",
    "Overlay",
    "Portrait",
    "basins",
    "classify_points",
    "critical_sets",
    "descend",
    "gradient_descent",
    "plane_grid",
    "portrait",
    "BoundModel",
    "CriticalSetSpec",
    "FlowEndpoints",
    "FlowOptions",
    "GradientField",
    "GradflowError",
    "LogSigmoid",
    "ReducedModel",
    "Sigmoid",
    "Status",
    "Trajectory",
    "binary_cross_entropy",
    "flow",
    "flow_endpoints",
    "gradient_flow",
    "integrate",
    "lambdify_jax",
]
