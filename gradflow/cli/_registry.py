"""The one registry of the command line: commands, figures, benchmarks and models by name.

Everything here is plain data (module paths and one-line helps), so ``gradflow --help`` lists
every command without importing any of them.  Each entry's module is imported only when a user
asks for it.

- A **command** module in ``gradflow.cli`` provides ``add_arguments(parser)`` and
  ``run(args) -> int``; it raises :class:`gradflow.GradflowError` for bad input (printed as one
  line, exit status 2).
- A **figure** module of a system (``gradflow.systems.<system>.figure`` or ``figure_<name>``)
  provides ``Config``, ``compute(config) -> data``, ``draw(data, fig)`` and ``SIZE`` (see
  :mod:`gradflow.systems.figures`).
- A **benchmark** module in ``gradflow.benchmarks`` provides ``Config`` and
  ``bench(config) -> report`` with ``report.metadata()`` and ``report.text()``.
- A **model** is listed once, in :data:`gradflow.systems.MODELS` (re-exported here); its factory
  returns a :class:`gradflow.ReducedModel`.  Installed packages add models through the
  entry-point group ``gradflow.models``.

``tests/test_registry.py`` checks every entry against what it names.
"""

from __future__ import annotations

from dataclasses import dataclass

from gradflow.systems import MODELS, ModelEntry

__all__ = ["BENCHES", "COMMANDS", "FIGURES", "MODELS", "Command", "ModelEntry"]


@dataclass(frozen=True)
class Command:
    """A named entry: the module that implements it, its one-line help, and the other names it
    answers to (an earlier name kept working)."""

    module: str
    help: str
    aliases: tuple[str, ...] = ()


COMMANDS = {
    "portrait": Command(
        "gradflow.cli.portrait", "phase portrait: streamlines, critical sets, separatrix, basins"
    ),
    "critical": Command("gradflow.cli.critical", "critical sets, classified by the Hessian"),
    "basins": Command("gradflow.cli.basins", "basin map of the gradient flow on a grid"),
    "flow": Command("gradflow.cli.flow", "one trajectory of the gradient flow to convergence"),
    "models": Command("gradflow.cli.models", "the models the commands accept, with their ranges"),
    "sweep": Command(
        "gradflow.cli.sweep",
        "critical sets and basin fractions over a grid of hyperparameter values (resumable)",
    ),
    "figures": Command("gradflow.cli.figures", "regenerate a paper figure"),
    "bench": Command("gradflow.cli.bench", "run a benchmark"),
    "train": Command(
        "gradflow.cli.train",
        "train the full single-layer transformer on a Markov chain: loss curve, canonical trajectory",
    ),
    "fate": Command(
        "gradflow.cli.fate",
        "where full transformer training ends from a grid of reduced inits, vs the reduced basins",
    ),
    "compare": Command(
        "gradflow.cli.compare",
        "reduced-vs-full checks of the canonical Markov models: value, gradient, dynamics",
    ),
    "induction-heads": Command(
        "gradflow.cli.induction_heads",
        "in-context Markov chains: train the minimal/transformer/reduced model, phases uniform → unigram → bigram",
        ("icl",),
    ),
    "shallow-ntk": Command(
        "gradflow.cli.shallow_ntk",
        "NTK width sweep of the shallow encoder transformer (Wu et al. 2023)",
        ("ntk",),
    ),
    "two-mixture": Command(
        "gradflow.cli.two_mixture",
        "two-headed transformer on the two-mixture task: train (joint or staged), detect the stages",
        ("mixture",),
    ),
}

FIGURES = {
    "local-to-global-fig1": Command(
        "gradflow.systems.markov.figure_fig1",
        "Local to Global, Fig. 1: canonical flow with energy contours and basins, p = q = 0.1 and 0.9",
    ),
    "bifurcation-diagram": Command(
        "gradflow.systems.figure_bifurcation_diagram",
        "critical points of a loss along one hyperparameter (pitchfork normal form by default): branches by kind, located bifurcations, attractors' shares",
    ),
    "local-to-global-fate-map": Command(
        "gradflow.systems.markov.figure_fate_map",
        "where full transformer training ends vs the reduced basins (induced metric), p + q > 1 and < 1",
    ),
    "local-to-global-phase-diagram": Command(
        "gradflow.systems.markov.figure_phase_diagram",
        "Local to Global: share of initializations reaching the global and the local minimum over (p, q), loss gap",
    ),
    "local-to-global-training": Command(
        "gradflow.systems.markov.figure_training",
        "Local to Global: full-model test loss vs iteration, standard vs recommended init, p = 0.5, q = 0.8",
    ),
    "local-to-global-rank-one": Command(
        "gradflow.systems.markov.figure_rank_one",
        "Local to Global: energy of the top singular value of each weight matrix during training from the standard init (rank-one emergence)",
    ),
    "local-to-global-overlay": Command(
        "gradflow.systems.markov.figure_overlay",
        "Local to Global: full-model training projected onto (w, e) over the canonical portrait and basins",
    ),
    "canonical-attention": Command(
        "gradflow.systems.markov.figure_canonical_attention",
        "three-scalar model L(e, w, a): basins on slices of a, rays from the origin, 3-D trajectories",
    ),
    "induction-heads": Command(
        "gradflow.systems.induction_heads.figure",
        "Evolution of Statistical Induction Heads: phases, positional vector, doubly-stochastic share, reduced (a, b, v_1) flow",
    ),
    "shallow-ntk": Command(
        "gradflow.systems.shallow_ntk.figure",
        "Wu et al. 2023: λ_min(K0), α0, kernel change vs width; GD vs linearized flow",
    ),
    "two-mixture": Command(
        "gradflow.systems.two_mixture.figure",
        "Two-mixture classification (reconstruction): neuron alignment, scores per query, loss, stages; attention stage vs ω",
    ),
}

BENCHES = {
    "basins": Command(
        "gradflow.benchmarks.basins",
        "basin map of the canonical flow against scipy solve_ivp (RK45, LSODA)",
    ),
    "sweep": Command(
        "gradflow.benchmarks.sweep",
        "phase-diagram sweep of the canonical model over (p, q) against separate cells",
    ),
    "bifurcations": Command(
        "gradflow.benchmarks.bifurcations",
        "1-D sweep of the pitchfork normal form (201 values, grid 41) with branches and bifurcations followed",
    ),
    "fate": Command(
        "gradflow.benchmarks.fate",
        "fate map of the full transformer (12 × 12 runs, N = 6): time, fates, one-at-a-time vs vmapped gradient",
    ),
    "train": Command(
        "gradflow.benchmarks.train",
        "full Markov transformer: training steps/s (d = 8, batch 16, float32), exact loss at N = 12",
    ),
    "shallow-ntk": Command(
        "gradflow.benchmarks.shallow_ntk",
        "empirical NTK Gram matrix (N = 64, d_m = 1024): jacobian vs per-sample vs NTK-vector products",
        ("ntk",),
    ),
    "startup": Command(
        "gradflow.benchmarks.startup",
        "command-line start-up: every --help, a rejected argument, the main job cold and warm",
    ),
    "induction-heads": Command(
        "gradflow.benchmarks.induction_heads",
        "ICL-MC transformer training steps/s (k = 3, T = 100, d = 16, batch 64) vs per-call loop and the minimal model",
        ("icl",),
    ),
}
