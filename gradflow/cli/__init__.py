"""The ``gradflow`` command line.

``gradflow COMMAND [options]``; ``gradflow --help`` lists the commands.  Bad input gives a
one-line error and exit status 2, and writes nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]

DESCRIPTION = "gradflow: gradient flows, critical sets and basins of the reduced models of transformer training dynamics"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI on ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    from .. import GradflowError
    from ._parser import Parser, add_subcommands, fail
    from ._registry import COMMANDS
    from ._setup import configure_jax

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = Parser(prog="gradflow", description=DESCRIPTION)
    add_subcommands(parser, COMMANDS, argv, dest="command")
    args = parser.parse_args(argv)
    configure_jax()
    try:
        return int(args._run(args) or 0)
    except GradflowError as error:
        return fail(f"gradflow {args.command}", str(error))
