"""Command-line options from a configuration dataclass, and the dataclass back from the options.

Figures, benchmarks and analyses take a frozen ``Config`` dataclass; the command line offers one
``--option`` per field, so their modules never import argparse.  A field's ``metadata`` may give
``help`` (one line), ``flag`` (the option name, default ``--field-name``), ``choices`` and
``parse`` (a function from the option's text to the value).  Types ``int``, ``float``, ``str``,
``bool``, ``T | None`` and ``tuple[T, ...]`` (written as a comma list, ``0.1,0.2``) are understood.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from collections.abc import Callable
from typing import Any

__all__ = ["add_config_arguments", "comma_list", "config_from_args"]


def comma_list(item: Callable[[str], Any]) -> Callable[[str], tuple[Any, ...]]:
    """A parser of ``"a,b,c"`` into a tuple of ``item(a), item(b), item(c)``."""

    def parse(text: str) -> tuple[Any, ...]:
        parts = [part.strip() for part in text.split(",")]
        try:
            return tuple(item(part) for part in parts if part)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a comma list of {item.__name__} values, got {text!r}"
            ) from None

    parse.__name__ = f"comma list of {item.__name__}"
    return parse


def _parser_for(kind: Any) -> tuple[Callable[[str], Any] | None, bool]:
    """``(parse, is_flag)`` for a field type: a text parser, or ``is_flag`` for booleans."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        return _parser_for(rest[0]) if len(rest) == 1 else (str, False)
    if kind is bool:
        return None, True
    if origin is tuple:
        return comma_list(args[0]), False
    if kind in (int, float, str):
        return kind, False
    return str, False


def _default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None


def _shown(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def add_config_arguments(
    parser: argparse.ArgumentParser, config_type: type, *, skip: tuple[str, ...] = ()
) -> None:
    """Add one option per init field of the dataclass ``config_type`` (except ``skip``)."""
    hints = typing.get_type_hints(config_type)
    for field in dataclasses.fields(config_type):
        if not field.init or field.name in skip:
            continue
        flag = field.metadata.get("flag", "--" + field.name.replace("_", "-"))
        default = _default(field)
        parse, is_flag = _parser_for(hints[field.name])
        parse = field.metadata.get("parse", parse)
        text = field.metadata.get("help", "")
        if is_flag:
            parser.add_argument(
                flag,
                dest=field.name,
                action=argparse.BooleanOptionalAction,
                default=default,
                help=text,
            )
            continue
        shown = "" if default is None else f" (default {_shown(default)})"
        parser.add_argument(
            flag,
            dest=field.name,
            type=parse,
            default=default,
            choices=field.metadata.get("choices"),
            metavar=field.metadata.get("metavar"),
            help=f"{text}{shown}",
        )


def config_from_args(config_type: type, args: argparse.Namespace, **extra: Any) -> Any:
    """The dataclass ``config_type`` from the parsed options (and ``extra`` keyword values).

    Raises:
        GradflowError: whatever the dataclass's own checks raise for a bad value.
    """
    values = {
        field.name: getattr(args, field.name)
        for field in dataclasses.fields(config_type)
        if field.init and hasattr(args, field.name)
    }
    return config_type(**values | extra)
