"""Local to Global (Makkuva et al., NeurIPS 2024), the initialization experiment: test loss of the
full single-layer transformer against the step, standard init vs the paper's recommended init,
at p = 0.5, q = 0.8 (p + q > 1), with the exact unigram loss H(π) and the entropy rate.

CPU-sized: sequences of N = 64 positions (the paper: 1024), d = 8, batch 16, AdamW with a cosine
one-cycle schedule.  Every seed is drawn on its own, its legend entry saying where it ends
(:func:`outcome`): the runs of one init need not agree — at this size a standard-init run can
leave the unigram plateau — and a mean ± std band over runs that end at two different losses
would describe none of them.  The test loss is estimated on a fixed set of sequences with the
next symbol integrated out (unbiased, standard error printed in the JSON).
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

NAME = "local-to-global-training"
SIZE = (8.5, 5.4)
P, Q = 0.5, 0.8
INITS = {
    "standard": ("standard init N(0, 0.02²)", "#c0392b"),
    "paper": ("recommended init (rank-one, w0 = -1)", "#1f5fbf"),
}
"""Each init's legend label and colour."""


@dataclass(frozen=True)
class Config:
    """Settings of the figure.

    Raises:
        GradflowError: fewer than 3 seeds.
    """

    steps: int = field(default=1000, metadata={"help": "optimizer steps"})
    seeds: int = field(default=3, metadata={"help": "seeds per init"})
    length: int = field(
        default=64,
        metadata={"help": "positions per sequence", "flag": "--seq-len", "metavar": "N"},
    )

    def __post_init__(self) -> None:
        if self.seeds < 1:
            raise GradflowError(f"seeds = {self.seeds} must be ≥ 1")


@dataclass(frozen=True)
class Data:
    """The training run of each init (all seeds)."""

    config: Config
    runs: dict[str, TrainResult]

    @property
    def references(self) -> dict[str, float]:
        """``H(π)`` and the entropy rate, nats."""
        return self.runs["standard"].references

    def arrays(self) -> dict[str, np.ndarray]:
        """Evaluation steps, test losses with standard errors, training losses, coordinates."""
        out = {}
        for init, r in self.runs.items():
            out |= {
                f"{init}_eval_steps": r.eval_steps,
                f"{init}_test_loss": r.test_loss,
                f"{init}_test_se": r.test_se,
                f"{init}_train_loss": r.train_loss,
                f"{init}_coords": r.coords,
            }
        return out

    def metadata(self) -> dict[str, Any]:
        """Settings, final test losses per seed with standard errors, the references."""
        return {
            "p": P,
            "q": Q,
            "steps": self.config.steps,
            "seeds": self.config.seeds,
            "seq_len": self.config.length,
            "final_test_loss": {init: r.test_loss[:, -1] for init, r in self.runs.items()},
            "final_test_se": {init: r.test_se[:, -1] for init, r in self.runs.items()},
            "outcomes": {
                init: [outcome(r, i)[0] for i in range(len(r.test_loss))]
                for init, r in self.runs.items()
            },
            **self.references,
            "source": "Makkuva et al., Local to Global (NeurIPS 2024), initialization experiment",
        }


def compute(config: Config) -> Data:
    """Train ``seeds`` models from each init (AdamW, batch 16, d = 8)."""
    from .training import TrainConfig, train

    runs = {
        init: train(
            TrainConfig(
                p=P, q=Q, init=init, steps=config.steps, length=config.length, seeds=config.seeds
            )
        )
        for init in INITS
    }
    return Data(config=config, runs=runs)


SEED_STYLES = ("-", "--", ":", "-.")
"""Line style of each seed of one init (repeating)."""
OUTCOME_SHARE = 0.1
"""A run ends at a reference loss when it is within this share of the gap ``H(π) − H`` of it
(plus four standard errors); the gap at p = 0.5, q = 0.8 is 0.047 nats."""


def outcome(result: TrainResult, seed: int) -> tuple[str, str]:
    """Where seed ``seed`` (its index) of ``result`` ends, as a label (``"unigram"``,
    ``"entropy rate"``, ``"between"``) and a legend text with its final loss against the nearer
    reference, and the first evaluation at which it is below ``H(π) − ½ gap`` where it left the
    plateau."""
    ref = result.references
    unigram, rate = ref["unigram_loss"], ref["entropy_rate"]
    gap = unigram - rate
    curve, final, se = result.test_loss[seed], result.test_loss[seed, -1], result.test_se[seed, -1]
    near = OUTCOME_SHARE * gap + 4 * se
    below = np.flatnonzero(curve < unigram - 0.5 * gap)
    left = f", left H(π) by step {int(result.eval_steps[below[0]])}" if below.size else ""
    if abs(final - unigram) <= near:
        return "unigram", f"ends at H(π) {final - unigram:+.4f}{left}"
    if abs(final - rate) <= near:
        return "entropy rate", f"ends at the entropy rate {final - rate:+.4f}{left}"
    return "between", f"ends at {final:.4f}{left}"


def draw(data: Data, fig: Figure) -> None:
    """Test loss against the step: every seed of each init (colour) in its own line style,
    its legend entry saying where it ends; the two reference losses."""
    from .training import draw_reference_losses

    ax = fig.add_subplot()
    ref, config = data.references, data.config
    for init, (label, color) in INITS.items():
        r = data.runs[init]
        for i, curve in enumerate(r.test_loss):
            _, text = outcome(r, i)
            ax.plot(
                r.eval_steps,
                curve,
                SEED_STYLES[i % len(SEED_STYLES)],
                color=color,
                lw=1.6,
                label=f"{label}, seed {r.config.seed0 + i}: {text}",
            )
    draw_reference_losses(ax, ref)
    ax.set_xlabel("iteration")
    ax.set_ylabel("test loss (nats)")
    low = ref["entropy_rate"]
    high = max(float(np.max(r.test_loss)) for r in data.runs.values())
    ax.set_ylim(low - 0.1 * (high - low), high + 0.05 * (high - low))
    ax.legend(fontsize=7.5, loc="upper right")
    ax.set_title(
        f"Single-layer transformer on a Markov chain, p = {P}, q = {Q}: standard vs recommended init\n"
        f"CPU-sized: N = {config.length} positions (paper: 1024), d = 8, batch 16, AdamW, cosine one-cycle, {config.steps} steps",
        fontsize=9.5,
    )
