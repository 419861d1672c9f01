"""The ``gradflow`` command line (:data:`COMMANDS`: every command by name, with its module).

``gradflow COMMAND [options]``; ``gradflow`` or ``gradflow --help`` lists the commands.  Bad
input gives a one-line error naming the option and exit status 2, and writes nothing; Ctrl-C
exits with status 130 and leaves no partial file.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import sys
from collections.abc import Sequence

from ._interrupt import EXIT_INTERRUPTED, interruptible
from ._registry import COMMANDS
from ._setup import fewer_collections, freeze_at_exit, imports_frozen

__all__ = ["COMMANDS", "main", "parser"]

DESCRIPTION = "gradflow: gradient flows, critical sets and basins of the reduced models of transformer training dynamics"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI on ``argv`` (default ``sys.argv[1:]``); return the exit status.

    The process's objects are frozen when it exits, so that its shutdown does not walk them
    (:func:`~gradflow.cli._setup.freeze_at_exit`).  Run as the process's command (``argv``
    ``None``), it reads ahead the executables the last run of the same words loaded
    (:mod:`gradflow._compiled.read_ahead`) and freezes what its imports create
    (:func:`~gradflow.cli._setup.imports_frozen`); called from Python with ``argv``, it does
    neither (the process may run many commands, and its objects are the caller's)."""
    held: list[argparse.Namespace] = []
    freeze_at_exit()
    frozen = imports_frozen() if argv is None else contextlib.nullcontext()
    with interruptible(lambda: _interrupted(held)), fewer_collections(), frozen:
        words = list(sys.argv[1:] if argv is None else argv)
        return _main(words, held, ahead=argv is None)


def parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    """The argument parser the command line reads ``argv`` with, without running anything.

    Only the command named in ``argv`` has its options added (its module is imported; no other
    is), so the parser is for these words: ``parser(words).parse_args(words)`` parses them as
    ``gradflow WORDS`` would, and exits with status 2 and a one-line message on bad input."""
    from ._parser import Parser, add_subcommands

    root = Parser(prog="gradflow", description=DESCRIPTION)
    root.add_argument(
        "--version", action="version", version=f"gradflow {importlib.metadata.version('gradflow')}"
    )
    add_subcommands(root, COMMANDS, argv, dest="command")
    return root


def _main(argv: list[str], held: list[argparse.Namespace], ahead: bool = False) -> int:
    from ._parser import fail

    root = parser(argv)
    if not argv:
        root.print_help()
        return 0
    args = root.parse_args(argv)
    held.append(args)
    try:
        from gradflow import GradflowError

        from ._setup import configure_jax

        configure_jax()
        if ahead:
            from gradflow._compiled.read_ahead import read_ahead

            read_ahead(chr(0).join(argv))
        return int(args._run(args) or 0)
    except GradflowError as error:
        return fail(f"gradflow {args.command}", str(error))
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print(f"\n{_interrupted(held)}", file=sys.stderr)
        return EXIT_INTERRUPTED


def _interrupted(held: list[argparse.Namespace]) -> str:
    """The line printed after Ctrl-C: the command, and what it leaves (a command may say more
    through its ``_interrupted(args)`` default, as ``sweep`` does about its finished cells)."""
    if not held:
        return "gradflow: interrupted; no output written"
    args = held[0]
    more = getattr(args, "_interrupted", None)
    return f"gradflow {args.command}: interrupted; " + (
        more(args) if more is not None else "no output written"
    )
