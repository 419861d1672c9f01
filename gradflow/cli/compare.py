"""``gradflow compare``: the reduced-vs-full checks of the canonical Markov models as a report
(:mod:`gradflow.analysis.markov_compare`)."""

from __future__ import annotations

import argparse

from gradflow.analysis.markov_compare import CompareConfig, compare

from ._config import add_config_arguments, config_from_args
from ._options import add_json_argument, print_report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser, CompareConfig)
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    report = compare(config_from_args(CompareConfig, args))
    print_report(args, report)
    return 0
