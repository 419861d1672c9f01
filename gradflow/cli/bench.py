"""``gradflow bench NAME``: run a benchmark and print its report (text, or JSON with ``--json``).

Each benchmark module (``gradflow.benchmarks.*``) provides a frozen ``Config``, whose fields
are the options, and ``bench(config)``, whose report has ``text()`` and ``metadata()``.
"""

from __future__ import annotations

import argparse
import functools
from types import ModuleType

from ._config import add_config_arguments, config_from_args
from ._options import add_json_argument, print_report
from ._registry import BENCHES

__all__ = ["METAVAR", "SUBCOMMANDS", "attach", "run"]

METAVAR = "BENCHMARK"
"""What an entry is called in help and errors."""
SUBCOMMANDS = BENCHES


def attach(parser: argparse.ArgumentParser, bench: ModuleType) -> None:
    """The options of ``bench``'s ``Config`` and ``--json``; running it is :func:`run`."""
    add_config_arguments(parser, bench.Config)
    add_json_argument(parser)
    parser.set_defaults(_run=functools.partial(run, bench))


def run(bench: ModuleType, args: argparse.Namespace) -> int:
    """Run the benchmark with the parsed options; print its report."""
    report = bench.bench(config_from_args(bench.Config, args))
    print_report(args, report)
    return 0
