"""The ``gradflow`` command line (:data:`COMMANDS`: every command by name, with its module).

``gradflow COMMAND [options]``; ``gradflow`` or ``gradflow --help`` lists the commands.  Bad
input gives a one-line error naming the option and exit status 2, and writes nothing; Ctrl-C
exits with status 130 and leaves no partial file.
"""

from __future__ import annotations

import importlib.metadata
import sys
from collections.abc import Sequence

from ._registry import COMMANDS

__all__ = ["COMMANDS", "main"]

DESCRIPTION = "gradflow: gradient flows, critical sets and basins of the reduced models of transformer training dynamics"
EXIT_INTERRUPTED = 130
"""Exit status after Ctrl-C (128 + SIGINT), as shells use."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI on ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    from ._parser import Parser, add_subcommands, fail

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = Parser(prog="gradflow", description=DESCRIPTION)
    parser.add_argument(
        "--version", action="version", version=f"gradflow {importlib.metadata.version('gradflow')}"
    )
    add_subcommands(parser, COMMANDS, argv, dest="command")
    if not argv:
        parser.print_help()
        return 0
    args = parser.parse_args(argv)
    try:
        from gradflow import GradflowError

        from ._setup import configure_jax

        configure_jax()
        return int(args._run(args) or 0)
    except GradflowError as error:
        return fail(f"gradflow {args.command}", str(error))
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print(f"\ngradflow {args.command}: interrupted; no output written", file=sys.stderr)
        return EXIT_INTERRUPTED
