"""Fate over a grid: where full transformer training ends, against the reduced basin map.

From each point ``θ0 = (e0, w0)`` of a grid (``a0 = 0`` for the model with attention), the full
single-layer transformer starts at ``embed(θ0)`` plus Gaussian noise of standard deviation ``σ``
on every weight, and follows the gradient flow of its exact population loss (all ``2^N`` input
sequences enumerated, float64).  The loss has a kink wherever an input of the FFN's ReLU is 0
at some prefix, and runs meet such kinks and slide along them: a run without noise is
integrated by :func:`gradflow.slide` (Tsit5 on each smooth piece, Filippov's sliding motion on
the kinks, the switching surfaces located), a run with noise by gradient descent with handovers
to it (:mod:`gradflow.systems.markov.fate_runs`).  Each run stops when its fate is decided:

- ``global``: the loss fell below ``H_rate + ½ (H(π) - H_rate)``.  The loss never increases
  along a gradient flow and every point of the reduced local set (``e = 0``) has loss ``H(π)``,
  so such a run can no longer end there; its loss heads for the entropy rate.
- ``local``: a steady state (the least subgradient ``≤ gtol``) at loss ``H(π)`` (the unigram
  predictor).
- ``other``: a steady state at any other loss; ``diverged``; ``undecided``: the flow-time
  budget or the step budget ran out first.
- ``kink``: the step budget ran out with the run on a kink.

Each fate is compared with the reduced model's prediction at ``θ0``: the fate of the reduced
gradient flow from ``θ0`` by the same rule (its basin), in the Euclidean metric (the paper's
portrait) and in the metric the embedding induces, ``G = JᵀJ``
(:mod:`gradflow.systems.markov.full_model`): one :class:`~gradflow.systems.fate.FateCell` per run and
metric, grouped by metric and ``σ`` (``"induced σ=0.01"``).  A disagreement gets the first
reason that holds, in this order (:data:`~gradflow.systems.fate.REASONS`):

1. ``slow-corner``: the full run is ``undecided`` or ``kink``: its outcome is not known.
2. ``metric``: the other metric's reduced prediction is the full fate.  If the embedded family
   were invariant, the full flow projected to ``θ`` would be the reduced flow in the induced
   metric exactly (``Jᵀ∇L_full = ∇L``), so where the Euclidean map errs and the induced one
   does not, the metric is the difference.
3. ``full-saddle``: the run went ``global`` and its projection climbed the reduced loss after
   its least value on the path by more than :data:`~gradflow.systems.markov.departure.RISE_SHARE`
   of ``H(π) - H_rate`` (a reduced gradient flow never raises its loss, in any metric: the
   reduced dynamics stopped describing the run there), and its departure at that turn lies in
   the unstable space of the full model's saddle at the reduced local set beside it, ``e = 0``
   at the turn's ``w`` (cosine ≥ :data:`~gradflow.systems.markov.departure.SADDLE_COS` with
   the eigenvectors of the full Hessian's negative eigenvalues there).
4. ``off-reduction``: the projection climbed the reduced loss so, but not along that saddle.
5. ``assumption``: the run started farther than :data:`OFF_START` from the reduced family,
   which the reduction assumes it starts on: σ = 0.1 on every weight puts the median start of
   the default grid half the weights' norm away.
6. ``unexplained``.

The evidence is read off the recorded path of each run without noise
(:func:`~gradflow.systems.markov.departure.run_evidence`): where the reduced loss of its
projection is least, how far it rose after, the distance from the family along the way, the
full saddle's unstable space, and where the projection crosses the reduced basin boundary (the
Euclidean one in closed form, the induced one by the reduced flow's fate along the path).  A
global run's stopping time is the interpolated crossing of the decision level.  A run with
noise whose fate differs from a prediction is replayed, recorded, by the same descent
(:func:`~gradflow.systems.markov.fate_runs.recorded_paths`; its stop time stays its own).  The
relative distance from the family, ``‖W − embed(project W)‖ / ‖W‖``, is reported for every
run, agreeing or not: the ``(e, w)`` family is not invariant (most of the full gradient on it
points off its tangent), so every run that moves leaves it.

The runs go through :func:`gradflow.run_cells`: without noise one cell per row of the grid
(``e0``; a dozen runs, seconds each), with noise one cell per ``(σ, seed)`` (the whole grid,
its runs descended one at a time); the reduced predictions in the two metrics are two cells of
their own.  A checkpoint folder keeps every finished cell and a rerun resumes.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import numpy as np

from gradflow import FlowOptions, Outcome, flow_endpoints, in_metric, run_cells, slide
from gradflow.systems.fate import FateCell, FateResult, plane_cells, run_columns
from gradflow.systems.fate_markers import draw_fates

from .config import FateConfig
from .costs import cost_line, run_work
from .departure import (
    EVIDENCE,
    LABELLED,
    RISE_SHARE,
    SADDLE_COS,
    euclidean_basin,
    evidence_ranges,
    evidence_text,
    run_evidence,
)
from .fate_runs import DESCENT_SHARE, descended, descent_options, full_options, recorded_paths
from .full_landscape import FullLandscape, embed_batch, off_family, project_batch
from .full_spectrum import critical_set_indices, index_lines

__all__ = [
    "FATES",
    "FateConfig",
    "FateMap",
    "FullLandscape",
    "FullRuns",
    "ReducedCell",
    "cost_line",
    "descent_options",
    "fate_map",
    "full_options",
    "full_runs",
    "reduced_cell",
]

FATES = ("global", "local", "other", "diverged", "undecided", "kink")
"""Fates of a full run, in the order of their codes."""
METRICS = ("euclidean", "induced")
"""The metrics of the reduced predictions."""
DECISION_SHARE = 0.5
"""A run is decided ``global`` once its loss is below ``H_rate + DECISION_SHARE·(H(π) - H_rate)``."""
LOCAL_TOL = 1e-6
"""Relative distance ``|L - H(π)| / (H(π) - H_rate)`` within which a steady state is ``local``."""
OFF_START = 0.2
"""The greatest relative distance of a start from the reduced family at which the reduced
prediction is held to apply (σ = 0.01 on the default grid: 0.02–0.11; σ = 0.1: 0.22–0.77)."""
SLIDE_GRADIENTS = 7
"""Full gradients per step of :func:`gradflow.slide` (Tsit5's six stages and the probe)."""


def references(config: FateConfig) -> dict[str, float]:
    """``unigram_loss`` ``H(π)`` and ``entropy_rate`` at the configuration's ``(p, q)``, nats."""
    bound = config.full().reduced.bind(p=config.p, q=config.q)
    return {k: float(bound.references[k]) for k in ("unigram_loss", "entropy_rate")}


@dataclass(frozen=True)
class ReducedCell:
    """A cell of the map: the reduced model's predictions in one metric (``"euclidean"``,
    ``"induced"``)."""

    config: FateConfig
    metric: str


def reduced_cell(cell: ReducedCell) -> dict[str, np.ndarray]:
    """The reduced model's prediction at every grid point, ``{"labels": (grid, grid)
    strings}`` (row = ``e``): the fate of its gradient flow in ``cell.metric`` by the full
    runs' rule (:data:`FATES`: decided below the same loss level, steady at ``H(π)``, …),
    integrated from the grid points (Tsit5, the engine's default tolerances)."""
    config = cell.config
    full = config.full()
    thetas = config.region().points().reshape(-1, full.reduced.dim)
    labels = reduced_fates(config, cell.metric, thetas)
    return {"labels": labels.reshape(config.grid, config.grid)}


def reduced_fates(config: FateConfig, metric: str, thetas: np.ndarray) -> np.ndarray:
    """The reduced model's fate (names of :data:`FATES`) from each point of ``thetas`` (shape
    ``(m, dim)``) in ``metric`` (``"euclidean"``, ``"induced"``), by the full runs' rule:
    Tsit5 at the engine's default tolerances, decided below the same loss level."""
    full = config.full()
    bound = full.reduced.bind(p=config.p, q=config.q)
    landscape = bound if metric == "euclidean" else in_metric(bound, full.metric, name="induced")
    refs = references(config)
    level = refs["entropy_rate"] + DECISION_SHARE * (refs["unigram_loss"] - refs["entropy_rate"])
    ends = flow_endpoints(
        landscape, thetas, FlowOptions(solver="Tsit5"), decide_below=level, progress=False
    )
    losses = bound.loss(ends.endpoints)
    fates = [_fate(Outcome(int(s)), loss, refs, level) for s, loss in zip(ends.status, losses)]
    return np.asarray(FATES)[fates]


@dataclass(frozen=True)
class FullRuns:
    """A cell of the map: the full runs of the grid rows ``rows`` (``e0 = es[row]``, every
    ``w0``) at noise ``σ`` (draw ``seed``)."""

    config: FateConfig
    sigma: float
    seed: int
    rows: tuple[int, ...]

    @property
    def name(self) -> str:
        """The cell's checkpoint name: ``sigma0_seed0_row003``, or ``sigma0.01_seed1`` for the
        whole grid."""
        whole = self.rows == tuple(range(self.config.grid))
        rows = "" if whole else "_row" + "-".join(f"{r:03d}" for r in self.rows)
        return f"sigma{self.sigma:g}_seed{self.seed}{rows}"


def full_runs(cell: FullRuns) -> dict[str, np.ndarray]:
    """Integrate the runs of the cell's rows (module docstring), row-major: per run its fate
    code (into :data:`FATES`), flow time, final loss (nats), steps of :func:`gradflow.slide`,
    steps of gradient descent, flow time spent sliding on a kink, projected endpoint
    ``(dim,)``, and relative distance from the reduced family at the start and the end."""
    config, n = cell.config, cell.config.grid
    full = config.full()
    bound = full.reduced.bind(p=config.p, q=config.q)
    refs = references(config)
    thetas = config.region().points().reshape(-1, full.reduced.dim)
    base = np.asarray(embed_batch(full)(jnp.asarray(thetas), bound.h))
    noise = np.random.default_rng([cell.seed, n]).standard_normal(base.shape)
    starts = (
        (base + cell.sigma * noise).reshape(n, n, -1)[list(cell.rows)].reshape(-1, base.shape[1])
    )
    gap = refs["unigram_loss"] - refs["entropy_rate"]
    level = refs["entropy_rate"] + DECISION_SHARE * gap
    land = FullLandscape(full, bound.h)
    if cell.sigma > 0:
        runs, descent = descended(land, starts, config, level)
    else:
        descent = np.zeros(len(starts), dtype=np.int64)
        options = full_options(config)
        runs = [
            slide(land.kinks, start, bound.h, options, decide_below=level, record=True)
            for start in starts
        ]
    ends = np.stack([r.endpoint for r in runs])
    losses = land.loss(ends)
    fates = []
    for run, loss in zip(runs, losses):
        fates.append(_fate(run.status, loss, refs, level))
    evidence = {k: np.full(len(runs), np.nan) for k in EVIDENCE}
    labels, names = _path_labels(config), [FATES[c] for c in fates]
    clean = base.reshape(n, n, -1)[list(cell.rows)].reshape(starts.shape)
    for i, path in recorded_paths(land, runs, starts, clean, names, labels, config):
        for k, v in run_evidence(land, path, level, names[i], labels, cell.sigma == 0).items():
            evidence[k][i] = v
    off = off_family(full)
    return {
        "fates": np.asarray(fates),
        "times": np.where(np.isnan(evidence["stop"]), [r.time for r in runs], evidence["stop"]),
        "losses": losses,
        "steps": np.asarray([r.steps for r in runs]),
        "descent": descent,
        "sliding": np.asarray([r.sliding_time for r in runs]),
        "projected": np.asarray(project_batch(full)(jnp.asarray(ends))),
        "off_start": np.asarray(off(jnp.asarray(starts), bound.h)),
        "off_end": np.asarray(off(jnp.asarray(ends), bound.h)),
        **evidence,
    }


def _path_labels(config: FateConfig) -> dict[str, Callable[[np.ndarray], np.ndarray]]:
    """Per metric, the reduced basin label of full states (a batch ``(m, P)``) read at their
    projection: in the Euclidean metric of the canonical model the closed form
    (:func:`~gradflow.systems.markov.departure.euclidean_basin`), else the reduced flow's fate
    (:func:`reduced_fates`)."""
    full = config.full()
    project = project_batch(full)

    def flows(metric: str) -> Callable[[np.ndarray], np.ndarray]:
        def labels(ys: np.ndarray) -> np.ndarray:
            # one batch shape (LABELLED rows), so the reduced flow is compiled once
            theta = np.asarray(project(jnp.asarray(ys)))
            padded = np.concatenate([theta, np.repeat(theta[-1:], LABELLED - len(theta), 0)])
            return reduced_fates(config, metric, padded)[: len(theta)]

        return labels

    def closed(ys: np.ndarray) -> np.ndarray:
        theta = np.asarray(project(jnp.asarray(ys)))
        return euclidean_basin(theta[:, 0], theta[:, 1], config.p, config.q)

    euclidean = closed if config.model == "canonical" else flows("euclidean")
    return {"euclidean": euclidean, "induced": flows("induced")}


def _fate(status: Outcome, loss: float, refs: dict[str, float], level: float) -> int:
    """The fate code of a run that stopped with ``status`` at ``loss``."""
    gap = refs["unigram_loss"] - refs["entropy_rate"]
    if status is Outcome.GLOBAL_MIN or loss < level:
        name = "global"
    elif status is Outcome.CONVERGED:
        name = "local" if abs(loss - refs["unigram_loss"]) <= LOCAL_TOL * gap else "other"
    elif status is Outcome.DIVERGED:
        name = "diverged"
    elif status is Outcome.NON_SMOOTH:
        name = "kink"
    else:
        name = "undecided"
    return FATES.index(name)


@dataclass(frozen=True)
class SpectraCell:
    """A cell of the map: the Morse indices of the reduced critical sets in the full model."""

    config: FateConfig


def spectra_cell(cell: SpectraCell) -> dict[str, np.ndarray]:
    """:func:`~gradflow.systems.markov.full_spectrum.critical_set_indices` as JSON text."""
    config = cell.config
    records = critical_set_indices(config.full(), config.p, config.q)
    return {"json": np.asarray(json.dumps(records))}


@dataclass(frozen=True)
class FateMap(FateResult):
    """Full fates on the grid against the reduced predictions.

    Attributes:
        config: what was run.
        ws, es: grid coordinates, shapes ``(n,)`` (``w`` on x, ``e`` on y).
        runs: ``(σ, seed)`` per run batch, in the order of the arrays' first axis.
        fates: codes into :data:`FATES`, shape ``(R, n, n)`` (row = e).
        times: flow time at which each run stopped, shape ``(R, n, n)``.
        losses: final full loss, nats, shape ``(R, n, n)``.
        steps: steps of :func:`gradflow.slide` in each run, accepted, rejected and locating a
            kink, shape ``(R, n, n)`` (every step evaluates the full gradient seven times).
        descent: gradient-descent steps of each run (one full gradient each; 0 without
            noise), shape ``(R, n, n)``.
        sliding: flow time each run spent sliding along a kink, shape ``(R, n, n)``.
        projected: final weights projected to reduced coordinates, shape ``(R, n, n, dim)``.
        off_start, off_end: relative distance of the weights from the reduced family at the
            start and the end of each run, shape ``(R, n, n)``.
        reduced: per metric (``"euclidean"``, ``"induced"``) the predicted fate per grid point
            (:func:`reduced_cell`), string arrays of shape ``(n, n)``.
        references: ``unigram_loss`` ``H(π)`` and ``entropy_rate``, nats.
        spectra: with ``config.spectra``, per reduced critical set its Morse index in the
            reduced and in the full model (:func:`~gradflow.systems.markov.full_spectrum.critical_set_indices`), else empty.
        evidence: where each run leaves the reduced prediction
            (:func:`~gradflow.systems.markov.departure.run_evidence`), per key of
            :data:`~gradflow.systems.markov.departure.EVIDENCE` shape ``(R, n, n)``; ``nan`` for
            a run with noise that agrees with both predictions (not recorded).
    """

    config: FateConfig
    ws: np.ndarray
    es: np.ndarray
    runs: tuple[tuple[float, int], ...]
    fates: np.ndarray
    times: np.ndarray
    losses: np.ndarray
    steps: np.ndarray
    descent: np.ndarray
    sliding: np.ndarray
    projected: np.ndarray
    off_start: np.ndarray
    off_end: np.ndarray
    reduced: dict[str, np.ndarray]
    references: dict[str, float]
    spectra: tuple[dict[str, Any], ...] = ()
    evidence: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)

    @property
    def system(self) -> str:
        return self.config.model

    @property
    def axes(self) -> tuple[str, ...]:
        return ("e0", "w0", "sigma", "seed")

    def fate_names(self) -> np.ndarray:
        """:attr:`fates` as strings."""
        return np.asarray(FATES)[self.fates]

    @functools.cached_property
    def _cells(self) -> tuple[FateCell, ...]:
        return plane_cells(
            self.fate_names(),
            self.reduced,
            self.runs,
            (("e0", self.es), ("w0", self.ws)),
            self._reason,
            self._detail,
        )

    def cells(self) -> Sequence[FateCell]:
        """Every comparison: per metric, per run batch ``(σ, seed)``, per grid point (row = e)."""
        return self._cells

    def _reason(self, r: int, i: int, j: int, other: str) -> str:
        """Why the run ``(r, i, j)`` disagrees (the rules of the module docstring)."""
        full = FATES[self.fates[r, i, j]]
        if full in ("undecided", "kink"):
            return "slow-corner"
        if full == other:
            return "metric"
        gap = self.references["unigram_loss"] - self.references["entropy_rate"]
        rise = self._evidence("rise", r, i, j)
        if rise > RISE_SHARE * gap:
            saddle = self._evidence("saddle_rate", r, i, j) < 0
            if full == "global" and saddle and self._evidence("saddle_cos", r, i, j) >= SADDLE_COS:
                return "full-saddle"
            return "off-reduction"
        if self.off_start[r, i, j] > OFF_START:
            return "assumption"
        return "unexplained"

    def _evidence(self, key: str, r: int, i: int, j: int) -> float:
        """One run's evidence (:attr:`evidence`), ``nan`` where it was not recorded."""
        values = self.evidence.get(key)
        return float("nan") if values is None else float(values[r, i, j])

    def _detail(self, r: int, i: int, j: int) -> str:
        text = (
            f"t = {self.times[r, i, j]:.4g}, loss {self.losses[r, i, j]:.6f}, "
            f"{self.descent[r, i, j]} descent steps, {self.steps[r, i, j]} sliding-integrator "
            f"steps, sliding {self.sliding[r, i, j]:.3g}; off the family "
            f"{self.off_start[r, i, j]:.2g} → {self.off_end[r, i, j]:.2g}"
        )
        return text + evidence_text({k: self._evidence(k, r, i, j) for k in EVIDENCE})

    def csv_columns(self) -> dict[str, Sequence[Any]]:
        """Per comparison its run's time, loss, solver steps, distances and evidence."""
        return run_columns(self.arrays(), self.fates.shape, len(METRICS), skip=("fates",))

    def counts(self) -> dict[str, int]:
        """How many runs ended in each fate."""
        return {name: int(np.sum(self.fates == k)) for k, name in enumerate(FATES)}

    def cost(self) -> dict[str, dict[str, float]]:
        """Per fate that occurred: its runs' full gradients in all (seven per step of
        :func:`gradflow.slide`, one per descent step), the most of one run, and the share of
        all the map's gradients (where the map's time goes)."""
        gradients = SLIDE_GRADIENTS * self.steps + self.descent
        total = max(int(gradients.sum()), 1)
        out = {}
        for k, name in enumerate(FATES):
            mine = gradients[self.fates == k]
            if mine.size:
                out[name] = {
                    "gradients": int(mine.sum()),
                    "most": int(mine.max()),
                    "share": float(mine.sum() / total),
                }
        return out

    def arrays(self) -> dict[str, np.ndarray]:
        """The NPZ's arrays."""
        return {
            "w": self.ws,
            "e": self.es,
            "sigma": np.array([s for s, _ in self.runs]),
            "seed": np.array([k for _, k in self.runs]),
            "fates": self.fates,
            "fate_names": np.asarray(FATES),
            "times": self.times,
            "losses": self.losses,
            "steps": self.steps,
            "descent": self.descent,
            "sliding": self.sliding,
            "projected": self.projected,
            "off_start": self.off_start,
            "off_end": self.off_end,
            **{f"reduced_{m}": v for m, v in self.reduced.items()},
            **self.evidence,
        }

    def details(self) -> dict[str, Any]:
        """Settings, references, fates counted, steps per fate, spectra."""
        return {
            "config": asdict(self.config),
            "references": self.references,
            "parameters": list(self.config.full().reduced.param_names),
            "counts": self.counts(),
            "gradients": self.cost(),
            "sliding_runs": int(np.sum(self.sliding > 0)),
            "spectra": list(self.spectra),
            "evidence": self.evidence_ranges(),
        }

    def evidence_ranges(self) -> dict[str, dict[str, list[float]]]:
        """The evidence's ranges over agreeing and mismatching runs (:func:`evidence_ranges`)."""
        return evidence_ranges(self.evidence, self.off_end, self.fate_names(), self.reduced)

    def detail_lines(self) -> list[str]:
        """Settings, references, fates counted, steps per fate, the spectra."""
        c, ref = self.config, self.references
        noise = f"; with noise gradient descent at η = {c.lr:g} to t = {DESCENT_SHARE * c.t_max:g}"
        noise = noise + " first" if max(c.sigma) > 0 else ""
        return [
            f"p = {c.p:g}, q = {c.q:g}: {c.grid} × {c.grid} grid, N = {c.length}, d = {c.d}, "
            f"{c.attention} attention, budget t = {c.t_max:g}, {c.max_steps:,} steps{noise}",
            f"H(π) = {ref['unigram_loss']:.6f}, entropy rate = {ref['entropy_rate']:.6f} nats",
            "fates: " + ", ".join(f"{k} {v}" for k, v in self.counts().items()),
            f"runs that slid along a kink: {int(np.sum(self.sliding > 0))} of {self.fates.size}",
            cost_line(self.cost()),
            *index_lines(self.spectra),
            *(
                f"recorded runs, {group}: off the family at the end "
                f"{r['off_end'][0]:.2g}–{r['off_end'][1]:.2g}"
                + (
                    f", reduced loss climbed {r['rise'][0]:.3g}–{r['rise'][1]:.3g} nats, "
                    f"departure cos with the full saddle {r['saddle_cos'][0]:.2f}–"
                    f"{r['saddle_cos'][1]:.2f}"
                    if "rise" in r
                    else ""
                )
                for group, r in self.evidence_ranges().items()
            ),
        ]

    def figure(self) -> Any:
        """One panel per ``σ`` (its first seed drawn, the agreement over all its seeds): the
        reduced prediction in the induced metric shaded, the full fates as markers,
        disagreements ringed."""
        import matplotlib.pyplot as plt

        sigmas = list(dict.fromkeys(s for s, _ in self.runs))
        fig, axes = plt.subplots(
            1, len(sigmas), figsize=(5.2 * len(sigmas), 5.0), squeeze=False, layout="constrained"
        )
        share = self.agreement()
        handles: dict[str, Any] = {}  # what any panel drew, once
        for ax, sigma in zip(axes[0], sigmas):
            r = next(k for k, (s, _) in enumerate(self.runs) if s == sigma)
            drawn = draw_fates(
                ax, self.ws, self.es, self.fate_names()[r], self.reduced["induced"], shade=True
            )
            handles |= {h.get_label(): h for h in drawn if h.get_label() not in handles}
            seeds = sum(s == sigma for s, _ in self.runs)
            drawn = f", seed {self.runs[r][1]} drawn" if seeds > 1 else ""
            over = f" over {seeds} seeds" if seeds > 1 else ""
            ax.set_title(
                f"σ = {sigma:g}{drawn}\nagreement{over}: "
                f"{100 * share[f'induced σ={sigma:g}']:.0f} % induced, "
                f"{100 * share[f'euclidean σ={sigma:g}']:.0f} % Euclidean",
                fontsize=9,
                pad=10,
            )
            ax.set_xlabel("w0")
            ax.set_ylabel("e0")
        legend = {"loc": "outside lower center", "ncol": min(2 * len(sigmas), 4), "fontsize": 8}
        fig.legend(handles=list(handles.values()), frameon=False, **legend)
        c = self.config
        fig.suptitle(f"fate map, {c.model}, p = {c.p:g}, q = {c.q:g}", fontsize=10)
        return fig


