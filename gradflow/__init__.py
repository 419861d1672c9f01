"""gradflow: gradient-flow analysis of the reduced models of transformer training dynamics.

A reduced model is a loss ``L(θ; h)`` declared in SymPy (:class:`ReducedModel`); bound to its
hyperparameters it is a :class:`Landscape`, as is a loss written directly in JAX
(:class:`JaxLandscape`).  On a landscape the engine computes gradient flows, critical sets,
basins of attraction and phase portraits.  Importing gradflow enables JAX's float64 mode
(critical points, Hessian spectra and conserved quantities need it) — through JAX's environment
variable when JAX is not loaded yet — but loads nothing heavy itself: every public name is
imported on first use, and matplotlib only when something is drawn.  It also switches on JAX's
persistent compilation cache in ``~/.cache/gradflow/jax`` (``$GRADFLOW_CACHE_DIR``; empty turns
it off), so that a second run loads its compiled programs instead of compiling them.

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

from ._compiled.cache import enable_persistent_cache  # noqa: E402  (after float64, both cheap)

enable_persistent_cache()

_EXPORTS = {
    "Attractor": "._critical.attractors",
    "AttractorIndex": "._critical.attractors",
    "BasinMap": "._basins.basin_map",
    "FractionError": "._basins.basin_map",
    "basin_convergence": "._basins.convergence",
    "LABELS": "._outcome",
    "Evidence": "._evidence",
    "basin_memory": "._output.memory",
    "Estimate": "._output.memory",
    "sweep_memory": "._output.memory",
    "basins": "._basins.basins",
    "default_basin_options": "._basins.basins",
    "Region": "._landscape.region",
    "grid_axis": "._landscape.region",
    "run_cells": "._cells.cells",
    "certify": "._critical.certify",
    "KINDS": "._outcome",
    "Kind": "._outcome",
    "classify_points": "._critical.classify",
    "CriticalSet": "._critical.sets",
    "CriticalSets": "._critical.sets",
    "critical_sets": "._critical.search",
    "decision_level": "._critical.sets",
    "shortcut_level": "._basins.sublevel",
    "GradflowError": "._errors",
    "loss_model": "._symbolic.expression",
    "parse_loss": "._symbolic.expression",
    "flow": "._flow.flows",
    "flow_endpoints": "._flow.flows",
    "FlowEndpoints": "._flow.batched",
    "FlowOptions": "._flow.options",
    "ConstantStep": "._flow.options",
    "GradientDescent": "._flow.options",
    "PID": "._flow.options",
    "StopRule": "._flow.options",
    "Outcome": "._outcome",
    "Trajectory": "._flow.integrate",
    "atomic_outputs": "._output.io",
    "check_folder": "._output.io",
    "check_output": "._output.io",
    "open_checkpoint": "._output.io",
    "save_with_data": "._output.io",
    "Result": "._output.io",
    "save_result": "._output.io",
    "to_jsonable": "._output.io",
    "JaxLandscape": "._landscape.jax",
    "GradientField": "._landscape.base",
    "Landscape": "._landscape.base",
    "LOWERED_FUNCTIONS": "._symbolic.lowering",
    "LogAddExp": "._symbolic.functions",
    "LogSigmoid": "._symbolic.functions",
    "Sigmoid": "._symbolic.functions",
    "Softplus": "._symbolic.functions",
    "binary_cross_entropy": "._symbolic.functions",
    "lambdify_jax": "._symbolic.lowering",
    "lambdify_numpy": "._symbolic.lowering",
    "stabilize": "._symbolic.stabilize",
    "in_metric": "._landscape.metric",
    "Kinks": "._landscape.base",
    "padded_call": "._landscape.base",
    "SlideResult": "._flow.sliding",
    "slide": "._flow.sliding",
    "LossScales": "._landscape.scales",
    "loss_scales": "._landscape.scales",
    "BoundModel": "._symbolic.model",
    "CriticalSetSpec": "._symbolic.closed_forms",
    "ReducedModel": "._symbolic.model",
    "FullModel": "._symbolic.full",
    "show_domain": "._symbolic.model",
    "FORMATS": "._output.io",
    "Branch": "._sweep.branches",
    "stability": "._sweep.branches",
    "Sweep": "._sweep.sweep",
    "follow": "._sweep.sweep",
    "remove_checkpoint": "._sweep.sweep",
    "sweep": "._sweep.sweep",
    "FUNCTION_NAMES": "._symbolic.grammar",
    "Overlay": "._portrait.overlay",
    "read_overlays": "._portrait.overlay",
    "Portrait": "._portrait.portrait",
    "portrait": "._portrait.portrait",
    "progress_bar": "._output.progress",
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
    from ._basins.basin_map import BasinMap, FractionError
    from ._basins.basins import basins, default_basin_options
    from ._basins.convergence import basin_convergence
    from ._basins.sublevel import shortcut_level
    from ._cells.cells import run_cells
    from ._critical.attractors import Attractor, AttractorIndex
    from ._critical.certify import certify
    from ._critical.classify import classify_points
    from ._critical.search import critical_sets
    from ._critical.sets import CriticalSet, CriticalSets, decision_level
    from ._errors import GradflowError
    from ._evidence import Evidence
    from ._flow.batched import FlowEndpoints
    from ._flow.flows import flow, flow_endpoints
    from ._flow.integrate import Trajectory
    from ._flow.options import PID, ConstantStep, FlowOptions, GradientDescent, StopRule
    from ._flow.sliding import SlideResult, slide
    from ._landscape.base import GradientField, Kinks, Landscape, padded_call
    from ._landscape.jax import JaxLandscape
    from ._landscape.metric import in_metric
    from ._landscape.region import Region, grid_axis
    from ._landscape.scales import LossScales, loss_scales
    from ._outcome import KINDS, LABELS, Kind, Outcome
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
    from ._output.memory import Estimate, basin_memory, sweep_memory
    from ._output.progress import progress_bar
    from ._output.text import format_table
    from ._portrait.overlay import Overlay, read_overlays
    from ._portrait.portrait import Portrait, portrait
    from ._sweep.branches import Branch, stability
    from ._sweep.sweep import Sweep, follow, remove_checkpoint, sweep
    from ._symbolic.closed_forms import CriticalSetSpec
    from ._symbolic.expression import loss_model, parse_loss
    from ._symbolic.full import FullModel
    from ._symbolic.functions import (
        LogAddExp,
        LogSigmoid,
        Sigmoid,
        Softplus,
        binary_cross_entropy,
    )
    from ._symbolic.grammar import FUNCTION_NAMES
    from ._symbolic.lowering import LOWERED_FUNCTIONS, lambdify_jax, lambdify_numpy
    from ._symbolic.model import BoundModel, ReducedModel, show_domain
    from ._symbolic.stabilize import stabilize

__all__ = [
    "Branch",
    "stability",
    "FORMATS",
    "Sweep",
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
    "Evidence",
    "Kind",
    "Attractor",
    "AttractorIndex",
    "BasinMap",
    "BoundModel",
    "CriticalSet",
    "CriticalSetSpec",
    "CriticalSets",
    "FlowOptions",
    "ConstantStep",
    "GradientDescent",
    "PID",
    "StopRule",
    "FractionError",
    "FullModel",
    "GradflowError",
    "GradientField",
    "JaxLandscape",
    "Kinks",
    "padded_call",
    "Landscape",
    "LogSigmoid",
    "Overlay",
    "Portrait",
    "ReducedModel",
    "Region",
    "Result",
    "Sigmoid",
    "Outcome",
    "Trajectory",
    "atomic_outputs",
    "basin_convergence",
    "basin_memory",
    "Estimate",
    "sweep_memory",
    "basins",
    "binary_cross_entropy",
    "check_folder",
    "check_output",
    "certify",
    "classify_points",
    "critical_sets",
    "decision_level",
    "shortcut_level",
    "default_basin_options",
    "flow",
    "flow_endpoints",
    "FlowEndpoints",
    "format_table",
    "in_metric",
    "loss_scales",
    "LossScales",
    "grid_axis",
    "lambdify_jax",
    "lambdify_numpy",
    "loss_model",
    "open_checkpoint",
    "parse_loss",
    "portrait",
    "read_overlays",
    "progress_bar",
    "save_result",
    "save_with_data",
    "show_domain",
    "slide",
    "SlideResult",
    "to_jsonable",
]
