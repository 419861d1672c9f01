"""``gradflow bench ntk``: time the empirical NTK Gram matrix of the shallow encoder.

The issue's setting: ``N = 64`` samples, ``d_s = 8`` tokens, ``d = 16``, width ``d_m = 1024``
(``P = 3 d d_m + d_m = 50,176`` parameters), LeCun init, ``τ0 = d_m^{-1/2}``, float64.  Each
implementation of :func:`gradflow.analysis.ntk.empirical_ntk` is timed after one untimed call
that compiles it; the time is the median of ``--repeats`` calls.  The Jacobian methods cost the
same with or without the per-block split (the blocks are summed); NTK-vector products are timed
both ways (per block they need one JVP per sample and block).  Ratios are against the baseline
measured in the same run: the plain ``jax.jacobian`` contraction (``"jacobian"``, per block).
Every result is checked against the baseline (largest entry difference relative to the largest
entry).

``neural-tangents`` is compared where it imports; its latest release (0.6.5) does not import with
the JAX this project uses (it imports ``jax.core.Jaxpr``, which JAX 0.10 no longer has), and the
benchmark reports the import error instead.
"""

from __future__ import annotations

import argparse
import functools
import time

import jax
import numpy as np
from gradflow.models.shallow_encoder import init_encoder, synthetic_data

from gradflow.cli._common import format_table, print_json

from .ntk import empirical_ntk
from .ntk_command import positive_int

BASELINE = ("jacobian", True)
"""The implementation every ratio is taken against: ``jax.jacobian`` contraction, per block."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--n-samples", type=positive_int, default=64, metavar="N", help="samples N (default 64)"
    )
    parser.add_argument(
        "--d-s", type=positive_int, default=8, metavar="DS", help="tokens per sample (default 8)"
    )
    parser.add_argument(
        "--d", type=positive_int, default=16, metavar="D", help="token dimension (default 16)"
    )
    parser.add_argument(
        "--width", type=positive_int, default=1024, metavar="D_M", help="width d_m (default 1024)"
    )
    parser.add_argument(
        "--repeats", type=positive_int, default=5, help="timed calls per implementation (default 5)"
    )
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")


def _neural_tangents_status() -> str:
    """``"importable (version)"`` or the reason neural-tangents cannot be used here."""
    try:
        import neural_tangents  # noqa: PLC0415
    except ModuleNotFoundError:
        return "not installed (its latest release, 0.6.5, does not import with JAX 0.10: see docs/models/shallow-ntk.md)"
    except Exception as error:  # noqa: BLE001 - any import failure is the answer we report
        return f"not usable: {type(error).__name__}: {error}"
    return f"importable ({getattr(neural_tangents, '__version__', 'unknown version')}), not benchmarked"


def _time(fn, repeats: int) -> tuple[float, dict[str, np.ndarray]]:
    """Median wall time in ms of ``fn()`` over ``repeats`` calls after one compiling call."""
    result = fn()
    times = []
    for _ in range(repeats):
        begin = time.perf_counter()
        fn()
        times.append(time.perf_counter() - begin)
    return 1e3 * float(np.median(times)), result


def run(args: argparse.Namespace) -> int:
    X, _ = synthetic_data(jax.random.PRNGKey(0), args.n_samples, args.d_s, args.d)
    model = init_encoder(jax.random.PRNGKey(1), args.d, args.width, init="lecun", scaling="sqrt")
    parameters = sum(getattr(model, a).size for a in ("W_Q", "W_K", "W_V", "w_O"))
    variants = [BASELINE, ("per-sample", True), ("ntvp", True), ("ntvp", False)]
    results = {}
    for method, per_block in variants:
        ms, blocks = _time(
            functools.partial(empirical_ntk, model, X, method, per_block=per_block), args.repeats
        )
        results[(method, per_block)] = (ms, blocks["total"])
    base_ms, base_K = results[BASELINE]
    scale = float(np.abs(base_K).max())
    rows = [
        {
            "method": method,
            "per_block": per_block,
            "ms": ms,
            "speedup_vs_jacobian": base_ms / ms,
            "max_rel_difference": float(np.abs(K - base_K).max()) / scale,
        }
        for (method, per_block), (ms, K) in results.items()
    ]
    report = {
        "N": args.n_samples,
        "d_s": args.d_s,
        "d": args.d,
        "d_m": args.width,
        "parameters": int(parameters),
        "repeats": args.repeats,
        "dtype": str(X.dtype),
        "devices": [str(d) for d in jax.devices()],
        "baseline": "jacobian (jax.jacobian of the batched outputs, contracted per block)",
        "implementations": rows,
        "neural_tangents": _neural_tangents_status(),
    }
    if args.json:
        print_json(report)
        return 0
    print(
        f"empirical NTK Gram matrix: N = {args.n_samples}, d_s = {args.d_s}, d = {args.d}, d_m = {args.width} "
        f"({parameters:,} parameters), {report['dtype']}, median of {args.repeats}"
    )
    print(
        format_table(
            ["method", "blocks", "ms", "speed-up vs jacobian", "max rel. difference"],
            [
                [
                    r["method"],
                    "per block" if r["per_block"] else "total only",
                    f"{r['ms']:.1f}",
                    f"{r['speedup_vs_jacobian']:.2f}×",
                    f"{r['max_rel_difference']:.1e}",
                ]
                for r in rows
            ],
        )
    )
    print(f"neural-tangents: {report['neural_tangents']}")
    return 0
