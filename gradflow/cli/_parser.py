"""argparse with one-line errors and lazily imported subcommands."""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any, NoReturn

from ._registry import Command

__all__ = ["EXIT_USAGE", "Parser", "add_subcommands", "fail"]

EXIT_USAGE = 2
"""Exit status for bad input, as argparse uses."""


NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-(inf|infinity|nan)$", re.I)
"""A word that is a negative number (``-1``, ``-.5``, ``-1e-3``, ``-inf``), not an option."""


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line on stderr, exit status 2.

    Unlike argparse's own, it reads ``-1e-3`` as a negative number rather than an option, and
    it refuses an option that takes a value given twice (argparse keeps the last silently).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = NEGATIVE_NUMBER

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")

    def parse_known_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:
        words = list(sys.argv[1:] if args is None else args)
        repeated = self._repeated(words)
        if repeated:
            self.error(f"{repeated} is given twice; give it once")
        return super().parse_known_args(words, namespace)

    def _repeated(self, words: Sequence[str]) -> str | None:
        """The first option that takes a value and occurs twice in ``words`` (up to the first
        word that is a subcommand, which its own parser checks), or ``None``."""
        seen: set[str] = set()
        options = self._option_string_actions
        choices = set()
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                choices |= set(action.choices)
        for word in words:
            if word == "--" or word in choices:
                return None
            if not word.startswith("--"):
                continue
            name = word.split("=", 1)[0]
            matches = [name] if name in options else [o for o in options if o.startswith(name)]
            if len(matches) != 1 or type(options[matches[0]]) is not argparse._StoreAction:
                continue
            action = options[matches[0]]
            if action.dest in seen:
                return "/".join(action.option_strings)
            seen.add(action.dest)
        return None


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

    A command module provides ``add_arguments(parser)`` and ``run(args)``; one whose options
    depend on an earlier option (``fate --model NAME``) provides ``add_arguments_from(parser,
    words)`` instead, given the words after the command's name.  A command with
    entries of its own (``figures``, ``bench``) provides ``SUBCOMMANDS`` (a registry) and
    ``attach(parser, module)``, which adds the options of the selected entry's module and sets
    ``_run``, and ``METAVAR``, what an entry is called in messages (``FIGURE``); ``attach`` is
    that function while the entries are added.
    """
    sub = parser.add_subparsers(dest=dest, required=True, metavar=metavar, parser_class=Parser)
    selected = next((a for a in argv if not a.startswith("-")), None)
    for name, command in registry.items():
        p = sub.add_parser(
            name, help=command.help, description=command.help, aliases=command.aliases
        )
        if selected not in (name, *command.aliases):
            continue
        module = importlib.import_module(command.module)
        rest = list(argv[list(argv).index(selected) + 1 :])
        if attach is not None:
            attach(p, module)
        elif hasattr(module, "SUBCOMMANDS"):
            add_subcommands(
                p, module.SUBCOMMANDS, rest, f"{dest}_name", module.attach, module.METAVAR
            )
        elif hasattr(module, "add_arguments_from"):
            module.add_arguments_from(p, rest)
            p.set_defaults(_run=module.run)
        else:
            module.add_arguments(p)
            p.set_defaults(_run=module.run)


def fail(prog: str, message: str) -> int:
    """Print a one-line error and return the usage exit status."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    return EXIT_USAGE
