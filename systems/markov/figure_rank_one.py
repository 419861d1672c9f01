"""Local to Global (Makkuva et al., NeurIPS 2024), the rank-one emergence of the trained weights
(their Figs 5 and 7): during training of the full single-layer transformer from the standard
init, the energy of the top singular value, ``σ1² / Σσ²``, of each weight matrix, read from the
rank-one diagnostics that ``gradflow train`` records at every evaluation
(:func:`~gradflow.systems.markov.embedding.rank_one_diagnostics`; 1 for a rank-one matrix,
``1/d`` for an isotropic one), beside the test loss.

CPU-sized as the training figure: ``N = 64`` positions (the paper: 1024), ``d = 8``, batch 16,
AdamW with a cosine one-cycle schedule, at ``p = 0.2, q = 0.3`` (``p + q < 1``, where the
standard init reaches the global minimum).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gradflow import GradflowError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .training import TrainResult

__all__ = ["NAME", "SIZE", "Config", "Data", "compute", "draw"]

NAME = "local-to-global-rank-one"
SIZE = (10.0, 4.6)
MATRICES = {
    "W_1": ("#1f5fbf", 2.0),
    "W_V": ("#c0392b", 2.0),
    "W_2": ("#7fa7e0", 1.0),
    "W_Q": ("#999999", 1.0),
    "W_K": ("#bbbbbb", 1.0),
    "W_O": ("#e6a09a", 1.0),
}
"""Each matrix's colour and line width (the paper's two, ``W_1`` and ``W_V``, drawn heavier)."""


@dataclass(frozen=True)
class Config:
    """Settings of the figure.

    Raises:
        GradflowError: fewer than one seed or step, or ``p, q`` outside ``(0, 1)``.
    """

    steps: int = field(default=1000, metadata={"help": "optimizer steps"})
    seeds: int = field(default=3, metadata={"help": "seeds, trained in parallel"})
    length: int = field(
        default=64,
        metadata={"help": "positions per sequence", "flag": "--seq-len", "metavar": "N"},
    )
    p: float = field(default=0.2, metadata={"help": "P(x_{n+1} = 1 | x_n = 0) in (0, 1)"})
    q: float = field(default=0.3, metadata={"help": "P(x_{n+1} = 0 | x_n = 1) in (0, 1)"})

    def __post_init__(self) -> None:
        if self.seeds < 1 or self.steps < 1:
            raise GradflowError(f"seeds = {self.seeds}, steps = {self.steps} must be ≥ 1")
        if not (0 < self.p < 1 and 0 < self.q < 1):
            raise GradflowError(f"p = {self.p}, q = {self.q} must be in (0, 1)")


@dataclass(frozen=True)
class Data:
    """The training run (all seeds)."""

    config: Config
    run: TrainResult

    def energies(self) -> dict[str, np.ndarray]:
        """Per matrix its energy ``σ1²/Σσ²`` per seed and evaluation, shape ``(seeds, m)``."""
        return {m: self.run.diagnostics[f"energy_{m}"] for m in MATRICES}

    def arrays(self) -> dict[str, np.ndarray]:
        """Evaluation steps, test losses, the energies."""
        return {
            "eval_steps": self.run.eval_steps,
            "test_loss": self.run.test_loss,
            **{f"energy_{m}": v for m, v in self.energies().items()},
        }

    def metadata(self) -> dict[str, Any]:
        """Settings, the energies at the init and at the end per seed, final test losses."""
        energies = self.energies()
        return {
            "p": self.config.p,
            "q": self.config.q,
            "steps": self.config.steps,
            "seeds": self.config.seeds,
            "seq_len": self.config.length,
            "energy_at_init": {m: v[:, 0] for m, v in energies.items()},
            "energy_at_end": {m: v[:, -1] for m, v in energies.items()},
            "final_test_loss": self.run.test_loss[:, -1],
            **self.run.references,
            "source": "Makkuva et al., Local to Global (NeurIPS 2024), Figs 5 and 7",
        }


def compute(config: Config) -> Data:
    """Train ``seeds`` models from the standard init (AdamW, batch 16, d = 8)."""
    from .training import TrainConfig, train

    run = train(
        TrainConfig(
            p=config.p,
            q=config.q,
            steps=config.steps,
            length=config.length,
            seeds=config.seeds,
        )
    )
    return Data(config=config, run=run)


def draw(data: Data, fig: Figure) -> None:
    """(a) each matrix's energy against the step, the mean over seeds with the seeds' range
    shaded, ``1/d`` (isotropic) dotted; (b) each seed's test loss with ``H(π)`` and the entropy
    rate."""
    from .training import draw_reference_losses

    run, config = data.run, data.config
    left, right = fig.subplots(1, 2)
    steps = run.eval_steps
    for name, (color, width) in MATRICES.items():
        values = data.energies()[name]
        left.plot(steps, values.mean(axis=0), color=color, lw=width, label=name)
        left.fill_between(steps, values.min(axis=0), values.max(axis=0), color=color, alpha=0.15)
    d = run.config.d
    left.axhline(1 / d, color="black", ls=":", lw=1.0, label=f"1/d = {1 / d:g} (isotropic)")
    left.set_ylim(0, 1.02)
    left.set_xlabel("iteration")
    left.set_ylabel("σ1² / Σσ² (1: rank one)")
    left.set_title(f"(a) top singular value's energy, mean of {config.seeds} seeds", fontsize=9)
    left.legend(fontsize=7.5, loc="lower right", ncol=2)
    for i, curve in enumerate(run.test_loss):
        right.plot(steps, curve, color="#444444", lw=1.2, alpha=0.8, label=f"seed {i}")
    draw_reference_losses(right, run.references)
    right.set_xlabel("iteration")
    right.set_ylabel("test loss (nats)")
    right.set_title("(b) test loss", fontsize=9)
    right.legend(fontsize=7, loc="upper right")
    fig.suptitle(
        f"Rank-one emergence, standard init, p = {config.p:g}, q = {config.q:g}: "
        f"N = {config.length} (paper: 1024), d = {d}, batch 16, AdamW, {config.steps} steps",
        fontsize=9.5,
    )
