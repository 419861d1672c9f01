"""gradflow: gradient-flow analysis of the reduced models of transformer training dynamics.

A reduced model is a loss ``L(θ; h)`` declared in SymPy (:class:`ReducedModel`); bound to its
hyperparameters it is a :class:`Landscape`, as is a loss written directly in JAX
(:class:`JaxLandscape`).  On a landscape the engine computes gradient flows, critical sets,
basins of attraction and phase portraits.  Importing gradflow enables JAX's float64 mode:
critical points, Hessian spectra and conserved quantities need it.  It does not import
matplotlib.

The modules run in one direction: errors and types (``_errors``, ``_landscape``) → SymPy
lowering and the integrators (``_lowering``, ``_integrate``, ``_descent``, ``_batched``) → the
model and its binding (``_symbolic``, ``_compiled``, ``_model``, ``_jax_landscape``) → the
algorithms (``_classify``, ``_pieces``, ``_critical``, ``_attractors``, ``_flows``, ``_basins``,
``_separatrix``) → drawing and I/O (``_draw``, ``_io``, ``_portrait``) → this module.
"""

from __future__ import annotations

import jax

jax.config.update("jax_enable_x64", True)

from ._attractors import Attractor, AttractorIndex  # noqa: E402
from ._basins import (  # noqa: E402
    LABELS,
    BasinMap,
    basin_memory,
    basins,
    default_basin_options,
    plane_grid,
    widened_bounds,
)
from ._batched import FlowEndpoints  # noqa: E402
from ._classify import KINDS, classify_points  # noqa: E402
from ._critical import (  # noqa: E402
    CriticalSet,
    CriticalSets,
    critical_sets,
    decision_level,
    global_min_level,
)
from ._descent import descend  # noqa: E402
from ._errors import GradflowError  # noqa: E402
from ._expression import loss_model, parse_loss  # noqa: E402
from ._flows import flow, flow_endpoints, gradient_descent  # noqa: E402
from ._integrate import FlowOptions, Status, Trajectory, gradient_flow, integrate  # noqa: E402
from ._io import atomic_outputs, check_output, save_with_data, to_jsonable  # noqa: E402
from ._jax_landscape import JaxLandscape  # noqa: E402
from ._landscape import ClosedForm, GradientField, Landscape  # noqa: E402
from ._lowering import (  # noqa: E402
    LOWERED_FUNCTIONS,
    LogAddExp,
    LogSigmoid,
    Sigmoid,
    Softplus,
    binary_cross_entropy,
    lambdify_jax,
    lambdify_numpy,
    stabilize,
)
from ._model import BoundModel, CriticalSetSpec, ReducedModel, show_domain  # noqa: E402
from ._portrait import FORMATS, Overlay, Portrait, portrait  # noqa: E402
from ._progress import progress_bar  # noqa: E402
from ._text import format_point, format_table  # noqa: E402

__all__ = [
    "FORMATS",
    "LOWERED_FUNCTIONS",
    "LogAddExp",
    "Softplus",
    "stabilize",
    "KINDS",
    "LABELS",
    "Attractor",
    "AttractorIndex",
    "BasinMap",
    "BoundModel",
    "ClosedForm",
    "CriticalSet",
    "CriticalSetSpec",
    "CriticalSets",
    "FlowEndpoints",
    "FlowOptions",
    "GradflowError",
    "GradientField",
    "JaxLandscape",
    "Landscape",
    "LogSigmoid",
    "Overlay",
    "Portrait",
    "ReducedModel",
    "Sigmoid",
    "Status",
    "Trajectory",
    "atomic_outputs",
    "basin_memory",
    "basins",
    "binary_cross_entropy",
    "check_output",
    "classify_points",
    "critical_sets",
    "decision_level",
    "default_basin_options",
    "descend",
    "flow",
    "flow_endpoints",
    "format_point",
    "format_table",
    "global_min_level",
    "gradient_descent",
    "gradient_flow",
    "integrate",
    "lambdify_jax",
    "lambdify_numpy",
    "loss_model",
    "parse_loss",
    "plane_grid",
    "portrait",
    "progress_bar",
    "save_with_data",
    "show_domain",
    "to_jsonable",
    "widened_bounds",
]
