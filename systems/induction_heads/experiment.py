"""One ICL-MC experiment (``gradflow icl``): seeds of one model trained, and their phases.

:class:`ICLConfig` holds the settings (defaults that depend on the model are filled in by
:meth:`ICLConfig.specs`), :func:`run_experiment` trains every seed and :class:`ICLReport` holds
the histories with their phases: arrays (every seed's history under ``seed{i}_``), a JSON-ready
record and a text report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from gradflow import format_table

from .config import ICLConfig
from .layers import LAYERS, formation_step
from .phases import Phases, phases
from .strategies import STRATEGY_NAMES
from .train import History, RunSpec, train

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["STRATEGY_COLORS", "ICLConfig", "ICLReport", "draw_phases", "run_experiment"]


@dataclass(frozen=True)
class ICLReport:
    """The trained seeds: their specs, histories and phases (in seed order)."""

    config: ICLConfig
    specs: tuple[RunSpec, ...]
    histories: tuple[History, ...]

    @property
    def phases(self) -> tuple[Phases, ...]:
        """Each seed's phases (from its distances averaged over positions)."""
        return tuple(phases(h.steps, h.distance_mean) for h in self.histories)

    def arrays(self) -> dict[str, np.ndarray]:
        """Every seed's history (:meth:`History.arrays`) under ``seed{i}_``."""
        out: dict[str, np.ndarray] = {}
        for spec, history in zip(self.specs, self.histories):
            out.update(history.arrays(prefix=f"seed{spec.seed}_"))
        return out

    def metadata(self) -> dict[str, Any]:
        """The setting, one record per seed (phases, final test loss and distances), and the
        mean ± std of the transition step and plateau length over the seeds that have one."""
        spec = self.specs[0]
        setting = {
            "model": spec.model,
            "k": spec.k,
            "T": spec.T,
            "steps": spec.steps,
            "prior": self.config.prior,
            "lr": spec.step_size,
            "batch": spec.batch,
            "eval_every": spec.eval_every,
            "eval_n": spec.eval_n,
            "seeds": len(self.specs),
            "trainer": spec.trainer,
            "init_scale": spec.init_scale,
            **(
                {"mixing": spec.mixing, "lags": spec.n_lags, "a0": spec.a0, "b0": spec.b0}
                if spec.model != "transformer"
                else {"d": spec.d}
            ),
            **({"solver": spec.solver} if spec.model == "reduced" else {}),
        }
        records = [
            _seed_record(s.seed, ph, h) for s, ph, h in zip(self.specs, self.phases, self.histories)
        ]
        return {
            "setting": setting,
            "runs": records,
            "transition_step": _summary([r["phases"]["transition_step"] for r in records]),
            "plateau_length": _summary([r["phases"]["plateau_length"] for r in records]),
        }

    def figure(self) -> Figure:
        """A new matplotlib figure: one panel per seed (:func:`draw_phases`), its distances to
        the three strategies over training with the phases shaded; the ``induction-heads``
        figure adds the positional vector, the prior sweep and the reduced flow."""
        from matplotlib.figure import Figure

        spec = self.specs[0]
        cols = min(len(self.histories), 3)
        rows = -(-len(self.histories) // cols)
        fig = Figure(figsize=(4.6 * cols, 3.6 * rows + 0.4), layout="constrained")
        axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
        for ax, run, history in zip(axes, self.specs, self.histories):
            draw_phases(ax, history)
            ax.set_title(f"seed {run.seed}", fontsize=10)
        for ax in axes[len(self.histories) :]:
            ax.set_visible(False)
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncols=3, fontsize=8)
        fig.suptitle(
            f"{spec.model}, k = {spec.k}, T = {spec.T}, prior {self.config.prior}:\n"
            "uniform → unigram → bigram (shaded: the nearest strategy)",
            fontsize=10,
        )
        return fig

    def text(self) -> str:
        """A heading, one table row per seed, each seed's phases in full (a line each, never cut to
        a table cell), the mean transition step and plateau length."""
        spec, record = self.specs[0], self.metadata()
        rows, phase_lines = [], []
        for r in record["runs"]:
            ph = r["phases"]
            phase_lines.append(
                f"seed {r['seed']} phases (steps): "
                + " → ".join(f"{m} [{a:g}, {b:g}]" for m, a, b in ph["intervals"])
            )
            rows.append(
                [
                    r["seed"],
                    "—" if ph["transition_step"] is None else f"{ph['transition_step']:g}",
                    "censored" if ph["plateau_length"] is None else f"{ph['plateau_length']:g}",
                    f"{r['final_test_loss']['mean']:.4f}",
                    *(f"{r['final_distance'][m]['mean']:.4f}" for m in STRATEGY_NAMES),
                ]
            )
        header = ["seed", "transition", "plateau", "test loss", *STRATEGY_NAMES]
        lines = [
            f"gradflow icl: {spec.model}, k = {spec.k}, T = {spec.T}, {spec.steps} steps, prior {self.config.prior}, "
            f"{len(self.specs)} seed(s); distances E KL(strategy ‖ model) averaged over positions, nats",
            format_table(header, rows),
            *phase_lines,
        ]
        for r in record["runs"]:
            if "layer_formation" in r:
                lines.append(
                    f"seed {r['seed']} attention forms (half its rise): "
                    + ", ".join(
                        f"{name} at step {f['step']:g} ({f['start']:.3f} → {f['max']:.3f})"
                        for name, f in r["layer_formation"].items()
                    )
                )
        for name in ("transition_step", "plateau_length"):
            s = record[name]
            if s["runs"]:
                lines.append(
                    f"{name.replace('_', ' ')}: {s['mean']:.1f} ± {s['std']:.1f} steps over {s['runs']} run(s)"
                )
        return "\n".join(lines)


