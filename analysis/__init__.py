"""Analyses that join a model with the engine (``gradflow.analysis``).

``COMMANDS`` and ``BENCHES`` list the command-line entries analyses provide; each names the
module implementing it (``add_arguments(parser)`` and ``run(args)``), imported only when used.
"""

from __future__ import annotations

from gradflow.cli._registry import Command

__all__ = ["BENCHES", "COMMANDS"]

COMMANDS: dict[str, Command] = {
    "train": Command(
        "gradflow.analysis.markov_train_cli",
        "train the full single-layer transformer on a Markov chain: loss curve, canonical trajectory",
    ),
    "compare": Command(
        "gradflow.analysis.markov_compare_cli",
        "reduced-vs-full checks of the canonical Markov models: value, gradient, dynamics",
    ),
    "ntk": Command(
        "gradflow.analysis.ntk_command",
        "NTK width sweep of the shallow encoder transformer (Wu et al. 2023)",
    ),
    "mixture": Command(
        "gradflow.analysis.mixture_command",
        "two-headed transformer on the two-mixture task: train (joint or staged), detect the stages",
    ),
    "icl": Command(
        "gradflow.analysis.icl",
        "in-context Markov chains: train the minimal/transformer/reduced model, phases uniform → unigram → bigram",
    ),
}

BENCHES = {
    "train": Command(
        "gradflow.analysis.bench_train",
        "full Markov transformer: training steps/s (d = 8, N = 256, batch 16, float32), exact loss at N = 12",
    ),
    "basins": Command(
        "gradflow.analysis.bench_basins",
        "400 × 400 basin map of the canonical flow against scipy solve_ivp (RK45, LSODA)",
    ),
    "ntk": Command(
        "gradflow.analysis.bench_ntk",
        "empirical NTK Gram matrix (N = 64, d_m = 1024): jacobian vs per-sample vs NTK-vector products",
    ),
    "icl": Command(
        "gradflow.analysis.bench_icl",
        "ICL-MC transformer training steps/s (k = 3, T = 100, d = 16, batch 64) vs per-call loop and the minimal model",
    ),
}
