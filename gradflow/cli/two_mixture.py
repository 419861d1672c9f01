"""``gradflow two-mixture`` (also ``gradflow mixture``): train the two-headed transformer on the two-mixture task, detect the stages.

    gradflow two-mixture --k 2 --d 8 --m 256 --omega 0.05 --schedule joint

Trains the full model (or, with ``--reduced``, the exact reduced dynamics) on the exact
population loss, prints the detected stage times (neuron alignment, attention escape, fit) and
the final losses, and writes the recorded run as NPZ + JSON.  Bad input (``K < 2``, ``d < 2K``,
``m < 1``, ``ω ≤ 0``, unknown option values) is a one-line error, exit status 2, nothing written.
"""

from __future__ import annotations

import argparse

from gradflow.systems.two_mixture.config import MixtureSettings

from ._config import add_config_arguments, config_from_args
from ._options import add_output_arguments, check_out, save_and_report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser, MixtureSettings)
    parser.add_argument(
        "--reduced",
        action="store_true",
        help="run the reduced dynamics (B, P_Q, P_K, N) instead of the full model",
    )
    add_output_arguments(
        parser,
        "two-mixture.npz",
        json_help="stage times and losses as one JSON object on stdout",
        picture=True,
    )


def run(args: argparse.Namespace) -> int:
    check_out(args, "the run")
    settings = config_from_args(MixtureSettings, args)
    from gradflow.systems.two_mixture.experiment import run_experiment

    report = run_experiment(settings, reduced=args.reduced)
    metadata = {"command": "two-mixture", **report.metadata()}
    save_and_report(args, report, metadata=metadata, list_written=True)
    return 0
