"""``gradflow figures induction-heads``: the phases of in-context learning of Markov chains.

After Edelman et al., "The Evolution of Statistical Induction Heads" (2024), Figs. 2–6, at CPU
size (k = 3, T = 100; the transformer trained 1200 steps from 2 seeds instead of longer runs over
many seeds; the minimal model 300 SGD steps):

(a) distance to the uniform, unigram and bigram strategies over training, shaded by the nearest
    strategy, for the transformer and for the minimal model;
(b) the minimal model's positional vector ``v_m`` over training, and the transformer's layer-1
    attention mass at each lag;
(c) transition step and plateau length against the share of doubly-stochastic training data
    (same seeds, same budget);
(d) the reduced ``(a, b, v_1)`` flow in the ``(v_1, a)`` plane with ``b = b*(a, v_1)``, the
    reduced trajectory and the minimal model's trajectories drawn on it.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from pathlib import Path

import numpy as np
from gradflow.analysis.icl_phases import phases
from gradflow.analysis.icl_portrait import slow_field
from gradflow.analysis.icl_train import RunSpec, train
from gradflow.models.icl_data import Dirichlet, doubly_stochastic_mixture
from gradflow.models.icl_strategies import STRATEGY_NAMES

from gradflow import GradflowError
from gradflow._io import save_with_data

NAME = "induction-heads"
COLORS = {"uniform": "tab:gray", "unigram": "tab:orange", "bigram": "tab:blue"}
REDUCED_N = 256
"""Sequences (before the k! relabellings) in the reduced trajectory's fixed sample."""
PORTRAIT_N = 64
"""Sequences (before the k! relabellings) behind the field of panel (d)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("."), help="output folder (default .)")
    parser.add_argument("--k", type=int, default=3, help="states (default 3)")
    parser.add_argument("--T", type=int, default=100, help="sequence length (default 100)")
    parser.add_argument(
        "--transformer-steps",
        type=int,
        default=1200,
        help="AdamW steps per transformer run (default 1200)",
    )
    parser.add_argument(
        "--minimal-steps",
        type=int,
        default=300,
        help="SGD steps of the minimal model (default 300)",
    )
    parser.add_argument(
        "--shares",
        type=float,
        nargs="+",
        default=[0.0, 0.5, 1.0],
        help="doubly-stochastic shares for (c) (default 0 0.5 1)",
    )
    parser.add_argument(
        "--seeds", type=int, default=2, help="transformer seeds per share (default 2)"
    )
    parser.add_argument(
        "--grid", type=int, default=15, help="grid points per axis of (d) (default 15)"
    )


def _check(args: argparse.Namespace) -> None:
    if not args.out.is_dir():
        raise GradflowError(f"--out {str(args.out)!r} is not an existing folder")
    for name in ("transformer_steps", "minimal_steps", "seeds", "grid"):
        if getattr(args, name) < 1:
            raise GradflowError(f"--{name.replace('_', '-')} {getattr(args, name)} must be ≥ 1")
    for rho in args.shares:
        doubly_stochastic_mixture(rho)


def _shade(ax, history) -> None:
    ph = phases(history.steps, history.distance_mean)
    for i, (name, start, end) in enumerate(ph.intervals):
        right = ph.intervals[i + 1][1] if i + 1 < len(ph.intervals) else end
        ax.axvspan(start, right, color=COLORS[name], alpha=0.12, lw=0)
    for i, name in enumerate(STRATEGY_NAMES):
        ax.plot(history.steps, history.distance_mean[:, i], color=COLORS[name], label=f"to {name}")
    ax.set_xlabel("training step")
    ax.set_ylabel("E KL(strategy ‖ model), nats")
    ax.set_ylim(bottom=0)


def run(args: argparse.Namespace) -> int:
    _check(args)
    k, T = args.k, args.T
    every_t = max(1, args.transformer_steps // 40)
    every_m = max(1, args.minimal_steps // 60)
    lr_min = 4.0
    # (c) and (a)/(b) transformer: shares × seeds, same seeds and budget for every share
    grid_runs = {}
    for rho in args.shares:
        for seed in range(args.seeds):
            spec = RunSpec(
                model="transformer",
                k=k,
                T=T,
                steps=args.transformer_steps,
                seed=seed,
                prior=doubly_stochastic_mixture(rho),
                eval_every=every_t,
            )
            grid_runs[(rho, seed)] = train(spec)
    main_rho = min(args.shares)
    transformer = grid_runs[(main_rho, 0)]
    minimal_spec = RunSpec(
        model="minimal", k=k, T=T, steps=args.minimal_steps, lr=lr_min, eval_every=every_m
    )
    minimal = train(minimal_spec)
    minimal_1 = train(dataclasses.replace(minimal_spec, lags=1))
    reduced_1 = train(dataclasses.replace(minimal_spec, model="reduced", lags=1, batch=REDUCED_N))
    th = np.concatenate([h.traces["theta"][:, :3] for h in (minimal, minimal_1, reduced_1)])
    v1_axis = np.linspace(
        min(-0.5, th[:, 2].min()), max(np.log(T) + 2.5, th[:, 2].max() + 0.5), args.grid
    )
    a_axis = np.linspace(min(-0.5, th[:, 0].min()), th[:, 0].max() + 0.5, args.grid)
    field = slow_field(Dirichlet(), k, T, v1_axis, a_axis, n=PORTRAIT_N, newton_steps=5)

    transitions = np.full((len(args.shares), args.seeds), np.nan)
    plateaus = np.full_like(transitions, np.nan)
    for (rho, seed), hist in grid_runs.items():
        ph = phases(hist.steps, hist.distance_mean)
        i = args.shares.index(rho)
        transitions[i, seed] = np.nan if ph.transition_step is None else ph.transition_step
        plateaus[i, seed] = np.nan if ph.plateau_length is None else ph.plateau_length

    def draw(path: Path) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(2, 3, figsize=(16, 9.5), layout="constrained")
        (a_tr, a_min, c_ax), (b_min, b_tr, d_ax) = axes
        _shade(a_tr, transformer)
        a_tr.set_title(f"(a) transformer (d = 16, AdamW, prior share ρ = {main_rho:g})")
        a_tr.legend(loc="upper right", fontsize=8)
        _shade(a_min, minimal)
        a_min.set_title(f"(a) minimal model (softmax mixing, SGD lr {lr_min:g})")
        a_min.legend(loc="upper right", fontsize=8)

        v = minimal.traces["theta"][:, 2:]
        for m in range(6):
            b_min.plot(minimal.steps, v[:, m], label=f"v_{m + 1}", lw=2 if m == 0 else 1.2)
        b_min.axhline(np.log(T), color="k", ls=":", lw=1, label="ln T")
        b_min.set_title("(b) minimal model: positional vector v over training")
        b_min.set_xlabel("training step")
        b_min.set_ylabel("v_m")
        b_min.legend(fontsize=8, ncol=2)

        lags = transformer.traces["lag_profile"]
        for m in range(5):
            b_tr.plot(transformer.steps, lags[:, m], label=f"lag {m}", lw=2 if m == 1 else 1.2)
        b_tr.set_title("(b) transformer: layer-1 attention mass per lag")
        b_tr.set_xlabel("training step")
        b_tr.set_ylabel("mean attention weight")
        b_tr.legend(fontsize=8)

        shares = np.asarray(args.shares)
        for values, label, marker in (
            (transitions, "transition step", "o"),
            (plateaus, "plateau length (unigram phase)", "s"),
        ):
            c_ax.errorbar(
                shares,
                np.nanmean(values, 1),
                yerr=np.nanstd(values, 1),
                marker=marker,
                capsize=4,
                label=label,
            )
            for j in range(values.shape[1]):
                c_ax.scatter(shares, values[:, j], marker=marker, color="k", s=10, alpha=0.5)
        c_ax.set_title(
            f"(c) transformer: share of doubly-stochastic training data\n({args.seeds} seeds each, {args.transformer_steps} steps, same seeds)"
        )
        c_ax.set_xlabel("share ρ of doubly-stochastic sequences")
        c_ax.set_ylabel("training steps")
        c_ax.set_ylim(bottom=0)
        c_ax.legend(fontsize=8)

        V, A = np.meshgrid(field.v1, field.a)
        filled = d_ax.contourf(V, A, field.loss, levels=20, cmap="viridis", alpha=0.6)
        fig.colorbar(filled, ax=d_ax, label="L(a, b*, v_1), nats")
        d_ax.streamplot(
            field.v1,
            field.a,
            field.dv1,
            field.da,
            color="w",
            density=1.0,
            linewidth=0.7,
            arrowsize=0.8,
        )
        d_ax.plot(
            minimal.traces["theta"][:, 2],
            minimal.traces["theta"][:, 0],
            "-",
            color="tab:orange",
            lw=3.5,
            alpha=0.8,
            label="minimal model, SGD (all lags), projected",
        )
        d_ax.plot(
            reduced_1.traces["theta"][:, 2],
            reduced_1.traces["theta"][:, 0],
            "r-",
            lw=2.2,
            label="reduced flow (lags = 1)",
        )
        d_ax.plot(
            minimal_1.traces["theta"][:, 2],
            minimal_1.traces["theta"][:, 0],
            "k--",
            lw=1.5,
            label="minimal model, SGD (lags = 1)",
        )
        d_ax.axvline(np.log(T), color="w", ls=":", lw=1)
        d_ax.text(np.log(T), field.a[0], " ln T", color="w", va="bottom")
        d_ax.set_xlim(field.v1[0], field.v1[-1])
        d_ax.set_ylim(field.a[0], field.a[-1])
        d_ax.set_xlabel("v_1 (lag-1 positional logit)")
        d_ax.set_ylabel("a (induction coordinate of W)")
        d_ax.set_title(
            f"(d) reduced (a, b, v_1) flow at b = b*(a, v_1), v_m≥2 = 0\n"
            f"(field: {PORTRAIT_N} sequences × {math.factorial(k)} relabellings, loss s.e. {field.loss_se:.3f}; "
            f"red: {REDUCED_N} × {math.factorial(k)})"
        )
        d_ax.legend(fontsize=8, loc="lower right")
        fig.suptitle(
            f"In-context Markov chains, k = {k}, T = {T}: uniform → unigram → bigram (CPU-sized: "
            f"transformer {args.transformer_steps} steps × {args.seeds} seeds, evaluation on 512 Dirichlet sequences)"
        )
        fig.savefig(path, dpi=110)
        plt.close(fig)

    arrays = {
        **transformer.arrays("transformer_"),
        **minimal.arrays("minimal_"),
        **minimal_1.arrays("minimal_lags1_"),
        **reduced_1.arrays("reduced_lags1_"),
        "shares": np.asarray(args.shares),
        "transition_steps": transitions,
        "plateau_lengths": plateaus,
        "field_v1": field.v1,
        "field_a": field.a,
        "field_b_star": field.b_star,
        "field_dv1": field.dv1,
        "field_da": field.da,
        "field_loss": field.loss,
    }
    metadata = {
        "figure": NAME,
        "k": k,
        "T": T,
        "transformer_steps": args.transformer_steps,
        "minimal_steps": args.minimal_steps,
        "minimal_lr": lr_min,
        "shares": args.shares,
        "seeds": args.seeds,
        "transition_steps": transitions,
        "plateau_lengths": plateaus,
        "field_loss_se": field.loss_se,
    }
    written = save_with_data(args.out / f"{NAME}.png", draw, arrays, metadata)
    print("transition step by share (rows) and seed (columns):")
    for rho, row in zip(args.shares, transitions):
        print(f"  ρ = {rho:g}: {row.tolist()}")
    print("wrote " + ", ".join(str(p) for p in written))
    return 0
