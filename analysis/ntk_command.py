"""``gradflow ntk``: the width sweep of the shallow encoder's NTK, as a table, NPZ and JSON.

    gradflow ntk --n-samples 16 --d-s 4 --d 16 --widths 64,256,1024,4096 \\
        --scaling sqrt --init lecun --steps 200

For each width: ``λ_min(K_0)``, ``α_0``, the relative kernel change after ``T`` GD steps, the
distance to the limiting kernel (``τ0 = d_m^{-1}``), the final losses of GD and of the linearized
flow, and whether the loss bound of Wu et al. (2023) held; then the fitted log-log slopes.
``--scaling`` and ``--init`` accept comma-separated lists (``--init lecun,he,ntk``).
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path

import numpy as np
from gradflow.models.shallow_encoder import INITS, SCALINGS

from gradflow._io import check_output, save_with_data
from gradflow.cli._common import format_table, print_json

from .ntk_sweep import (
    QUANTITIES,
    AssumptionWarning,
    Sweep,
    SweepConfig,
    assumption_warnings,
    sweep_data,
    width_sweep,
)

__all__ = [
    "add_arguments",
    "add_width_arguments",
    "positive_int",
    "run",
    "sweep_arrays",
    "width_list",
]


def positive_int(text: str) -> int:
    """argparse type: an integer ≥ 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1 or str(value) != text.strip().lstrip("+"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def width_list(text: str) -> tuple[int, ...]:
    """argparse type: comma-separated positive integers, e.g. ``64,256,1024``."""
    try:
        return tuple(positive_int(part) for part in text.split(","))
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: every width must be a positive integer, e.g. 64,256,1024"
        ) from None


def _names(valid: tuple[str, ...], what: str):
    def parse(text: str) -> tuple[str, ...]:
        names = tuple(part.strip() for part in text.split(","))
        bad = [n for n in names if n not in valid]
        if bad:
            raise argparse.ArgumentTypeError(
                f"unknown {what} {', '.join(map(repr, bad))} (valid: {', '.join(valid)})"
            )
        return names

    return parse


def add_width_arguments(parser: argparse.ArgumentParser, *, seeds: int) -> None:
    """``--widths``, ``--steps`` and ``--seeds``: shared by ``gradflow ntk`` and the figure."""
    parser.add_argument(
        "--widths",
        type=width_list,
        default=(64, 256, 1024, 4096),
        metavar="W1,W2,…",
        help="widths d_m (default 64,256,1024,4096)",
    )
    parser.add_argument(
        "--steps", type=positive_int, default=200, metavar="T", help="GD steps T (default 200)"
    )
    parser.add_argument(
        "--seeds", type=positive_int, default=seeds, help=f"networks per width (default {seeds})"
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sizes = (
        ("--n-samples", "N", 16, "samples N"),
        ("--d-s", "DS", 4, "tokens per sample d_s"),
        ("--d", "D", 16, "token dimension d"),
    )
    for flag, metavar, default, text in sizes:
        parser.add_argument(
            flag,
            type=positive_int,
            default=default,
            metavar=metavar,
            help=f"{text} (default {default})",
        )
    add_width_arguments(parser, seeds=1)
    parser.add_argument(
        "--scaling",
        type=_names(SCALINGS, "scaling"),
        default=("sqrt",),
        metavar="sqrt|linear",
        help="score scaling τ0 = d_m^{-1/2} (sqrt) or d_m^{-1} (linear); a comma list runs each (default sqrt)",
    )
    parser.add_argument(
        "--init",
        type=_names(INITS, "init"),
        default=("lecun",),
        metavar="lecun|he|ntk",
        help="initialization; a comma list runs each (default lecun)",
    )
    parser.add_argument(
        "--eta", type=float, default=0.5, help="GD step γ = η / λ_max(K_0), 0 < η < 2 (default 0.5)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the synthetic data (default 0)"
    )
    parser.add_argument("--hidden", action="store_true", help="add the hidden layer W_H")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("ntk-sweep.npz"),
        help="NPZ path (default ntk-sweep.npz); the .json goes beside it",
    )
    parser.add_argument("--json", action="store_true", help="results as one JSON object on stdout")


