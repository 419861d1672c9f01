"""Which model a command runs on: a registered name, an installed plugin, a file, or ``--loss``.

- ``--model NAME``, ``--model path/to/file.py:factory``: a model spec
  (:mod:`gradflow.systems.model_specs`: the registry, an installed plugin, a file);
- ``--loss EXPR`` with ``--params x,y``: a loss written as text (read without executing it).

Hyperparameters come from ``--hyper NAME=VALUE …`` or, for the registered models, their own
options (``--p``, ``--q``).  Nothing heavy is imported until a command runs.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import TYPE_CHECKING

from gradflow.systems.model_specs import ENTRY_POINTS, available, load_model

from ._registry import MODELS, ModelEntry

if TYPE_CHECKING:
    from gradflow import BoundModel, ReducedModel

__all__ = [
    "ENTRY_POINTS",
    "add_model_arguments",
    "available",
    "bound_model",
    "load_model",
    "note_loss_parameters",
    "precheck",
]

DEFAULT = "canonical"
MODEL_HYPERPARAMETERS = sorted({h for entry in MODELS.values() for h in entry.hyperparams})
"""The hyperparameter names that have an option of their own (``--p``, ``--q``)."""


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """``--model``, ``--loss``, ``--params``, ``--hyper`` and one option per registered
    hyperparameter name."""
    group = parser.add_argument_group("model")
    group.add_argument(
        "--model",
        metavar="NAME|FILE.py:FACTORY",
        help=f"a model listed by 'gradflow models', or a factory in a Python file (default {DEFAULT})",
    )
    group.add_argument(
        "--loss",
        metavar="EXPR",
        help='a loss written as text instead of a model, e.g. "(x**2 - 1)**2 + y**2"',
    )
    group.add_argument(
        "--params",
        metavar="X,Y",
        help="with --loss: the parameters in order (default: its symbols sorted by name)",
    )
    group.add_argument(
        "--hyper",
        nargs="+",
        default=[],
        metavar="NAME=VALUE",
        help="hyperparameter values, e.g. k=0.5 (any model)",
    )
    for name in MODEL_HYPERPARAMETERS:
        users = ", ".join(n for n, e in MODELS.items() if name in e.hyperparams)
        group.add_argument(
            f"--{name}",
            metavar=name.upper(),
            help=f"hyperparameter {name}; required with the models {users}",
        )


def _pairs_text(option: str, items: list[str]) -> dict[str, str]:
    """``["k=0.5"]`` as ``{"k": "0.5"}`` (the values as written).

    Raises:
        GradflowError: an item that is not ``NAME=VALUE``, or a repeated name.
    """
    from gradflow import GradflowError

    out: dict[str, str] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name or not text:
            raise GradflowError(f"{option} {item!r}: expected NAME=VALUE, e.g. k=0.5")
        if name in out:
            raise GradflowError(f"{option}: {name} is given twice")
        out[name] = text
    return out


def _pairs(option: str, items: list[str]) -> dict[str, float]:
    """``["k=0.5"]`` as ``{"k": 0.5}``.

    Raises:
        GradflowError: an item that is not ``NAME=NUMBER`` or not finite, or a repeated name.
    """
    from gradflow import GradflowError

    out: dict[str, float] = {}
    for item in items:
        name, sep, text = item.partition("=")
        try:
            value = float(text)
        except ValueError:
            sep = ""
        if not sep or not name:
            raise GradflowError(f"{option} {item!r}: expected NAME=NUMBER, e.g. k=0.5")
        if not math.isfinite(value):
            raise GradflowError(f"{option} {item!r}: the value must be a finite number")
        if name in out:
            raise GradflowError(f"{option}: {name} is given twice")
        out[name] = value
    return out


def precheck(args: argparse.Namespace) -> ModelEntry | None:
    """Check a registered model's hyperparameters from the registry alone, or a ``--loss`` by
    its grammar, before anything heavy is imported; return the registry entry, or for a loss of
    two or more parameters an entry with its parameters and default plane (``None`` for other
    models, checked on loading).

    Raises:
        GradflowError: a hyperparameter that is missing, not a number or outside its open range.
    """
    from gradflow import GradflowError

    if args.loss is not None:
        params = _precheck_loss(args)
        return ModelEntry("", params, (params[0], params[1]), {}) if len(params) > 1 else None
    if (args.model or DEFAULT) not in MODELS:
        return None

    entry = MODELS[args.model or DEFAULT]
    given = dict(item.partition("=")[::2] for item in args.hyper)
    for name, (lo, hi) in entry.hyperparams.items():
        raw = (
            getattr(args, name, None) if getattr(args, name, None) is not None else given.get(name)
        )
        if raw is None:
            raise GradflowError(
                f"model {args.model or DEFAULT!r} needs a value for {name} "
                f"(--{name} VALUE, in ({lo:g}, {hi:g}))"
            )
        try:
            value = float(raw)
        except ValueError:
            raise GradflowError(
                f"{name} must be a number in ({lo:g}, {hi:g}), got {raw!r}"
            ) from None
        if not lo < value < hi:
            raise GradflowError(f"{name} = {value:g} is outside the valid range ({lo:g}, {hi:g})")
    return entry


def _precheck_loss(args: argparse.Namespace) -> tuple[str, ...]:
    """``--loss`` read by the grammar alone (no SymPy): syntax, functions, and its symbols
    against ``--params`` and ``--hyper``; returns its parameters in order.

    Raises:
        GradflowError: prefixed ``--loss:``.
    """
    from gradflow import GradflowError
    from gradflow._symbolic.grammar import Names, check_names, read

    if args.model is not None:
        raise GradflowError("--model and --loss exclude each other: give one")
    names = Names()
    params = None if args.params is None else [p.strip() for p in args.params.split(",")]
    hyper = list(_pairs("--hyper", args.hyper))
    hyper += [n for n in MODEL_HYPERPARAMETERS if getattr(args, n, None) is not None]
    try:
        read(args.loss, names)
        return tuple(check_names(args.loss, names.found, params, hyper))
    except GradflowError as error:
        raise GradflowError(f"--loss: {error}") from None


def note_loss_parameters(args: argparse.Namespace, model: ReducedModel | BoundModel) -> None:
    """Say on stderr, in one line, which symbols a ``--loss`` given without ``--params`` made
    parameters, when they are more than the two of a plane (a symbol meant as a hyperparameter
    becomes a parameter otherwise without a word).  Commands call it after their checks, so a
    refused run stays one line."""
    if args.loss is None or args.params is not None or len(model.param_names) <= 2:
        return
    names = ", ".join(model.param_names)
    print(
        f"note: --loss without --params: its parameters are {names} (the symbols given no "
        "value, sorted; --params X,Y,… sets them, --hyper NAME=VALUE fixes one)",
        file=sys.stderr,
    )


def bound_model(args: argparse.Namespace) -> BoundModel:
    """The model the options select, bound to its hyperparameter values.

    Raises:
        GradflowError: ``--model`` with ``--loss``, ``--params`` without ``--loss``, a loss that
            does not parse, an unknown model, a hyperparameter missing, unknown, given twice or
            outside its range; each message names the option.
    """
    from gradflow import GradflowError, loss_model

    hyper = _pairs("--hyper", args.hyper)
    for name in MODEL_HYPERPARAMETERS:
        raw = getattr(args, name, None)
        if raw is not None:
            if name in hyper:
                raise GradflowError(f"--{name} and --hyper {name}=… give {name} twice")
            hyper[name] = raw
    if args.loss is not None:
        if args.model is not None:
            raise GradflowError("--model and --loss exclude each other: give one")
        params = None if args.params is None else [p.strip() for p in args.params.split(",")]
        try:
            model = loss_model(
                args.loss, params=params, hyperparams=list(hyper), name=f"L = {args.loss.strip()}"
            )
        except GradflowError as error:
            raise GradflowError(f"--loss: {error}") from None
    else:
        if args.params is not None:
            raise GradflowError("--params goes with --loss (a model names its own parameters)")
        model = load_model(args.model or DEFAULT)
    missing = [h.name for h in model.hyperparams if h.name not in hyper]
    if missing:
        from gradflow import show_domain

        ranges = ", ".join(
            f"{h.name} in {show_domain(model.domains[h])}" for h in model.hyperparams
        )
        raise GradflowError(
            f"model {model.name!r} needs a value for {', '.join(missing)} "
            f"(--hyper {missing[0]}=VALUE, or --{missing[0]}; {ranges})"
        )
    return model.bind(**hyper)
