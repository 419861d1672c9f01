"""``gradflow compare``: the reduced-vs-full checks of the canonical Markov models as a report
(:mod:`gradflow.systems.markov.compare`), written as ``compare.npz`` with its ``.json`` and its
picture (``compare.png``: the errors per model, the dynamics check) beside it."""

from __future__ import annotations

import argparse

from gradflow.systems.markov.config import CompareConfig

from ._config import add_config_arguments, config_from_args
from ._options import add_output_arguments, check_out, save_and_report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser, CompareConfig)
    add_output_arguments(parser, "compare.npz", picture=True)


def run(args: argparse.Namespace) -> int:
    check_out(args, "the checks")
    config = config_from_args(CompareConfig, args)
    from gradflow.systems.markov.compare import compare

    report = compare(config)
    save_and_report(args, report)
    return 0
