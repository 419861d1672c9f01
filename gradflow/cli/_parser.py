"""argparse with one-line errors and lazily imported subcommands."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import NoReturn

from ._registry import Command

__all__ = ["EXIT_USAGE", "Parser", "add_subcommands", "fail"]

EXIT_USAGE = 2
"""Exit status for bad input, as argparse uses."""


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line on stderr, exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def add_subcommands(
    parser: argparse.ArgumentParser,
    registry: Mapping[str, Command],
    argv: Sequence[str],
    dest: str,
    attach: Callable[[argparse.ArgumentParser, ModuleType], None] | None = None,
    metavar: str = "COMMAND",
) -> None:
    """Add one subparser per registry entry; import and fill in only the one named in ``argv``.

    Every entry is listed in ``--help`` with its one-line help, but only the selected module is
    imported, so a command starts without loading the others (figures import matplotlib,
    analyses import equinox and optax).

    A command module provides ``add_arguments(parser)`` and ``run(args)``.  A command with
    entries of its own (``figures``, ``bench``) provides ``SUBCOMMANDS`` (a registry) and
    ``attach(parser, module)``, which adds the options of the selected entry's module and sets
    ``_run``, and ``METAVAR``, what an entry is called in messages (``FIGURE``); ``attach`` is
    that function while the entries are added.
    """
    sub = parser.add_subparsers(dest=dest, required=True, metavar=metavar, parser_class=Parser)
    selected = next((a for a in argv if not a.startswith("-")), None)
    for name, command in registry.items():
        p = sub.add_parser(name, help=command.help, description=command.help)
        if name != selected:
            continue
        module = importlib.import_module(command.module)
        if attach is not None:
            attach(p, module)
        elif hasattr(module, "SUBCOMMANDS"):
            rest = list(argv[list(argv).index(name) + 1 :])
            add_subcommands(
                p, module.SUBCOMMANDS, rest, f"{dest}_name", module.attach, module.METAVAR
            )
        else:
            module.add_arguments(p)
            p.set_defaults(_run=module.run)


def fail(prog: str, message: str) -> int:
    """Print a one-line error and return the usage exit status."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    return EXIT_USAGE
