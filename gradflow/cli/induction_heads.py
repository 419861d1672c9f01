"""``gradflow induction-heads`` (also ``gradflow icl``): train on in-context Markov chains and report the phases of training.

    gradflow induction-heads --k 3 --model minimal|transformer|reduced [--steps S]
                 [--prior dirichlet|doubly-stochastic|unigram|mixture:0.25] [--seeds K] [--json]

Trains ``K`` seeds with a progress bar, prints for each the phase intervals (nearest strategy
over training), the transition step, the plateau length and the final test loss and distances to
each strategy, and writes ``--out`` (NPZ: every seed's history under ``seed{i}_``) with a JSON
beside it.  All arguments are checked before anything runs or is written.
"""

from __future__ import annotations

import argparse

from gradflow.systems.induction_heads.config import ICLConfig

from ._config import add_config_arguments, config_from_args
from ._options import add_output_arguments, check_out, save_and_report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser, ICLConfig)
    add_output_arguments(parser, "induction-heads.npz", picture=True)


def run(args: argparse.Namespace) -> int:
    check_out(args, "the histories")
    config = config_from_args(ICLConfig, args)
    from gradflow.systems.induction_heads.experiment import run_experiment

    report = run_experiment(config, progress=None if args.json else True)
    save_and_report(args, report)
    return 0
