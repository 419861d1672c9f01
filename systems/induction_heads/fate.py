"""Fate map of the induction-head task: the transformer against the minimal model and its
``(a, b, v)`` reduction, over the data prior × the init scale.

In every cell of the grid (a doubly-stochastic share ``ρ`` of the training prior × an init
scale ``σ``, :class:`~gradflow.systems.induction_heads.config.ICLFateConfig`) three runs start from the
same seed:

- the two-layer attention-only transformer, trained by AdamW (the full model);
- the minimal model ``f(E) = mask(E W (M E)ᵀ) E``, trained by SGD on fresh batches;
- its reduction to ``(a, b, v)``, trained by SGD on the minimal model's own batches (each step
  the image of the minimal model's step on the batch closed under relabelling; or, with
  ``reduced_solver = "gd"``, gradient descent on a fixed sample), started at the projection of
  the minimal model's start.

Every weight starts with Gaussian noise of standard deviation ``σ`` around the model's start:
for the minimal model ``W = 0``, ``v = 0`` (the paper's), or with ``start = "unigram"``
``W = b* 11ᵀ``, the unigram stage already fitted by the unigram coordinate alone
(:func:`gradflow.systems.induction_heads.drive.unigram_point`).

Each run is summed up by its :class:`~gradflow.systems.induction_heads.phases.Stages` (the order of the
nearest strategies, the final one, the time in the uniform and unigram stages, the transition
times), all measured on one Dirichlet evaluation batch (``evaluate_on = "training"``: on
each run's training prior).  Four comparisons per cell:

- ``reduced vs transformer`` and ``minimal vs transformer``: the stage order and the final
  stage equal (the paper's claim: uniform → unigram → bigram; with ``start = "unigram"`` the
  orders from the unigram stage on);
- ``reduced vs minimal``: the same, the reduction's own check;
- ``ρ-response``: at every share above the smallest, whether the transition comes sooner,
  later or about the same (within :data:`SAME_BAND` or one evaluation interval, whichever is
  larger: what one run can resolve) than at the smallest share, reduced
  against transformer: the paper's finding that removing the unigram signal shortens the
  plateau.

The transition-time ratio reduced/transformer (median, quartiles, extremes) is reported
beside the agreement: SGD steps against AdamW steps have no common unit, so what a reduction
can predict is how the ratio stays put across the grid, not its value.

Each run is one cell of :func:`gradflow.run_cells` (module-level :func:`run_cell`, plain-dict
cells), so a map resumes from its checkpoint and runs wherever ``run_cells`` runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gradflow import run_cells
from gradflow.systems.fate import FateCell, FateResult

from .config import ICLFateConfig
from .phases import Stages, stages

__all__ = [
    "MODELS",
    "SAME_BAND",
    "ICLFateMap",
    "fate_map",
    "reason",
    "response",
    "run_cell",
]

MODELS = ("transformer", "minimal", "reduced")
"""The runs of every cell: the full model, the minimal model, its reduction."""
SAME_BAND = 0.05
"""Relative change of the transition step within which a share's run counts as ``same`` (or
one evaluation interval, if that is larger)."""
OFF_FAMILY_SHARE = 0.1
"""Share of ``‖W‖_F`` off the family ``aI + b11ᵀ`` above which a minimal run has left the
reduction (:func:`reason`)."""


def run_cell(cell: dict[str, Any]) -> dict[str, np.ndarray]:
    """Train one run of the map: ``cell`` holds ``model``, ``rho``, ``sigma``, ``seed`` and the
    map's configuration as a dict (``config``).

    Returns:
        ``steps`` and ``distance_mean`` (``(n,)``, ``(n, 3)``, nats), ``test_mean``, ``theta``
        (``(n, 3)``: ``a, b, v_1``; NaN for the transformer), ``off_family`` (``(n,)``:
        ``‖W - proj W‖_F / ‖W‖_F`` of the minimal model; 0 for the reduction, NaN for the
        transformer) and ``lag1`` (``(n,)``: the transformer's layer-1 attention mass at lag 1;
        NaN for the others).
    """
    from .train import train

    config = ICLFateConfig(**cell["config"])
    spec = config.specs(cell["rho"], cell["sigma"], cell["seed"])[cell["model"]]
    if config.start == "unigram" and spec.model != "transformer":
        from .drive import unigram_point

        b_star = unigram_point(spec.prior, spec.k, spec.T, config.reduced_n, spec.seed)
        spec = dataclasses.replace(spec, b0=b_star)
    history = train(spec, progress=False)
    n = len(history.steps)
    theta = history.traces.get("theta")
    theta = np.full((n, 3), np.nan) if theta is None else np.asarray(theta)[:, :3]
    if cell["model"] == "minimal":
        off = np.asarray(history.traces["off_family"]) / _family_norm(theta, config.k)
    else:
        off = np.full(n, np.nan if cell["model"] == "transformer" else 0.0)
    lags = history.traces.get("lag_profile")
    return {
        "steps": history.steps,
        "distance_mean": history.distance_mean,
        "test_mean": history.test_mean,
        "theta": theta,
        "off_family": off,
        "lag1": np.full(n, np.nan) if lags is None else np.asarray(lags)[:, 1],
    }


def _family_norm(theta: np.ndarray, k: int) -> np.ndarray:
    """``‖aI + b11ᵀ‖_F = √(k a² + 2k a b + k² b²)`` (``θ = (a, b, …)``), floored at the smallest
    positive float so that a zero start gives a ratio of 0 or infinity, never NaN."""
    a, b = theta[:, 0], theta[:, 1]
    return np.maximum(np.sqrt(np.maximum(k * a**2 + 2 * k * a * b + k**2 * b**2, 0.0)), 1e-300)


def response(
    t: float | None, t_ref: float | None, interval: float = 0.0, band: float = SAME_BAND
) -> str:
    """How the transition step ``t`` compares with ``t_ref`` (the smallest share's):
    ``sooner``, ``later``, ``same`` (within ``max(band · t_ref, interval)``, ``interval`` the
    run's evaluation interval), or ``censored`` when either run never settled on bigram."""
    if t is None or t_ref is None:
        return "censored"
    if abs(t - t_ref) <= max(band * t_ref, interval):
        return "same"
    return "sooner" if t < t_ref else "later"


def reason(group: str, reduced: Stages, full: Stages, off_family: float, solver: str) -> str:
    """The :data:`~gradflow.systems.fate.REASONS` key of a disagreement in ``group``.

    - a run (either) that never settled on bigram within its budget: ``slow-corner``;
    - ``reduced vs minimal``: ``off-reduction`` where the reduction is trained by SGD on the
      minimal model's batches (``solver = "sgd"``: the two differ only by the minimal model's
      gradient off the family) or where the minimal run's ``W`` was off the family by more than
      :data:`OFF_FAMILY_SHARE` of its norm at its transition; else ``assumption`` (the
      reduction replaces the population loss by a fixed sample);
    - ``ρ-response``: ``assumption``.  From ``W = 0`` the minimal model learns the unigram
      stage partly through its induction coordinate ``a`` (at ``v = 0`` its induction feature
      is a product of unigram frequencies, so the unigram signal pushes ``a`` off 0,
      :func:`gradflow.systems.induction_heads.reduction.leading_drive`), which seeds its escape; removing
      the unigram signal removes that seed.  A model that learns the unigram stage with
      another circuit sits in it as in a trap, which the unigram signal deepens.  The
      reduction assumes the first; ``start = "unigram"`` (``b`` alone fits the unigram stage)
      is the second (docs/systems/induction-heads.md);
    - otherwise ``unexplained``.
    """
    if reduced.transition_step is None or full.transition_step is None:
        return "slow-corner"
    if group == "reduced vs minimal":
        drifted = solver == "sgd" or off_family > OFF_FAMILY_SHARE
        return "off-reduction" if drifted else "assumption"
    if group == "ρ-response":
        return "assumption"
    return "unexplained"


@dataclass(frozen=True)
class ICLFateMap(FateResult):
    """The induction-head fate map: every run's history and stages, the comparisons.

    Attributes:
        config: what was run.
        runs: per ``(model, ρ, σ, seed)`` the arrays of :func:`run_cell`.
    """

    config: ICLFateConfig
    runs: dict[tuple[str, float, float, int], dict[str, np.ndarray]]

    @property
    def system(self) -> str:
        return "induction-heads"

    @property
    def axes(self) -> tuple[str, ...]:
        return ("rho", "sigma")

    def stages(self, model: str, rho: float, sigma: float, seed: int) -> Stages:
        """The :class:`Stages` of one run."""
        run = self.runs[(model, rho, sigma, seed)]
        return stages(run["steps"], run["distance_mean"])

    def compared(self, order: tuple[str, ...]) -> tuple[str, ...]:
        """The part of a stage order that is compared: all of it, or with ``start =
        "unigram"`` (the minimal model and the reduction start in the unigram stage) from the
        first unigram stage on, where there is one."""
        if self.config.start == "unigram" and "unigram" in order:
            return order[order.index("unigram") :]
        return order

    def interval(self, model: str, rho: float, sigma: float, seed: int) -> float:
        """The evaluation interval of one run, steps."""
        return float(np.diff(self.runs[(model, rho, sigma, seed)]["steps"][:2])[0])

    def off_family(self, rho: float, sigma: float, seed: int) -> float:
        """The minimal run's share of ``W`` off the family ``aI + b11ᵀ`` at its transition (at
        its end if it never settled on bigram): where its timing is decided."""
        run = self.runs[("minimal", rho, sigma, seed)]
        t = self.stages("minimal", rho, sigma, seed).transition_step
        at = -1 if t is None else int(np.argmin(np.abs(run["steps"] - t)))
        return float(run["off_family"][at])

    def _points(self) -> Iterator[tuple[float, float, int]]:
        c = self.config
        for sigma in c.scales:
            for rho in c.shares:
                for seed in range(c.seeds):
                    yield rho, sigma, seed

    def cells(self) -> list[FateCell]:
        out = []
        rho0 = min(self.config.shares)
        solver = self.config.reduced_solver
        for rho, sigma, seed in self._points():
            coords = {"rho": rho, "sigma": sigma, "seed": seed}
            st = {m: self.stages(m, rho, sigma, seed) for m in MODELS}
            off = self.off_family(rho, sigma, seed)
            for reduced, full in (
                ("reduced", "transformer"),
                ("minimal", "transformer"),
                ("reduced", "minimal"),
            ):
                r, f = st[reduced], st[full]
                r_order, f_order = (self.compared(x.order) for x in (r, f))
                agree = r_order == f_order and r.final == f.final
                group = f"{reduced} vs {full}"
                out.append(
                    FateCell(
                        coords,
                        "→".join(r_order),
                        "→".join(f_order),
                        agree,
                        group,
                        None if agree else reason(group, r, f, off, solver),
                        _times(r, f),
                    )
                )
            if rho != rho0:
                ref = {m: self.stages(m, rho0, sigma, seed) for m in ("reduced", "transformer")}
                said = {
                    m: response(
                        st[m].transition_step,
                        ref[m].transition_step,
                        self.interval(m, rho, sigma, seed),
                    )
                    for m in ("reduced", "transformer")
                }
                censored = "censored" in said.values()
                agree = said["reduced"] == said["transformer"] and not censored
                out.append(
                    FateCell(
                        coords,
                        said["reduced"],
                        said["transformer"],
                        agree,
                        "ρ-response",
                        None
                        if agree
                        else "slow-corner"
                        if censored
                        else reason("ρ-response", st["reduced"], st["transformer"], off, solver),
                        f"transition at ρ = {rho0:g} → {rho:g}: reduced "
                        f"{_shown(ref['reduced'].transition_step)} → "
                        f"{_shown(st['reduced'].transition_step)}, transformer "
                        f"{_shown(ref['transformer'].transition_step)} → "
                        f"{_shown(st['transformer'].transition_step)}",
                    )
                )
        return out

    def csv_columns(self) -> dict[str, Sequence[Any]]:
        """Per comparison the transition step of its two runs (``reduced_transition``: the
        reduction or the minimal model, ``full_transition``: the transformer or the minimal
        model; the ρ-response compares the reduction's with the transformer's), ``nan`` where a
        run never settled on bigram."""
        columns: dict[str, list[float]] = {"reduced_transition": [], "full_transition": []}
        for cell in self.cells():
            left, _, right = cell.group.partition(" vs ")
            point = (cell.coords["rho"], cell.coords["sigma"], int(cell.coords["seed"]))
            for column, model in zip(
                columns, (left, right) if right else ("reduced", "transformer")
            ):
                step = self.stages(model, *point).transition_step
                columns[column].append(float("nan") if step is None else float(step))
        return columns

    def transitions(self, model: str) -> np.ndarray:
        """Transition steps, shape ``(scales, shares, seeds)``, NaN where a run never settled
        on bigram."""
        c = self.config
        out = np.full((len(c.scales), len(c.shares), c.seeds), np.nan)
        for rho, sigma, seed in self._points():
            t = self.stages(model, rho, sigma, seed).transition_step
            if t is not None:
                out[c.scales.index(sigma), c.shares.index(rho), seed] = t
        return out

    def ratios(self, model: str = "reduced") -> dict[str, float | int]:
        """The transition-step ratio ``model``/transformer over the runs where both settled:
        median, quartiles, extremes, count (NaN without any)."""
        r = (self.transitions(model) / self.transitions("transformer")).ravel()
        r = r[np.isfinite(r)]
        if not r.size:
            nan = float("nan")
            return {"median": nan, "q1": nan, "q3": nan, "min": nan, "max": nan, "runs": 0}
        q1, med, q3 = np.percentile(r, [25, 50, 75])
        return {
            "median": float(med),
            "q1": float(q1),
            "q3": float(q3),
            "min": float(r.min()),
            "max": float(r.max()),
            "runs": int(r.size),
        }

    def arrays(self) -> dict[str, np.ndarray]:
        c = self.config
        out: dict[str, np.ndarray] = {
            "shares": np.asarray(c.shares),
            "scales": np.asarray(c.scales),
        }
        for model in MODELS:
            out[f"{model}_transition"] = self.transitions(model)
            orders = np.empty((len(c.scales), len(c.shares), c.seeds), dtype=object)
            for rho, sigma, seed in self._points():
                st = self.stages(model, rho, sigma, seed)
                orders[c.scales.index(sigma), c.shares.index(rho), seed] = st.outcome
            out[f"{model}_order"] = orders.astype(str)
        for (model, rho, sigma, seed), run in self.runs.items():
            at = f"{model}_rho{c.shares.index(rho)}_sigma{c.scales.index(sigma)}_seed{seed}_"
            out.update({at + k: v for k, v in run.items()})
        return out

    def details(self) -> dict[str, Any]:
        c = self.config
        runs = []
        for rho, sigma, seed in self._points():
            for model in MODELS:
                st = self.stages(model, rho, sigma, seed)
                runs.append(
                    {
                        "model": model,
                        "rho": rho,
                        "sigma": sigma,
                        "seed": seed,
                        "order": list(st.order),
                        "final": st.final,
                        "uniform_time": st.uniform_time,
                        "unigram_time": st.unigram_time,
                        "unigram_onset": st.unigram_onset,
                        "transition_step": st.transition_step,
                    }
                )
        return {
            "config": dataclasses.asdict(c),
            "trainers": {"transformer": "adamw", "minimal": "sgd", "reduced": c.reduced_solver},
            "transition_ratio": {m: self.ratios(m) for m in ("reduced", "minimal")},
            "agreement_over_draws": self.agreement_spread(),
            "runs": runs,
        }

    def agreement_spread(self) -> dict[str, dict[str, Any]] | None:
        """Per comparison, the agreement of each seed with its mean and spread
        (:func:`~gradflow.systems.fate_spread.agreement_over_draws`); ``None`` for one seed."""
        if self.config.seeds == 1:
            return None
        from ..fate_spread import agreement_over_draws

        return agreement_over_draws(self.cells(), "seed")

    def detail_lines(self) -> list[str]:
        from ..fate_spread import spread_line

        lines = [spread_line(g, s) for g, s in (self.agreement_spread() or {}).items()]
        for model in ("reduced", "minimal"):
            r = self.ratios(model)
            lines.append(
                f"transition step {model}/transformer: median {r['median']:.3g} "
                f"(quartiles {r['q1']:.3g}–{r['q3']:.3g}, range {r['min']:.3g}–{r['max']:.3g}, "
                f"{r['runs']} runs)"
                if r["runs"]
                else f"transition step {model}/transformer: no pair of runs both settled on "
                "bigram within their budgets (more steps: --transformer-steps, --minimal-steps)"
            )
        lines.append("transition step per run (σ rows, ρ columns; — never settled on bigram):")
        c = self.config
        for model in MODELS:
            t = self.transitions(model)
            for i, sigma in enumerate(c.scales):
                row = ", ".join(
                    f"ρ = {rho:g}: " + "/".join(_shown(v) for v in t[i, j])
                    for j, rho in enumerate(c.shares)
                )
                lines.append(f"  {model:11s} σ = {sigma:g}: {row}")
        return lines

    def figure(self) -> Any:
        from matplotlib.figure import Figure

        from .fate_figure import SIZE, draw

        fig = Figure(figsize=SIZE, layout="constrained")
        draw(self, fig)
        return fig


def _shown(t: float | None) -> str:
    return "—" if t is None or not np.isfinite(t) else f"{t:g}"


def _times(reduced: Stages, full: Stages) -> str:
    """One line: each run's time in the uniform and unigram stages and its transition."""

    def one(st: Stages) -> str:
        return (
            f"uniform {_shown(st.uniform_time)}, unigram {_shown(st.unigram_time)}, "
            f"transition {_shown(st.transition_step)}"
        )

    return f"reduced: {one(reduced)}; full: {one(full)}"


def _cell_list(config: ICLFateConfig) -> tuple[list[dict[str, Any]], list[str]]:
    """The map's runs as plain-dict cells, and their checkpoint names."""
    settings = dataclasses.asdict(config)
    cells, names = [], []
    for i, sigma in enumerate(config.scales):
        for j, rho in enumerate(config.shares):
            for seed in range(config.seeds):
                for model in MODELS:
                    cells.append(
                        {
                            "model": model,
                            "rho": rho,
                            "sigma": sigma,
                            "seed": seed,
                            "config": settings,
                        }
                    )
                    names.append(f"{model}_rho{j}_sigma{i}_seed{seed}")
    return cells, names


def fate_map(
    config: ICLFateConfig, checkpoint: Path | str | None = None, **cell_options: Any
) -> ICLFateMap:
    """Run the map (module docstring): every run a cell of :func:`gradflow.run_cells`
    (``cell_options`` go to it).

    Raises:
        GradflowError: a checkpoint folder of another map; a run whose predictions stopped
            being finite.
    """
    cells, names = _cell_list(config)
    results = run_cells(
        run_cell,
        cells,
        names=names,
        checkpoint=checkpoint,
        manifest={"system": "induction-heads", **dataclasses.asdict(config)},
        desc="induction-heads fate",
        work=[config.run_seconds(c["model"]) for c in cells],
        **cell_options,
    )
    runs = {(c["model"], c["rho"], c["sigma"], c["seed"]): r for c, r in zip(cells, results)}
    return ICLFateMap(config, runs)
