"""The phases of in-context learning of Markov chains (``gradflow figures induction-heads``).

After Edelman et al., "The Evolution of Statistical Induction Heads" (2024), Figs. 2–6, at CPU
size (k = 3, T = 100; the transformer trained 1200 steps from 2 seeds instead of longer runs over
many seeds; the minimal model 300 SGD steps):

(a1, a2) distance to the uniform, unigram and bigram strategies over training, shaded by the
    nearest strategy, for the transformer and for the minimal model;
(b1, b2) the minimal model's positional vector ``v_m`` over training, and the transformer's
    layer-1 attention mass at each lag;
(c) transition step and plateau length against the share of doubly-stochastic training data
    (same seeds, same budget);
(d) the reduced ``(a, b, v_1)`` flow in the ``(v_1, a)`` plane with ``b = b*(a, v_1)``, the
    reduced trajectory and the minimal model's trajectories drawn on it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gradflow import GradflowError

from .task import Dirichlet, doubly_stochastic_mixture

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .portrait import SlowField
    from .train import History

__all__ = ["NAME", "SIZE", "Config", "Data", "compute", "draw"]

NAME = "induction-heads"
SIZE = (16.0, 9.5)
MINIMAL_LR = 4.0
"""SGD step of the minimal model's runs."""
REDUCED_N = 256
"""Sequences (before the k! relabellings) in the reduced trajectory's fixed sample."""
PORTRAIT_N = 64
"""Sequences (before the k! relabellings) behind the field of panel (d)."""


@dataclass(frozen=True)
class Config:
    """Settings of the figure.

    Raises:
        GradflowError: a step count, seed count or grid below 1, or a share outside ``[0, 1]``.
    """

    k: int = field(default=3, metadata={"help": "states"})
    T: int = field(default=100, metadata={"help": "sequence length"})
    transformer_steps: int = field(
        default=1200, metadata={"help": "AdamW steps per transformer run"}
    )
    minimal_steps: int = field(default=300, metadata={"help": "SGD steps of the minimal model"})
    shares: tuple[float, ...] = field(
        default=(0.0, 0.5, 1.0),
        metadata={"help": "doubly-stochastic shares for (c)", "nargs": "+"},
    )
    seeds: int = field(default=2, metadata={"help": "transformer seeds per share"})
    grid: int = field(default=15, metadata={"help": "grid points per axis of (d)"})

    def __post_init__(self) -> None:
        for name in ("transformer_steps", "minimal_steps", "seeds", "grid"):
            if getattr(self, name) < 1:
                raise GradflowError(f"--{name.replace('_', '-')} {getattr(self, name)} must be ≥ 1")
        for rho in self.shares:
            doubly_stochastic_mixture(rho)


@dataclass(frozen=True)
class Data:
    """The runs and the reduced field behind the six panels.

    Attributes:
        runs: the transformer's history per ``(share, seed)``.
        minimal, minimal_1, reduced_1: the minimal model (all lags, lags = 1) and the reduced
            flow (lags = 1).
        field: the reduced flow of panel (d).
        transitions, plateaus: transition step and plateau length per share (rows) and seed
            (columns), NaN where the run never settled on bigram.
    """

    config: Config
    runs: dict[tuple[float, int], History]
    minimal: History
    minimal_1: History
    reduced_1: History
    field: SlowField
    transitions: np.ndarray
    plateaus: np.ndarray

    @property
    def main_share(self) -> float:
        """The share of the transformer run drawn in (a) and (b): the smallest."""
        return min(self.config.shares)

    @property
    def transformer(self) -> History:
        """The transformer run of (a) and (b): seed 0 at :attr:`main_share`."""
        return self.runs[(self.main_share, 0)]

    def arrays(self) -> dict[str, np.ndarray]:
        """The drawn histories, the transition and plateau tables, the field."""
        f = self.field
        return {
            **self.transformer.arrays("transformer_"),
            **self.minimal.arrays("minimal_"),
            **self.minimal_1.arrays("minimal_lags1_"),
            **self.reduced_1.arrays("reduced_lags1_"),
            "shares": np.asarray(self.config.shares),
            "transition_steps": self.transitions,
            "plateau_lengths": self.plateaus,
            "field_v1": f.v1,
            "field_a": f.a,
            "field_b_star": f.b_star,
            "field_dv1": f.dv1,
            "field_da": f.da,
            "field_loss": f.loss,
        }

    def metadata(self) -> dict[str, Any]:
        """Settings, the transition and plateau tables, the field's loss standard error."""
        c = self.config
        return {
            "k": c.k,
            "T": c.T,
            "transformer_steps": c.transformer_steps,
            "minimal_steps": c.minimal_steps,
            "minimal_lr": MINIMAL_LR,
            "shares": list(c.shares),
            "seeds": c.seeds,
            "transition_steps": self.transitions,
            "plateau_lengths": self.plateaus,
            "field_loss_se": self.field.loss_se,
        }

    def summary(self) -> str:
        """The transition steps by share and seed."""
        lines = ["transition step by share (rows) and seed (columns):"]
        lines += [
            f"  ρ = {rho:g}: {row.tolist()}"
            for rho, row in zip(self.config.shares, self.transitions)
        ]
        return "\n".join(lines)