def fate_map(
    config: FateConfig, checkpoint: Path | str | None = None, **cell_options: Any
) -> FateMap:
    """Run the fate map (module docstring).

    Args:
        config: what to run.
        checkpoint: a folder to write each finished cell to and resume from (``reduced/``,
            ``runs/`` and ``spectra/`` in it).
        cell_options: passed on to :func:`gradflow.run_cells` (``progress``, …).

    Raises:
        GradflowError: a checkpoint folder of another configuration.
    """
    manifest = asdict(dataclasses.replace(config, spectra=False))
    folder = None if checkpoint is None else Path(checkpoint)

    def cells(
        compute: Callable[[Any], Any], grid: Sequence[Any], names: list[str], part: str, **more: Any
    ) -> list[Any]:
        return run_cells(
            compute,
            grid,
            names=names,
            checkpoint=None if folder is None else folder / part,
            manifest={"fate map": manifest, "part": part},
            desc=f"{config.model} fate: {part}",
            **cell_options,
            **more,
        )

    predicted = cells(
        reduced_cell, [ReducedCell(config, m) for m in METRICS], list(METRICS), "reduced"
    )
    every = tuple(range(config.grid))
    runs = [
        FullRuns(config, s, k, rows)
        for s, k in config.runs()
        for rows in ([every] if s > 0 else [(i,) for i in every])
    ]
    work = [run_work(config, c.sigma, len(c.rows)) for c in runs]
    done = cells(full_runs, runs, [c.name for c in runs], "runs", work=work)
    spectra: tuple[dict[str, Any], ...] = ()
    if config.spectra:
        (record,) = cells(spectra_cell, [SpectraCell(config)], ["spectra"], "spectra")
        spectra = tuple(json.loads(str(record["json"])))
    shape = (len(config.runs()), config.grid, config.grid)
    stack = {k: np.concatenate([d[k] for d in done]) for k in done[0]}
    region = config.region()
    return FateMap(
        config=config,
        ws=region.xs,
        es=region.ys,
        runs=tuple(config.runs()),
        **{
            k: stack[k].reshape(shape)
            for k in ("fates", "times", "losses", "steps", "descent", "sliding")
        },
        projected=stack["projected"].reshape(shape + (config.full().reduced.dim,)),
        off_start=stack["off_start"].reshape(shape),
        off_end=stack["off_end"].reshape(shape),
        reduced={m: p["labels"] for m, p in zip(METRICS, predicted)},
        references=references(config),
        spectra=spectra,
        evidence={k: stack[k].reshape(shape) for k in EVIDENCE},
    )
