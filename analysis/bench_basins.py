"""``gradflow bench basins``: the batched basin map against per-trajectory scipy integration.

Times a ``grid × grid`` basin map of the canonical ``(e, w)`` flow (p = 0.7, q = 0.6, box
[-3, 3]²) twice in one process, with JAX's persistent compilation cache off: the first call
includes compilation, the second does not.  Baselines, measured in the same run on a random
subsample of the same grid and extrapolated to the full grid: ``scipy.integrate.solve_ivp``, one
initial condition at a time, with RK45 (scipy's default) and with LSODA, each with the same
vector field (the model's symbolic ``∇L`` lambdified to NumPy, the fastest per-point path from
Python; the jitted JAX Hessian as Jacobian for LSODA), the same tolerances and stopping rule
(steady state ``‖∇L‖₂ ≤ gtol``, or loss below the decision level, or ``t_max``).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import jax
import numpy as np
from gradflow.models import markov
from scipy.integrate import solve_ivp

from gradflow import basins, critical_sets
from gradflow._basins import default_basin_options, plane_grid, widened_bounds
from gradflow._compiled import numpy_gradient
from gradflow._critical import decision_level
from gradflow._sym import lambdify_numpy
from gradflow.cli._common import format_table, print_json

P, Q = 0.7, 0.6


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--grid", type=int, default=400, help="grid points per axis (default 400)")
    parser.add_argument(
        "--lsoda-samples", type=int, default=300, help="trajectories timed with LSODA (default 300)"
    )
    parser.add_argument(
        "--rk45-samples",
        type=int,
        default=20,
        help="trajectories timed with RK45 (default 20; its stiff members take seconds each)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")


def _scipy_ms_per_trajectory(model: Any, starts: np.ndarray, method: str, level: float) -> float:
    """Mean wall time (ms) of ``solve_ivp`` per initial condition, same stopping rule."""
    h = [float(x) for x in np.asarray(model.h)]
    m = model.model
    loss = lambdify_numpy((*m.params, *m.hyperparams), m.loss)
    grad, hessian, h_array = numpy_gradient(m), model.compiled.hessian, model.h
    options = default_basin_options()[0]

    def rhs(t: float, y: np.ndarray) -> np.ndarray:
        return -np.asarray(grad(*y, *h))

    def steady(t: float, y: np.ndarray) -> float:
        return float(np.linalg.norm(grad(*y, *h))) - options.gtol

    def decided(t: float, y: np.ndarray) -> float:
        return float(loss(*y, *h)) - level

    steady.terminal = decided.terminal = True
    extra = {"jac": lambda t, y: -np.asarray(hessian(y, h_array))} if method == "LSODA" else {}
    begin = time.perf_counter()
    for y0 in starts:
        solve_ivp(
            rhs,
            (0.0, options.t_max),
            y0,
            method=method,
            rtol=options.rtol,
            atol=options.atol,
            events=(steady, decided),
            **extra,
        )
    return 1e3 * (time.perf_counter() - begin) / len(starts)


def run(args: argparse.Namespace) -> int:
    from gradflow import GradflowError

    if args.grid < 2 or args.lsoda_samples < 1 or args.rk45_samples < 1:
        raise GradflowError("--grid must be ≥ 2 and the sample counts ≥ 1")
    jax.config.update("jax_enable_compilation_cache", False)
    model = markov.canonical(P, Q)
    n = args.grid * args.grid
    begin = time.perf_counter()
    basins(model, grid=args.grid, progress=False)
    cold = time.perf_counter() - begin
    begin = time.perf_counter()
    result = basins(model, grid=args.grid, progress=False)
    warm = time.perf_counter() - begin
    _, xs, ys, _, thetas = plane_grid(model, args.grid)
    critical = critical_sets(
        model, bounds=widened_bounds(model, {"w": (xs[0], xs[-1]), "e": (ys[0], ys[-1])})
    )
    level = decision_level(critical)
    rng = np.random.default_rng(0)
    flat = thetas.reshape(-1, model.model.dim)
    lsoda = _scipy_ms_per_trajectory(
        model, flat[rng.choice(n, args.lsoda_samples, replace=False)], "LSODA", level
    )
    rk45 = _scipy_ms_per_trajectory(
        model, flat[rng.choice(n, args.rk45_samples, replace=False)], "RK45", level
    )
    report = {
        "grid": args.grid,
        "model": f"canonical p={P} q={Q}, box [-3, 3]^2",
        "seconds": cold,
        "seconds_without_compile": warm,
        "trajectories_per_second": n / warm,
        "mean_steps": float(result.steps.mean()),
        "max_steps": int(result.steps.max()),
        "devices": [str(d) for d in jax.devices()],
        "baselines": {
            name: {
                "ms_per_trajectory": ms,
                "extrapolated_seconds": ms * n / 1e3,
                "speedup": ms * n / 1e3 / cold,
            }
            for name, ms in (("scipy_rk45", rk45), ("scipy_lsoda", lsoda))
        },
    }
    if args.json:
        print_json(report)
        return 0
    print(
        f"basin map of the canonical flow, {args.grid} × {args.grid} = {n} trajectories (p = {P}, q = {Q})"
    )
    print(
        f"  gradflow: {cold:.1f} s with compilation, {warm:.1f} s without; {n / warm:,.0f} trajectories/s;"
        f" mean {report['mean_steps']:.1f} steps, max {report['max_steps']}"
    )
    rows = [
        [
            name,
            f"{b['ms_per_trajectory']:.2f}",
            f"{b['extrapolated_seconds']:.0f}",
            f"{b['speedup']:.1f}×",
        ]
        for name, b in report["baselines"].items()
    ]
    print(
        format_table(
            [
                "baseline",
                "ms/trajectory",
                "full grid (s, extrapolated)",
                "gradflow speedup (with compile)",
            ],
            rows,
        )
    )
    return 0
