"""The command line's registry against what it names: every command, figure and benchmark
module provides what the registry's docstring promises, and every registered model's light
facts (parameters, plane, hyperparameter ranges — kept in the registry so that arguments are
checked before a model is imported) repeat the model's own declaration."""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path

import pytest
import sympy as sp

import gradflow
import gradflow.benchmarks
import gradflow.cli
import gradflow.systems
from gradflow.cli._registry import BENCHES, COMMANDS, FIGURES, MODELS


def _modules(package, pattern: str = "*.py") -> set[str]:
    """The dotted names of ``package``'s public modules, in its subpackages too, whose file names
    match ``pattern``."""
    folder = Path(package.__file__).parent
    return {
        ".".join((package.__name__, *path.relative_to(folder).with_suffix("").parts))
        for path in folder.rglob(pattern)
        if not path.stem.startswith("_")
    }


def test_every_command_figure_and_benchmark_module_is_registered() -> None:
    """A module added without its registry line is caught here: every public module of
    ``gradflow.cli`` is a command, every module of ``gradflow.systems`` named ``figure`` or
    ``figure_*`` a figure, and every module of ``gradflow.benchmarks`` a benchmark."""
    assert {c.module for c in COMMANDS.values()} == _modules(gradflow.cli)
    figures = _modules(gradflow.systems, "figure.py") | _modules(gradflow.systems, "figure_*.py")
    assert {c.module for c in FIGURES.values()} == figures
    assert {c.module for c in BENCHES.values()} == _modules(gradflow.benchmarks)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_module_parses_and_runs(name) -> None:
    """A command is one module named after it with ``add_arguments`` (or
    ``add_arguments_from``, options that depend on an earlier option) and ``run``, or, for a
    command with entries of its own, ``SUBCOMMANDS`` (a registry), ``attach``, ``METAVAR`` and
    ``run``."""
    module = importlib.import_module(COMMANDS[name].module)
    assert module.__name__ == f"gradflow.cli.{name.replace('-', '_')}"
    assert callable(module.run)
    if hasattr(module, "SUBCOMMANDS"):
        assert module.SUBCOMMANDS in (FIGURES, BENCHES)
        assert callable(module.attach) and module.METAVAR
    else:
        assert callable(getattr(module, "add_arguments", None)) or callable(
            getattr(module, "add_arguments_from", None)
        )


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_every_figure_module_computes_and_draws(name) -> None:
    module = importlib.import_module(FIGURES[name].module)
    assert module.NAME == name
    assert dataclasses.is_dataclass(module.Config)
    assert callable(module.compute) and callable(module.draw)
    width, height = module.SIZE
    assert width > 0 and height > 0


@pytest.mark.parametrize("name", sorted(BENCHES))
def test_every_benchmark_module_has_a_config_and_a_bench(name) -> None:
    module = importlib.import_module(BENCHES[name].module)
    assert dataclasses.is_dataclass(module.Config) and callable(module.bench)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_registered_model_matches_its_declaration(name) -> None:
    entry = MODELS[name]
    module, _, factory = entry.factory.partition(":")
    model = getattr(importlib.import_module(module), factory)()
    assert isinstance(model, gradflow.ReducedModel)
    assert entry.params == model.param_names
    assert entry.plane == model.plane
    assert [h.name for h in model.hyperparams] == list(entry.hyperparams)
    for h in model.hyperparams:
        domain, (lo, hi) = model.domains[h], entry.hyperparams[h.name]
        assert isinstance(domain, sp.Interval) and domain.left_open and domain.right_open
        assert (float(domain.start), float(domain.end)) == (lo, hi), h.name
