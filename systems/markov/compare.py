"""The reduced-vs-full checks of the canonical Markov models as one report (``gradflow compare``).

For each of canonical ``L(e, w)``, canonical-bias ``L(e, w, b)``, canonical-attention
``L(e, w, a)`` and canonical-attention-bias ``L(e, w, a, b)``: the value and pulled-back gradient
errors at random points against the full transformer's exact loss, and the off-manifold share of
the full gradient by parameter group (:func:`.checks.embedding_checks`).  Then the
dynamics: full-batch gradient descent on the exact loss from ``embed(θ0)`` against the reduced
flow in the induced metric (:func:`.checks.dynamics_check`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from gradflow import format_table
from gradflow.systems import MODELS

from .checks import (
    GROUPS,
    DynamicsCheck,
    EmbeddingChecks,
    dynamics_check,
    embedding_checks,
    random_points,
)
from .config import CompareConfig
from .full_model import FULL_MODELS, full_model
from .full_spectrum import critical_set_indices, index_lines

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["CompareConfig", "CompareReport", "compare"]


@dataclass(frozen=True)
class CompareReport:
    """The embedding checks per model and the dynamics check.

    Attributes:
        references: ``H(π)`` and the entropy rate at ``(p, q)``, nats.
        spectra: with ``config.spectra``, each reduced critical set's Morse index in the reduced
            and in the full canonical model at the dynamics check's ``N``
            (:func:`~gradflow.systems.markov.full_spectrum.critical_set_indices`).
    """

    config: CompareConfig
    checks: tuple[EmbeddingChecks, ...]
    dynamics: DynamicsCheck
    references: dict[str, float]
    spectra: tuple[dict[str, Any], ...] = ()

    def arrays(self) -> dict[str, np.ndarray]:
        """The dynamics check over time (``times``; ``full`` and ``reduced`` of shape
        ``(m, 4)`` in ``(e, w, a, b)``; ``full_loss``, ``reduced_loss``) and each model's
        points with their value errors and off-manifold shares (``<model>_thetas``, …)."""
        run = self.dynamics
        out = {
            "times": run.times,
            "full": run.full,
            "reduced": run.reduced,
            "full_loss": run.full_loss,
            "reduced_loss": run.reduced_loss,
        }
        for checks in self.checks:
            out[f"{checks.model}_thetas"] = checks.thetas
            out[f"{checks.model}_value_error"] = np.abs(checks.full_loss - checks.reduced_loss)
            out[f"{checks.model}_off_manifold"] = checks.off_manifold
        return out

    def figure(self) -> Figure:
        """A new matplotlib figure: (a) each reduced model's largest value and gradient error
        against the full transformer (log scale); (b) the dynamics check's four coordinates
        over flow time, full training projected (solid) against the reduced flow in the
        induced metric (dashed); (c) their losses with ``H(π)`` and the entropy rate."""
        from matplotlib.figure import Figure

        from .training import draw_reference_losses

        c, run = self.config, self.dynamics
        fig = Figure(figsize=(14.0, 5.6), layout="constrained")
        errors, coords, losses = fig.subplots(1, 3, width_ratios=(1.0, 1.2, 1.2))
        names = [checks.model for checks in self.checks]
        x = np.arange(len(names))
        for shift, key, label in (
            (-0.2, "value_error", "max |ΔL| (nats)"),
            (0.2, "gradient_error", "max |Δ∇L|"),
        ):
            values = [max(getattr(checks, key), 1e-17) for checks in self.checks]
            errors.bar(x + shift, values, width=0.38, label=label)
        errors.set_yscale("log")
        errors.set_xticks(x, names, fontsize=8, rotation=15)
        errors.set_title(f"(a) reduced vs full at {c.points} random points", fontsize=10)
        _legend_below(errors, ncol=1)
        for i, name in enumerate("ewab"):
            color = f"C{i}"
            coords.plot(run.times, run.full[:, i], color=color, label=f"{name}, full (projected)")
            coords.plot(run.times, run.reduced[:, i], "--", color=color, label=f"{name}, reduced")
        coords.set_xlabel("flow time")
        coords.set_title(
            f"(b) full GD (η = {run.lr:g}, N = {run.length}) vs reduced flow, induced metric",
            fontsize=10,
        )
        _legend_below(coords, ncol=4)
        losses.plot(run.times, run.full_loss, color="C3", label="full (exact loss)")
        losses.plot(run.times, run.reduced_loss, "--", color="black", label="reduced")
        draw_reference_losses(losses, self.references)
        losses.set_xlabel("flow time")
        losses.set_ylabel("loss (nats)")
        losses.set_title(f"(c) the losses, max deviation {run.max_deviation:.3g}", fontsize=10)
        _legend_below(losses, ncol=2)
        fig.suptitle(f"reduced vs full Markov transformer, p = {c.p:g}, q = {c.q:g}", fontsize=11)
        return fig

    def metadata(self) -> dict[str, Any]:
        """What ``gradflow compare`` writes as JSON: settings, one record per model, the
        dynamics record."""
        c = self.config
        return {
            "p": c.p,
            "q": c.q,
            "seq_len": c.length,
            "d": c.d,
            "models": [_model_record(checks) for checks in self.checks],
            "dynamics": self._dynamics_record(),
            "spectra": list(self.spectra),
        }

    def _dynamics_record(self) -> dict[str, Any]:
        run = self.dynamics
        return {
            "theta0": np.asarray(self.config.theta0),
            "lr": run.lr,
            "flow_time": float(run.times[-1]),
            "max_deviation": run.max_deviation,
            "first_order_rate": run.first_order_rate,
            "metric_diagonal": np.diag(run.metric),
            "full_endpoint": run.full[-1],
            "reduced_endpoint": run.reduced[-1],
            "full_loss": float(run.full_loss[-1]),
            "reduced_loss": float(run.reduced_loss[-1]),
            **self.references,
        }

    def text(self) -> str:
        """The embedding checks as a table, the parameter groups, the dynamics check."""
        c, ref = self.config, self.references
        records = [_model_record(checks) for checks in self.checks]
        rows = [
            [
                r["model"],
                r["points"],
                f"{r['value_error']:.1e}",
                f"{r['gradient_error']:.1e}",
                f"{r['off_manifold_median']:.3f}",
                f"{r['off_manifold_max']:.3f}",
                f"{r['outside_rank_one_family']:.1e}",
            ]
            for r in records
        ]
        header = ["model", "points", "max |ΔL|", "max |Δ∇L|", "off median", "off max", "off family"]
        shares = [
            [r["model"], *(f"{v:.2f}" for v in r["off_manifold_share"].values())] for r in records
        ]
        share_header = ["model", *records[0]["off_manifold_share"]] if records else ["model"]
        groups = "\n".join(f"  {k}: {', '.join(v)}" for k, v in GROUPS.items())
        d = self._dynamics_record()
        return "\n".join(
            [
                f"reduced vs full, p = {c.p:g}, q = {c.q:g}: exact loss of the full transformer",
                f"over all 2^{c.length} sequences, d = {c.d}, float64 (|ΔL| in nats; 'off': the",
                "off-ansatz part |(I - P)g|/|g| of the full gradient, 'family': outside the rank-one family)",
                format_table(header, rows),
                "\noff-ansatz share of the full gradient by parameter group",
                format_table(share_header, shares),
                groups,
                f"\ndynamics: gradient descent (η = {d['lr']:g}) on the exact loss, N = {c.dynamics_length},",
                f"  from embed(θ0), θ0 = ({', '.join(f'{v:g}' for v in d['theta0'])}), to flow time {d['flow_time']:g}",
                f"  reduced flow in the induced metric G = diag({', '.join(f'{v:g}' for v in d['metric_diagonal'])})",
                f"  max deviation |π(Θ(t)) - θ(t)|  {d['max_deviation']:.4g}   (initial rate {d['first_order_rate']:.4g} per unit time)",
                f"  full endpoint     ({', '.join(f'{v:.4g}' for v in d['full_endpoint'])}), loss {d['full_loss']:.6f} nats",
                f"  reduced endpoint  ({', '.join(f'{v:.4g}' for v in d['reduced_endpoint'])}), loss {d['reduced_loss']:.6f} nats",
                f"  H(π) = {ref['unigram_loss']:.6f}, entropy rate = {ref['entropy_rate']:.6f} nats",
                *index_lines(self.spectra),
            ]
        )


def _model_record(checks: EmbeddingChecks) -> dict[str, Any]:
    """One model's errors and off-manifold shares."""
    return {
        "model": checks.model,
        "points": len(checks.thetas),
        "value_error": checks.value_error,
        "gradient_error": checks.gradient_error,
        "off_manifold_median": float(np.median(checks.off_manifold)),
        "off_manifold_max": float(np.max(checks.off_manifold)),
        "off_manifold_share": {k: float(np.mean(v)) for k, v in checks.off_groups.items()},
        "outside_rank_one_family": float(np.max(checks.outside_family)),
    }