STRATEGY_COLORS = {"uniform": "tab:gray", "unigram": "tab:orange", "bigram": "tab:blue"}
"""The colour of each strategy in every picture of training phases."""


HEADROOM = 0.2
"""The share of a phase panel's height above its highest curve."""


def draw_phases(ax: Axes, history: History, *, legend: bool = False) -> None:
    """A run's distances ``E KL(strategy ‖ model)`` to uniform, unigram and bigram (averaged over
    positions, nats) against the step, each phase — the stretch where one strategy is nearest —
    shaded in its colour.  The top :data:`HEADROOM` of the height is left free of curves: with
    ``legend``, the legend lies there in one row."""
    ph = phases(history.steps, history.distance_mean)
    for i, (name, start, end) in enumerate(ph.intervals):
        right = ph.intervals[i + 1][1] if i + 1 < len(ph.intervals) else end
        ax.axvspan(start, right, color=STRATEGY_COLORS[name], alpha=0.12, lw=0)
    for i, name in enumerate(STRATEGY_NAMES):
        ax.plot(
            history.steps,
            history.distance_mean[:, i],
            color=STRATEGY_COLORS[name],
            label=f"to {name}",
        )
    ax.set_xlabel("training step")
    ax.set_ylabel("E KL(strategy ‖ model), nats")
    top = np.nanmax(history.distance_mean) if np.isfinite(history.distance_mean).any() else 1.0
    ax.set_ylim(0, top / (1 - HEADROOM) if top > 0 else 1.0)
    if legend:
        ax.legend(loc="upper center", ncols=3, fontsize=8)


def _seed_record(seed: int, ph: Phases, history: History) -> dict[str, Any]:
    """One seed: its phases, final test loss and distances (last position, and mean), and for
    the transformer when each layer's attention pattern forms (:mod:`.layers`)."""
    layers = {}
    if "layer_scores" in history.traces:
        scores = history.traces["layer_scores"]
        layers["layer_formation"] = {
            name: dict(zip(("step", "start", "max"), formation_step(history.steps, scores[:, i])))
            for i, name in enumerate(LAYERS)
        }
    return {
        "seed": seed,
        "phases": ph.metadata(),
        "final_test_loss": {
            "last": float(history.test_last[-1]),
            "mean": float(history.test_mean[-1]),
        },
        "final_distance": {
            m: {
                "last": float(history.distance_last[-1, i]),
                "mean": float(history.distance_mean[-1, i]),
            }
            for i, m in enumerate(STRATEGY_NAMES)
        },
        **layers,
    }


def _summary(values: list[float | None]) -> dict[str, float | int | None]:
    """Mean, standard deviation and count of the known values."""
    known = [v for v in values if v is not None]
    return {
        "mean": float(np.mean(known)) if known else None,
        "std": float(np.std(known)) if known else None,
        "runs": len(known),
    }


def run_experiment(config: ICLConfig, *, progress: bool | None = None) -> ICLReport:
    """Train every seed of ``config`` (progress bars on stderr as ``progress`` says).

    Raises:
        GradflowError: a run diverged (non-finite predictions).
    """
    specs = tuple(config.specs())
    histories = tuple(train(spec, progress=progress) for spec in specs)
    return ICLReport(config=config, specs=specs, histories=histories)
