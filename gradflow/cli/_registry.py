"""Lazily imported subcommands: a name, a module path and a one-line help.

The engine's own commands are listed here; models, analyses, benchmarks and figures list theirs
in ``gradflow.models.MODELS``, ``gradflow.analysis.COMMANDS``, ``gradflow.analysis.BENCHES`` and
``gradflow.figures.FIGURES``, so the engine never imports them until a user asks for one.

A command module provides ``add_arguments(parser)`` and ``run(args) -> int | None``; it raises
:class:`gradflow.GradflowError` for bad input (the CLI turns that into a one-line message and
exit status 2).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Command", "ENGINE_COMMANDS", "ModelEntry"]


@dataclass(frozen=True)
class Command:
    """A subcommand: the module that implements it and its one-line help."""

    module: str
    help: str


@dataclass(frozen=True)
class ModelEntry:
    """A reduced model the model commands can use.

    Attributes:
        factory: ``"module:function"`` returning the :class:`gradflow.ReducedModel`.
        hyperparams: its hyperparameter names (each becomes a ``--NAME`` option).
        help: one line for ``--help``.
    """

    factory: str
    hyperparams: tuple[str, ...]
    help: str


ENGINE_COMMANDS = {
    "portrait": Command(
        "gradflow.cli._portrait", "phase portrait: streamlines, critical sets, separatrix, basins"
    ),
    "critical": Command("gradflow.cli._critical", "critical sets, classified by the Hessian"),
    "basins": Command("gradflow.cli._basins", "basin map of the gradient flow on a grid"),
    "flow": Command("gradflow.cli._flow", "one trajectory of the gradient flow to convergence"),
    "figures": Command("gradflow.cli._figures", "regenerate a paper figure"),
    "bench": Command("gradflow.cli._bench", "run a benchmark"),
}
