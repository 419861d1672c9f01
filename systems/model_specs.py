"""Which model a name stands for: a registered name, an installed plugin, or a file.

A *model spec* is one of

- a name of :data:`gradflow.systems.MODELS`;
- a name an installed package registers under the entry-point group ``gradflow.models``
  (``[project.entry-points."gradflow.models"] double-well = "package.module:factory"``);
- ``path/to/file.py:factory``: ``factory()`` (or the attribute itself) from that file.

The command line's ``--model`` and the fate map of a declared full model
(:mod:`gradflow.systems.plane_fate`) resolve their model here, so both accept the same specs.
Nothing is imported until :func:`load_model` is called.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import MODELS

if TYPE_CHECKING:
    from gradflow import ReducedModel

__all__ = ["ENTRY_POINTS", "available", "is_file_spec", "load_model"]

ENTRY_POINTS = "gradflow.models"
"""The entry-point group through which installed packages register models."""


def available() -> dict[str, tuple[str, str]]:
    """Every model name a spec may use: ``{name: ("module:factory", where it comes from)}``,
    the registry's first, then the installed plugins'."""
    out = {name: (entry.factory, "gradflow") for name, entry in MODELS.items()}
    for point in importlib.metadata.entry_points(group=ENTRY_POINTS):
        out.setdefault(point.name, (point.value, point.dist.name if point.dist else "plugin"))
    return out


def is_file_spec(spec: str) -> bool:
    """Whether ``spec`` has the form ``FILE.py:FACTORY``."""
    path, sep, attr = spec.rpartition(":")
    return bool(sep and attr and path.endswith(".py"))


def load_model(spec: str) -> ReducedModel:
    """The :class:`gradflow.ReducedModel` that ``spec`` names (see the module docstring).

    Raises:
        GradflowError: an unknown name, a missing file or factory, or a factory that does not
            return a ReducedModel.
    """
    from gradflow import GradflowError, ReducedModel

    models = available()
    if spec in models:
        module, _, attr = models[spec][0].partition(":")
        factory = getattr(importlib.import_module(module), attr)
    elif is_file_spec(spec):
        factory = _file_attribute(spec)
    else:
        raise GradflowError(
            f"--model {spec!r} is not a known model ({', '.join(sorted(models))}) "
            "nor FILE.py:FACTORY; 'gradflow models' lists them"
        )
    model = factory() if callable(factory) else factory
    if not isinstance(model, ReducedModel):
        raise GradflowError(f"--model {spec!r} gave a {type(model).__name__}, not a ReducedModel")
    return model


def _file_attribute(spec: str) -> Any:
    """The attribute ``FACTORY`` of the Python file of ``FILE.py:FACTORY``, the file run as a
    module of its own."""
    from gradflow import GradflowError

    path, _, attr = spec.rpartition(":")
    file = Path(path)
    if not file.is_file():
        raise GradflowError(f"--model {spec!r}: file {path!r} does not exist")
    module_spec = importlib.util.spec_from_file_location(f"gradflow_user_model_{file.stem}", file)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    if not hasattr(module, attr):
        raise GradflowError(f"--model {spec!r}: {path} has no {attr!r}")
    return getattr(module, attr)
