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
    "Attractor": "._critical.attractors",
    "AttractorIndex": "._critical.attractors",
    "BasinMap": "._basins.basin_map",
    "FractionError": "._basins.basin_map",
    "BasinConvergence": "._basins.convergence",
    "basin_convergence": "._basins.convergence",
    "LABELS": "._basins.basin_map",
    "Label": "._basins.basin_map",
    "basin_memory": "._output.memory",
    "sweep_memory": "._output.memory",
    "basins": "._basins.basins",
    "default_basin_options": "._basins.basins",
    "Region": "._landscape.region",
    "grid_axis": "._landscape.region",
    "FlowEndpoints": "._flow.batched",
    "run_cells": "._cells.cells",
    "Certificate": "._critical.certify",
    "CertifiedPoint": "._critical.certify",
    "Explanation": "._critical.certify",
    "certify": "._critical.certify",
    "KINDS": "._critical.classify",
    "classify_points": "._critical.classify",
    "CriticalSet": "._critical.sets",
    "CriticalSets": "._critical.sets",
    "critical_sets": "._critical.search",
    "decision_level": "._critical.sets",
    "global_min_level": "._critical.sets",
    "descend": "._flow.descent",
    "GradflowError": "._errors",
    "loss_model": "._symbolic.expression",
    "parse_loss": "._symbolic.expression",
    "flow": "._flow.flows",
    "flow_endpoints": "._flow.flows",
    "gradient_descent": "._flow.flows",
    "FlowOptions": "._flow.integrate",
    "SOLVERS": "._flow.integrate",
    "Status": "._flow.integrate",
    "Trajectory": "._flow.integrate",
    "gradient_flow": "._flow.integrate",
    "integrate": "._flow.integrate",
    "atomic_outputs": "._output.io",
    "check_folder": "._output.io",
    "check_output": "._output.io",
    "open_checkpoint": "._output.io",
    "save_with_data": "._output.io",
    "Result": "._output.io",
    "save_result": "._output.io",
    "to_jsonable": "._output.io",
    "JaxLandscape": "._landscape.jax",
    "ClosedForm": "._landscape.base",
    "GradientField": "._landscape.base",
    "Landscape": "._landscape.base",
    "LOWERED_FUNCTIONS": "._symbolic.lowering",
    "LogAddExp": "._symbolic.lowering",
    "LogSigmoid": "._symbolic.lowering",
    "Sigmoid": "._symbolic.lowering",
    "Softplus": "._symbolic.lowering",
    "binary_cross_entropy": "._symbolic.lowering",
    "lambdify_jax": "._symbolic.lowering",
    "lambdify_numpy": "._symbolic.lowering",
    "stabilize": "._symbolic.lowering",
    "METRICS": "._landscape.metric",
    "Metric": "._landscape.metric",
    "MetricLandscape": "._landscape.metric",
    "in_metric": "._landscape.metric",
    "LossScales": "._landscape.scales",
    "loss_scales": "._landscape.scales",
    "BoundModel": "._symbolic.model",
    "CriticalSetSpec": "._symbolic.model",
    "ReducedModel": "._symbolic.model",
    "show_domain": "._symbolic.model",
    "FORMATS": "._output.io",
    "BIFURCATION_TYPES": "._sweep.continuation",
    "Bifurcation": "._sweep.continuation",
    "Branch": "._sweep.continuation",
    "stability": "._sweep.continuation",
    "Sweep": "._sweep.sweep",
    "SweepCell": "._sweep.sweep",
    "follow": "._sweep.sweep",
    "remove_checkpoint": "._sweep.sweep",
    "sweep": "._sweep.sweep",
    "FUNCTION_NAMES": "._symbolic.grammar",
    "Overlay": "._portrait.portrait",
    "Portrait": "._portrait.portrait",
    "portrait": "._portrait.portrait",
    "progress_bar": "._output.progress",
    "format_point": "._output.text",
    "format_table": "._output.text",
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
    from ._basins.basin_map import LABELS, BasinMap, FractionError, Label
    from ._basins.basins import basins, default_basin_options
    from ._basins.convergence import BasinConvergence, basin_convergence
    from ._cells.cells import run_cells
    from ._critical.attractors import Attractor, AttractorIndex
    from ._critical.certify import Certificate, CertifiedPoint, Explanation, certify
    from ._critical.classify import KINDS, classify_points
    from ._critical.search import critical_sets
    from ._critical.sets import CriticalSet, CriticalSets, decision_level, global_min_level
    from ._errors import GradflowError
    from ._flow.batched import FlowEndpoints
    from ._flow.descent import descend
    from ._flow.flows import flow, flow_endpoints, gradient_descent
    from ._flow.integrate import SOLVERS, FlowOptions, Status, Trajectory, gradient_flow, integrate
    from ._landscape.base import ClosedForm, GradientField, Landscape
    from ._landscape.jax import JaxLandscape
    from ._landscape.metric import METRICS, Metric, MetricLandscape, in_metric
    from ._landscape.region import Region, grid_axis
    from ._landscape.scales import LossScales, loss_scales
    from ._output.io import (
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
    from ._output.memory import basin_memory, sweep_memory
    from ._output.progress import progress_bar
    from ._output.text import format_point, format_table
    from ._portrait.portrait import Overlay, Portrait, portrait
    from ._sweep.continuation import BIFURCATION_TYPES, Bifurcation, Branch, stability
    from ._sweep.sweep import Sweep, SweepCell, follow, remove_checkpoint, sweep
    from ._symbolic.expression import loss_model, parse_loss
    from ._symbolic.grammar import FUNCTION_NAMES
    from ._symbolic.lowering import (
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
    from ._symbolic.model import BoundModel, CriticalSetSpec, ReducedModel, show_domain

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
    "to_jsonable",
]
