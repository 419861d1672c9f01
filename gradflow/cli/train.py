"""``gradflow train``: train the full Markov transformer and record its canonical trajectory.

Writes ``OUT.npz`` (loss curves, test losses with standard errors, projected ``(e, w, a, b)``,
rank-one diagnostics), ``OUT.json`` (settings, references, final losses) and ``OUT.png`` (the loss
curves and the projected trajectory, :meth:`TrainResult.figure`) atomically: all three or none.
With ``--states K`` (``K ≥ 3``) the ``K``-state model trains instead
(:func:`gradflow.systems.markov.states_training.train_states`; ``--init canonical`` is then the
rank-``(K − 1)`` init of :mod:`gradflow.systems.markov.states_embedding`): the NPZ holds the singular values of
every weight matrix at the init and the end, the JSON the final gaps and numerical ranks.  A
non-finite training loss stops the run: the steps before it are written, with the step named in
the JSON and on stderr, and the exit status is 1 (a ``K``-state run is refused instead, status 2,
nothing written).
"""

from __future__ import annotations

import argparse
import sys

from gradflow import GradflowError
from gradflow.systems.markov.config import TrainConfig

from ._config import add_config_arguments, config_from_args
from ._options import add_output_arguments, check_out, save_and_report
from ._sizes import add_allow_long_argument, announce

EXIT_STOPPED = 1
"""Exit status of a run that a non-finite loss stopped."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser, TrainConfig, skip=("eval_batch",))
    add_output_arguments(
        parser,
        "train.npz",
        json_help="the summary as one JSON object on stdout",
        picture=True,
    )
    add_allow_long_argument(parser, "a training run")
    parser.set_defaults(theta0=None)  # given or not: --theta0 belongs to --init canonical


def run(args: argparse.Namespace) -> int:
    if args.theta0 is None:
        del args.theta0  # the configuration's default
    elif args.init != "canonical":
        raise GradflowError(
            f"--theta0 sets the canonical init's (e, w); it needs --init canonical, not "
            f"--init {args.init}"
        )
    check_out(args, "the training record")
    config = config_from_args(TrainConfig, args)
    announce("train", config.estimate(), args.allow_long, resumable=False)
    if config.states > 2:
        from gradflow.systems.markov.states_training import train_states

        result = train_states(config)
        save_and_report(args, result, metadata={"command": "train", **result.metadata()})
        return 0
    from gradflow.systems.markov.training import train

    result = train(config)
    metadata = {"command": "train", **result.metadata()}
    save_and_report(args, result, metadata=metadata, record=result.summary())
    if result.nan_step is not None:
        print(
            f"gradflow train: error: the training loss is not finite at step {result.nan_step}; "
            f"stopped there, the record of the {result.steps_done} step(s) before it is in {args.out}",
            file=sys.stderr,
        )
        return EXIT_STOPPED
    return 0
