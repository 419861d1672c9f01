"""``gradflow shallow-ntk`` (also ``gradflow ntk``): the width sweep of the shallow encoder's NTK, as a table, NPZ and JSON.

    gradflow shallow-ntk --n-samples 16 --d-s 4 --d 16 --widths 64,256,1024,4096 \\
        --scaling sqrt --init lecun --steps 200

For each width: ``λ_min(K_0)``, ``α_0``, the relative kernel change after ``T`` GD steps, the
distance to the limiting kernel (``τ0 = d_m^{-1}``), the final losses of GD and of the linearized
flow, and whether the loss bound of Wu et al. (2023) held; then the fitted log-log slopes.
``--scaling`` and ``--init`` accept comma-separated lists (``--init lecun,he,ntk``).  The
assumptions of the paper that fail for the requested sizes are warned about on stderr first,
and after the sweep the runs where Proposition 1's lower bound on ``α_0`` does not hold
(``α_0² < d_m λ*/4``: every ``d_m ≤ N`` in practice).
"""

from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np

from gradflow.systems.shallow_ntk.config import SweepConfig

from ._config import add_config_arguments, config_from_args
from ._options import add_output_arguments, check_out, save_and_report

MODEL = "shallow encoder transformer (Wu et al. 2023), gradflow.systems.shallow_ntk.encoder"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser, SweepConfig)
    add_output_arguments(
        parser, "shallow-ntk.npz", json_help="results as one JSON object on stdout", picture=True
    )


def run(args: argparse.Namespace) -> int:
    check_out(args, "the sweep")
    config = config_from_args(SweepConfig, args)
    from gradflow.systems.shallow_ntk.sweep import (
        AssumptionWarning,
        assumption_warnings,
        sweep_data,
        width_sweep,
    )

    notes = assumption_warnings(config, np.asarray(sweep_data(config)[0]))
    for note in notes:
        print(f"gradflow shallow-ntk: warning: {note}", file=sys.stderr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AssumptionWarning)
        sweep = width_sweep(config)
    measured = sweep.proposition1_failures()
    for note in measured:
        print(f"gradflow shallow-ntk: warning: {note}", file=sys.stderr)
    notes = [*notes, *measured]
    metadata = {"command": "shallow-ntk", "model": MODEL, **sweep.metadata(), "warnings": notes}
    save_and_report(args, sweep, metadata=metadata, list_written=True)
    return 0
