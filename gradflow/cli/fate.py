"""``gradflow fate``: where full transformer training ends from a grid of reduced inits, against
the reduced basin map in the Euclidean and the induced metric (:mod:`gradflow.analysis.markov_fate`).

    gradflow fate --p 0.5 --q 0.8 --grid 12 --sigma 0,0.01,0.1 --seeds 3

Finished runs are checkpointed in ``--out``'s ``.runs`` folder; run again with the same arguments,
an interrupted map continues where it stopped and writes the same files.
"""

from __future__ import annotations

import argparse
import shutil

from gradflow.analysis.markov_configs import FateConfig

from ._config import add_config_arguments, config_from_args
from ._options import add_output_arguments, check_out, save_and_report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser, FateConfig)
    add_output_arguments(
        parser, "fate.npz", "agreement, counts, mismatches as one JSON object on stdout"
    )


def run(args: argparse.Namespace) -> int:
    check_out(args, "the fate map")
    config = config_from_args(FateConfig, args)
    from gradflow.analysis.markov_fate import fate_map

    runs = args.out.with_suffix(".runs")
    result = fate_map(config, checkpoint=runs)
    save_and_report(args, result)
    shutil.rmtree(runs)
    return 0
