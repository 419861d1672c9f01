"""gradflow: gradient-flow analysis of the reduced models of transformer training dynamics.

A reduced model is a loss ``L(θ; h)`` declared in SymPy (:class:`ReducedModel`); bound to its
hyperparameters it is a :class:`Landscape`, as is a loss written directly in JAX
(:class:`JaxLandscape`).  On a landscape the engine computes gradient flows, critical sets,
basins of attraction and phase portraits.  Importing gradflow enables JAX's float64 mode
(critical points, Hessian spectra and conserved quantities need it) — through JAX's environment
variable when JAX is not loaded yet — but loads nothing heavy itself: every public name is
imported on first use, and matplotlib only when something is drawn.

The private modules run in layers, from errors and types down to this module's re-exports;
``docs/architecture.md`` draws them and ``tests/test_architecture.py`` checks the order.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

os.environ.setdefault("JAX_ENABLE_X64", "1")
if "jax" in sys.modules:
    sys.modules["jax"].config.update("jax_enable_x64", True)

_EXPORTS = {
    "Attractor": "._attractors",
    "AttractorIndex": "._attractors",
    "BasinMap": "._basin_map",
    "FractionError": "._basin_map",
    "BasinConvergence": "._basin_convergence",
    "basin_convergence": "._basin_convergence",
    "LABELS": "._basin_map",
    "Label": "._basin_map",
    "basin_memory": "._memory",
    "sweep_memory": "._memory",
    "basins": "._basins",
    "default_basin_options": "._basins",
    "Region": "._region",
    "grid_axis": "._region",
    "widened_bounds": "._basins",
    "FlowEndpoints": "._batched",
    "run_cells": "._cells",
    "Certificate": "._certify",
    "CertifiedPoint": "._certify",
    "Explanation": "._certify",
    "certify": "._certify",
    "KINDS": "._classify",
    "classify_points": "._classify",
    "CriticalSet": "._critical_sets",
    "CriticalSets": "._critical_sets",
    "critical_sets": "._critical",
    "decision_level": "._critical_sets",
    "global_min_level": "._critical_sets",
    "descend": "._descent",
    "GradflowError": "._errors",
    "loss_model": "._expression",
    "parse_loss": "._expression",
    "flow": "._flows",
    "flow_endpoints": "._flows",
    "gradient_descent": "._flows",
    "FlowOptions": "._integrate",
    "SOLVERS": "._integrate",
    "Status": "._integrate",
    "Trajectory": "._integrate",
    "gradient_flow": "._integrate",
    "integrate": "._integrate",
    "atomic_outputs": "._io",
    "check_folder": "._io",
    "check_output": "._io",
    "open_checkpoint": "._io",
    "save_with_data": "._io",
    "Result": "._io",
    "save_result": "._io",
    "to_jsonable": "._io",
    "JaxLandscape": "._jax_landscape",
    "ClosedForm": "._landscape",
    "GradientField": "._landscape",
    "Landscape": "._landscape",
    "LOWERED_FUNCTIONS": "._lowering",
    "LogAddExp": "._lowering",
    "LogSigmoid": "._lowering",
    "Sigmoid": "._lowering",
    "Softplus": "._lowering",
    "binary_cross_entropy": "._lowering",
    "lambdify_jax": "._lowering",
    "lambdify_numpy": "._lowering",
    "stabilize": "._lowering",
    "METRICS": "._metric",
    "Metric": "._metric",
    "MetricLandscape": "._metric",
    "in_metric": "._metric",
    "Kinks": "._landscape",
    "SlideResult": "._sliding",
    "slide": "._sliding",
    "LossScales": "._scales",
    "loss_scales": "._scales",
    "BoundModel": "._model",
    "CriticalSetSpec": "._model",
    "ReducedModel": "._model",
    "show_domain": "._model",
    "FORMATS": "._io",
    "BIFURCATION_TYPES": "._continuation",
    "Bifurcation": "._continuation",
    "Branch": "._continuation",
    "stability": "._continuation",
    "Sweep": "._sweep",
    "SweepCell": "._sweep",
    "follow": "._sweep",
    "remove_checkpoint": "._sweep",
    "sweep": "._sweep",
    "FUNCTION_NAMES": "._grammar",
    "Overlay": "._portrait",
    "Portrait": "._portrait",
    "portrait": "._portrait",
    "progress_bar": "._progress",
    "format_point": "._text",
    "format_table": "._text",
}
"""Each public name and the private module that defines it."""


def __getattr__(name: str) -> Any:
    """Import the module that defines ``name`` on first use (PEP 562): ``import gradflow`` stays
    instant, so the command line can check its arguments before JAX is loaded."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'gradflow' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