def compare(config: CompareConfig) -> CompareReport:
    """Run the embedding checks of every model and the dynamics check (module docstring)."""
    checks = []
    for name in FULL_MODELS:
        bound = MODELS[name].model().bind(p=config.p, q=config.q)
        points = random_points(bound, config.points, seed=config.seed)
        checks.append(embedding_checks(bound, points, length=config.length, d=config.d))
    bound = MODELS["canonical-attention-bias"].model().bind(p=config.p, q=config.q)
    every = max(1, config.steps // 50)
    dynamics = dynamics_check(
        bound,
        np.asarray(config.theta0),
        length=config.dynamics_length,
        d=config.d,
        lr=config.lr,
        steps=every * max(1, config.steps // every),
        every=every,
    )
    references = {k: bound.references[k] for k in ("unigram_loss", "entropy_rate")}
    spectra = ()
    if config.spectra:
        full = full_model("canonical", length=config.dynamics_length, d=config.d)
        spectra = tuple(critical_set_indices(full, config.p, config.q))
    return CompareReport(
        config=config,
        checks=tuple(checks),
        dynamics=dynamics,
        references=references,
        spectra=spectra,
    )


def _legend_below(ax: Any, ncol: int) -> None:
    """The panel's legend under its x label, clear of the curves and bars it names."""
    ax.legend(fontsize=7, ncol=ncol, loc="upper center", bbox_to_anchor=(0.5, -0.16))
