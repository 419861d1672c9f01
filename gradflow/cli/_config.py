"""Command-line options from a configuration dataclass, and the dataclass back from the options.

Figures, benchmarks and analyses take a frozen ``Config`` dataclass; the command line offers one
``--option`` per field, so their modules never import argparse.  A field's ``metadata`` may give

- ``help``: one line (the default is appended to it);
- ``flag``: the option name (default ``--field-name``);
- ``metavar``: the value's name in ``--help`` (a tuple with ``nargs``; default from the flag);
- ``choices``: the allowed values;
- ``nargs``: ``2``, ``"+"``…: the value is several words, each parsed by the element type;
- ``parse``: a function from the option's text to the value; a ``ValueError`` it raises
  becomes the option's one-line error.

Types ``int``, ``float``, ``str``, ``bool``, ``T | None`` and ``tuple[T, ...]`` (written as a
comma list, ``0.1,0.2``, unless ``nargs`` is given) are understood.  A ``bool`` field is a flag
(``--name`` sets it; one whose default is true also gets ``--no-name``).  A field without a
default is a required option.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
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


def _reported(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """``parse`` with its ``ValueError`` message shown as the option's error."""

    @functools.wraps(parse)
    def checked(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return checked


def _parser_for(kind: Any, several: bool) -> tuple[Callable[[str], Any] | None, bool]:
    """``(parse, is_flag)`` for a field type: a text parser, or ``is_flag`` for booleans.

    ``several``: the option takes several words (``nargs``), so a tuple is parsed per element.
    """
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        return _parser_for(rest[0], several) if len(rest) == 1 else (str, False)
    if kind is bool:
        return None, True
    if origin is tuple:
        return (args[0], False) if several else (comma_list(args[0]), False)
    if kind in (int, float, str):
        return kind, False
    return str, False


def _default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None


def _required(field: dataclasses.Field) -> bool:
    return field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING


def _shown(value: Any, several: bool) -> str:
    if isinstance(value, tuple | list):
        return (" " if several else ",").join(_shown(v, several) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _metavar(flag: str) -> str:
    """The value's name in ``--help`` for an option ``flag``: ``--d-head`` → ``D_HEAD``."""
    return flag.lstrip("-").replace("-", "_").upper()


def add_config_arguments(
    parser: argparse.ArgumentParser, config_type: type, *, skip: tuple[str, ...] = ()
) -> None:
    """Add one option per init field of the dataclass ``config_type`` (except ``skip``)."""
    hints = typing.get_type_hints(config_type)
    for field in dataclasses.fields(config_type):
        if not field.init or field.name in skip:
            continue
        meta = field.metadata
        flag = meta.get("flag", "--" + field.name.replace("_", "-"))
        default = _default(field)
        nargs = meta.get("nargs")
        parse, is_flag = _parser_for(hints[field.name], nargs is not None)
        parse = _reported(meta["parse"]) if "parse" in meta else parse
        text = meta.get("help", "")
        if is_flag:
            action = argparse.BooleanOptionalAction if default else "store_true"
            parser.add_argument(flag, dest=field.name, action=action, default=default, help=text)
            continue
        shown = "" if default is None else f" (default {_shown(default, nargs is not None)})"
        parser.add_argument(
            flag,
            dest=field.name,
            type=parse,
            nargs=nargs,
            default=default,
            required=_required(field),
            choices=meta.get("choices"),
            metavar=meta.get("metavar", None if "choices" in meta else _metavar(flag)),
            help=f"{text}{shown}",
        )


def config_from_args(
    config_type: type,
    args: argparse.Namespace,
    adjust: Callable[[Any], Any] | None = None,
    **extra: Any,
) -> Any:
    """The dataclass ``config_type`` from the parsed options (and ``extra`` keyword values),
    changed by ``adjust`` where given (``--quick``'s settings) before its sizes are checked.

    Several words (``nargs``) become a tuple; options the parser did not add (``skip``) keep the
    dataclass's default.

    A configuration with a ``memory_bytes()`` estimate that cannot fit in memory is refused
    before anything is allocated.

    Raises:
        GradflowError: whatever the dataclass's own checks raise for a bad value, or sizes
            beyond the memory available.
    """
    from ._sizes import check_config

    fields = [f for f in dataclasses.fields(config_type) if f.init]
    values = {f.name: getattr(args, f.name) for f in fields if hasattr(args, f.name)}
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
    config = config_type(**values | extra)
    if adjust is not None:
        config = adjust(config)
    flags = {f.name: f.metadata.get("flag", "--" + f.name.replace("_", "-")) for f in fields}
    check_config(config, flags)
    return config