if TYPE_CHECKING:
    from ._attractors import Attractor, AttractorIndex
    from ._basin_convergence import BasinConvergence, basin_convergence
    from ._basin_map import LABELS, BasinMap, FractionError, Label
    from ._basins import basins, default_basin_options, widened_bounds
    from ._batched import FlowEndpoints
    from ._cells import run_cells
    from ._certify import Certificate, CertifiedPoint, Explanation, certify
    from ._classify import KINDS, classify_points
    from ._continuation import BIFURCATION_TYPES, Bifurcation, Branch, stability
    from ._critical import critical_sets
    from ._critical_sets import CriticalSet, CriticalSets, decision_level, global_min_level
    from ._descent import descend
    from ._errors import GradflowError
    from ._expression import loss_model, parse_loss
    from ._flows import flow, flow_endpoints, gradient_descent
    from ._grammar import FUNCTION_NAMES
    from ._integrate import SOLVERS, FlowOptions, Status, Trajectory, gradient_flow, integrate
    from ._io import (
        FORMATS,
        Result,
        atomic_outputs,
        check_folder,
        check_output,
        open_checkpoint,
        save_result,
        save_with_data,
        to_jsonable,
    )
    from ._jax_landscape import JaxLandscape
    from ._landscape import ClosedForm, GradientField, Kinks, Landscape
    from ._lowering import (
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
    from ._memory import basin_memory, sweep_memory
    from ._metric import METRICS, Metric, MetricLandscape, in_metric
    from ._model import BoundModel, CriticalSetSpec, ReducedModel, show_domain
    from ._portrait import Overlay, Portrait, portrait
    from ._progress import progress_bar
    from ._region import Region, grid_axis
    from ._scales import LossScales, loss_scales
    from ._sliding import SlideResult, slide
    from ._sweep import Sweep, SweepCell, follow, remove_checkpoint, sweep
    from ._text import format_point, format_table

__all__ = [
    "BIFURCATION_TYPES",
    "Bifurcation",
    "Branch",
    "stability",
    "FORMATS",
    "Sweep",
    "SweepCell",
    "follow",
    "remove_checkpoint",
    "run_cells",
    "sweep",
    "FUNCTION_NAMES",
    "LOWERED_FUNCTIONS",
    "LogAddExp",
    "Softplus",
    "stabilize",
    "KINDS",
    "LABELS",
    "Label",
    "Attractor",
    "AttractorIndex",
    "BasinConvergence",
    "BasinMap",
    "BoundModel",
    "ClosedForm",
    "Certificate",
    "CertifiedPoint",
    "CriticalSet",
    "CriticalSetSpec",
    "CriticalSets",
    "FlowEndpoints",
    "FlowOptions",
    "FractionError",
    "GradflowError",
    "GradientField",
    "JaxLandscape",
    "Kinks",
    "Landscape",
    "LogSigmoid",
    "Explanation",
    "METRICS",
    "Metric",
    "MetricLandscape",
    "Overlay",
    "Portrait",
    "ReducedModel",
    "Region",
    "SOLVERS",
    "Result",
    "Sigmoid",
    "Status",
    "Trajectory",
    "atomic_outputs",
    "basin_convergence",
    "basin_memory",
    "sweep_memory",
    "basins",
    "binary_cross_entropy",
    "check_folder",
    "check_output",
    "certify",
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
    "in_metric",
    "loss_scales",
    "LossScales",
    "grid_axis",
    "integrate",
    "lambdify_jax",
    "lambdify_numpy",
    "loss_model",
    "open_checkpoint",
    "parse_loss",
    "portrait",
    "progress_bar",
    "save_result",
    "save_with_data",
    "show_domain",
    "slide",
    "SlideResult",
    "to_jsonable",
    "widened_bounds",
]
