"""``gradflow compare``: the reduced-vs-full checks of the canonical Markov models as a report
(:mod:`gradflow.analysis.markov_compare`)."""

from __future__ import annotations

import argparse

from gradflow.analysis.markov_configs import CompareConfig

from ._config import add_config_arguments, config_from_args
from ._options import add_json_argument, print_report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser, CompareConfig)
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    config = config_from_args(CompareConfig, args)
    from gradflow.analysis.markov_compare import compare

    report = compare(config)
    print_report(args, report)
    return 0