def sweep_arrays(sweep: Sweep) -> dict[str, np.ndarray]:
    """The sweep as arrays, one row per run: scalars, loss curves ``(runs, T + 1)``."""
    runs = sweep.runs
    arrays: dict[str, np.ndarray] = {
        key: np.array([r.scalars()[key] for r in runs]) for key in runs[0].scalars()
    }
    for curve in ("losses", "linearized", "linearized_gd", "limit_flow", "limit_gd", "bound"):
        arrays[curve] = np.stack([getattr(r, curve) for r in runs])
    arrays["step"] = np.arange(sweep.config.steps + 1)
    return arrays


def _g(x: float) -> str:
    return "—" if not math.isfinite(x) else f"{x:.3g}"


def _tables(sweep: Sweep) -> str:
    seeds = sweep.config.seeds > 1
    header = [
        "init",
        "scaling",
        "d_m",
        *(["seed"] if seeds else []),
        "λ_min(K0)",
        "α0",
        "τ1²α0²",
        "‖K_T−K0‖/‖K0‖",
        "‖K0−K∞‖/‖K∞‖",
        "ℓ0",
        "ℓ_T",
        "ℓ_lin(T)",
        "bound",
    ]
    rows = []
    for r in sweep.runs:
        s = r.scalars()
        rows.append(
            [
                r.init,
                r.scaling,
                r.d_m,
                *([r.seed] if seeds else []),
                _g(r.lambda_min),
                _g(r.alpha0),
                _g(s["tau1sq_alpha0sq"]),
                _g(r.kernel_change),
                _g(r.limit_error),
                _g(s["loss0"]),
                _g(s["final_loss"]),
                _g(s["linearized_final_loss"]),
                "holds" if r.bound_holds else "VIOLATED",
            ]
        )
    slope_rows = [
        [init, scaling, *(_g(v[q]) for q in QUANTITIES)]
        for (init, scaling), v in sweep.slopes().items()
    ]
    slopes = format_table(
        ["init", "scaling", "λ_min", "α0", "kernel change", "K∞ error"], slope_rows
    )
    return f"{format_table(header, rows)}\n\nlog-log slopes against d_m:\n{slopes}"


def run(args: argparse.Namespace) -> int:
    check_output(args.out, (".npz",), "the sweep")
    config = SweepConfig(
        n_samples=args.n_samples,
        d_s=args.d_s,
        d=args.d,
        widths=args.widths,
        inits=args.init,
        scalings=args.scaling,
        steps=args.steps,
        eta=args.eta,
        seeds=args.seeds,
        hidden=args.hidden,
        data_seed=args.seed,
    )
    notes = assumption_warnings(config, np.asarray(sweep_data(config)[0]))
    for note in notes:
        print(f"gradflow ntk: warning: {note}", file=sys.stderr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AssumptionWarning)
        sweep = width_sweep(config)
    slopes = {f"{init}/{scaling}": v for (init, scaling), v in sweep.slopes().items()}
    metadata = {
        "command": "ntk",
        "model": "shallow encoder transformer (Wu et al. 2023), gradflow.models.shallow_encoder",
        "config": vars(config),
        "runs": [r.scalars() for r in sweep.runs],
        "slopes": slopes,
        "warnings": notes,
    }
    written = save_with_data(args.out, None, sweep_arrays(sweep), metadata)
    if args.json:
        print_json({**metadata, "written": [str(p) for p in written]})
        return 0
    print(
        f"NTK width sweep: N = {config.n_samples}, d_s = {config.d_s}, d = {config.d}, T = {config.steps} GD steps, "
        f"γ = {config.eta:g} / λ_max(K0){', hidden layer W_H' if config.hidden else ''}"
    )
    print(_tables(sweep))
    print("wrote " + ", ".join(str(p) for p in written))
    return 0