def compute(config: Config) -> Data:
    """Train the transformer per share and seed, the minimal model and the reduced flow; the field."""
    from .phases import phases
    from .portrait import slow_field
    from .train import RunSpec, train

    k, T = config.k, config.T
    every_t = max(1, config.transformer_steps // 40)
    every_m = max(1, config.minimal_steps // 60)
    runs = {
        (rho, seed): train(
            RunSpec(
                model="transformer",
                k=k,
                T=T,
                steps=config.transformer_steps,
                seed=seed,
                prior=doubly_stochastic_mixture(rho),
                eval_every=every_t,
            )
        )
        for rho in config.shares
        for seed in range(config.seeds)
    }
    minimal_spec = RunSpec(
        model="minimal", k=k, T=T, steps=config.minimal_steps, lr=MINIMAL_LR, eval_every=every_m
    )
    minimal = train(minimal_spec)
    minimal_1 = train(dataclasses.replace(minimal_spec, lags=1))
    reduced_1 = train(dataclasses.replace(minimal_spec, model="reduced", lags=1, batch=REDUCED_N))
    th = np.concatenate([h.traces["theta"][:, :3] for h in (minimal, minimal_1, reduced_1)])
    v1_axis = np.linspace(
        min(-0.5, th[:, 2].min()), max(np.log(T) + 2.5, th[:, 2].max() + 0.5), config.grid
    )
    a_axis = np.linspace(min(-0.5, th[:, 0].min()), th[:, 0].max() + 0.5, config.grid)
    field = slow_field(Dirichlet(), k, T, v1_axis, a_axis, n=PORTRAIT_N, newton_steps=5)
    transitions = np.full((len(config.shares), config.seeds), np.nan)
    plateaus = np.full_like(transitions, np.nan)
    for (rho, seed), history in runs.items():
        ph = phases(history.steps, history.distance_mean)
        i = config.shares.index(rho)
        transitions[i, seed] = np.nan if ph.transition_step is None else ph.transition_step
        plateaus[i, seed] = np.nan if ph.plateau_length is None else ph.plateau_length
    return Data(config, runs, minimal, minimal_1, reduced_1, field, transitions, plateaus)


def draw(data: Data, fig: Figure) -> None:
    """Lettered row by row: phases (a1, a2), share sweep (b); positional vector and lag profile
    (c1, c2), reduced flow (d)."""
    from .experiment import draw_phases

    c = data.config
    (a_tr, a_min, c_ax), (b_min, b_tr, d_ax) = fig.subplots(2, 3)
    draw_phases(a_tr, data.transformer, legend=True)
    a_tr.set_title(f"(a1) transformer (d = 16, AdamW, prior share ρ = {data.main_share:g})")
    draw_phases(a_min, data.minimal, legend=True)
    a_min.set_title(f"(a2) minimal model (softmax mixing, SGD lr {MINIMAL_LR:g})")
    _positional_panel(b_min, data.minimal, c.T)
    _lag_panel(b_tr, data.transformer)
    _share_panel(c_ax, data)
    _field_panel(fig, d_ax, data)
    fig.suptitle(
        f"In-context Markov chains, k = {c.k}, T = {c.T}: uniform → unigram → bigram (CPU-sized: "
        f"transformer {c.transformer_steps} steps × {_seeds(c.seeds)}, evaluation on 512 Dirichlet sequences)"
    )


def _positional_panel(ax: Any, minimal: History, T: int) -> None:
    v = minimal.traces["theta"][:, 2:]
    for m in range(6):
        ax.plot(minimal.steps, v[:, m], label=f"v_{m + 1}", lw=2 if m == 0 else 1.2)
    ax.axhline(np.log(T), color="k", ls=":", lw=1, label="ln T")
    ax.set_title("(c1) minimal model: positional vector v over training")
    ax.set_xlabel("training step")
    ax.set_ylabel("v_m")
    ax.legend(fontsize=8, ncol=2)


def _lag_panel(ax: Any, transformer: History) -> None:
    lags = transformer.traces["lag_profile"]
    for m in range(5):
        ax.plot(transformer.steps, lags[:, m], label=f"lag {m}", lw=2 if m == 1 else 1.2)
    ax.set_title("(c2) transformer: layer-1 attention mass per lag")
    ax.set_xlabel("training step")
    ax.set_ylabel("mean attention weight")
    ax.legend(fontsize=8)


def _share_panel(ax: Any, data: Data) -> None:
    c = data.config
    shares = np.asarray(c.shares)
    for values, label, marker in (
        (data.transitions, "transition step", "o"),
        (data.plateaus, "plateau length (unigram phase)", "s"),
    ):
        mean, std = _settled_mean_std(values)
        ax.errorbar(
            shares,
            mean,
            yerr=std,
            marker=marker,
            capsize=4,
            label=label,
        )
        for j in range(values.shape[1]):
            ax.scatter(shares, values[:, j], marker=marker, color="k", s=10, alpha=0.5)
    ax.set_title(
        f"(b) transformer: share of doubly-stochastic training data\n({_seeds(c.seeds)} each, {c.transformer_steps} steps, same seeds)"
    )
    ax.set_xlabel("share ρ of doubly-stochastic sequences")
    ax.set_ylabel("training steps")
    top = ax.get_ylim()[1]
    ax.set_ylim(-0.04 * top, top)  # a plateau of 0 steps drawn whole, above the frame
    if not np.isfinite(data.transitions).any():
        ax.text(
            0.5,
            0.5,
            f"no run settled on bigram within {c.transformer_steps} steps",
            transform=ax.transAxes,
            ha="center",
        )
    ax.legend(fontsize=8)


def _settled_mean_std(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation of each row over its finite entries (the runs that settled),
    NaN for a row with none; shapes ``(rows,)``."""
    settled = np.isfinite(values)
    counts = settled.sum(1)
    mean = np.full(len(values), np.nan)
    std = np.full(len(values), np.nan)
    for i in np.flatnonzero(counts):
        mean[i] = values[i, settled[i]].mean()
        std[i] = values[i, settled[i]].std()
    return mean, std


def _field_panel(fig: Figure, ax: Any, data: Data) -> None:
    f, T = data.field, data.config.T
    V, A = np.meshgrid(f.v1, f.a)
    filled = ax.contourf(V, A, f.loss, levels=20, cmap="viridis", alpha=0.6)
    fig.colorbar(filled, ax=ax, label="L(a, b*, v_1), nats")
    ax.streamplot(f.v1, f.a, f.dv1, f.da, color="w", density=1.0, linewidth=0.7, arrowsize=0.8)
    paths = (
        (
            data.minimal,
            dict(color="tab:orange", lw=3.5, alpha=0.8),
            "minimal model, SGD (all lags), projected",
        ),
        (data.reduced_1, dict(color="r", lw=2.2), "reduced flow (lags = 1)"),
        (data.minimal_1, dict(color="k", ls="--", lw=1.5), "minimal model, SGD (lags = 1)"),
    )
    for history, style, label in paths:
        ax.plot(history.traces["theta"][:, 2], history.traces["theta"][:, 0], label=label, **style)
    ax.axvline(np.log(T), color="w", ls=":", lw=1)
    ax.text(np.log(T), f.a[0], " ln T", color="w", va="bottom")
    ax.set_xlim(f.v1[0], f.v1[-1])
    ax.set_ylim(f.a[0], f.a[-1])
    ax.set_xlabel("v_1 (lag-1 positional logit)")
    ax.set_ylabel("a (induction coordinate of W)")
    k_fact = math.factorial(data.config.k)
    ax.set_title(
        f"(d) reduced (a, b, v_1) flow at b = b*(a, v_1), v_m≥2 = 0\n"
        f"(field: {PORTRAIT_N} sequences × {k_fact} relabellings, loss s.e. {f.loss_se:.3f}; "
        f"red: {REDUCED_N} × {k_fact})"
    )
    ax.legend(fontsize=8, loc="lower right")


def _seeds(n: int) -> str:
    """``"1 seed"``, ``"2 seeds"``."""
    return f"{n} seed" if n == 1 else f"{n} seeds"
