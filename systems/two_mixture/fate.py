"""Fate map of the two-mixture task: finite-width training of the full transformer against the
infinite-width reduced dynamics, over ``K × ω × m``.

For every ``(K, ω)`` the infinite-width reduced dynamics (:mod:`gradflow.systems.two_mixture.limit`)
runs twice, with the attention trained (group ``"joint"``) and frozen at its initialization
(group ``"attention frozen"``); the frozen run also carries the linear escape ``B = ω² b(t)``,
whose crossing of the escape level is the predicted escape time ``t*_lin`` and whose growth rate
``λ = ½ d ln max|b|/dt`` there gives the predicted slope ``dt*/d ln(1/ω) = 1/λ``.  For every
width ``m`` the full transformer trains in the same two ways (:mod:`.runs`), and each full
run is one :class:`~gradflow.systems.fate.FateCell` against the limit run of its group.

Stage times of a run (flow time, interpolated between records; NaN if not reached):

- ``t_neurons``: the loss on the consistent samples falls to ``½ ln 2`` (the neurons have
  fitted half of what the consistent samples ask of them; the attention plays no part);
- ``t_escape``: ``max |B|`` reaches ``escape_level`` (the scores leave the ``O(ω²)`` regime);
- ``t_fit``: the loss on the hard samples falls to ``fit_level``.

With ``seeds > 1`` every full run is repeated over that many initializations (seeds ``seed``
onward) and the agreement is reported per draw, with its mean and spread
(:mod:`gradflow.systems.fate_spread`); the escape table and the figure's grid show the first draw.

The outcome is ``"hard fitted"`` if ``t_fit`` was reached within the horizon, else
``"hard not fitted"``.  A full run agrees with the limit when the outcomes are equal and every
stage time both reached lies within a factor ``band`` of the limit's.  A disagreement's reason
(:data:`~gradflow.systems.fate.REASONS`): ``assumption`` when the finite initialization is
far from the limit's (:func:`~gradflow.systems.two_mixture.runs.init_deviation` ``≥``
:data:`DEVIATION_LIMIT`: the law of large numbers over ``m`` neurons and ``d_head = m`` rows that
the limit rests on has not set in), ``slow-corner`` when a stage was reached by one run only and
so late (after ``t_max/band``) that the other's horizon ran out within the band, else
``unexplained``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gradflow import run_cells
from gradflow.systems.fate import FateCell, FateResult

from .config import MixtureFateConfig
from .stages import first_crossing, fit_log_law

__all__ = [
    "DEVIATION_LIMIT",
    "GROUPS",
    "MixtureFate",
    "MixtureFateConfig",
    "Stages",
    "fate_cells",
    "fate_map",
]

GROUPS = {"joint": True, "attention frozen": False}
"""The comparison groups and whether the attention is trained in them."""
NEURON_LEVEL = 0.5 * np.log(2.0)
"""Consistent-sample loss (nats) that ends the neuron stage: half of ``ln 2``, the loss at ``f ≡ 0``."""
DEVIATION_LIMIT = 0.5
"""A finite initialization whose attention and neuron Gram matrices are off ``ω² I`` by this much
(spectral norm, relative) is too far from the limit's for its assumptions to hold."""
RUN_FIELDS = ("ks", "omegas", "widths", "particles", "neurons", "combine", "t_max", "lr")
"""The configuration fields that change the runs (a checkpoint's manifest), with ``records``
and ``seed``."""


def fate_cells(config: MixtureFateConfig) -> list[dict[str, Any]]:
    """Every run of the map, plain data (:func:`~gradflow.systems.two_mixture.runs.run_cell`):
    per ``(K, ω, group)`` the limit run, then the full run of every width and draw (the limit's
    quadrature is the first draw's)."""
    every = config.steps_per_record()
    common = {
        "combine": config.combine,
        "neurons": config.neurons,
        "seed": config.seed,
        "lr": config.lr,
        "steps": every * config.records,
        "every": every,
        "width": max(config.widths),
    }
    cells = []
    for K in config.ks:
        for omega in config.omegas:
            for group, attention in GROUPS.items():
                base = {"K": K, "omega": omega, "group": group, "attention": attention, **common}
                cells.append({"kind": "limit", "m": config.particles, **base})
                cells += [
                    {"kind": "full", "m": m, **base, "seed": seed}
                    for m in config.widths
                    for seed in config.draws()
                ]
    return cells


def _name(cell: dict[str, Any]) -> str:
    group = "joint" if cell["attention"] else "frozen"
    return f"{cell['kind']}-K{cell['K']}-w{cell['omega']:g}-m{cell['m']}-{group}-s{cell['seed']}"


@dataclass(frozen=True)
class Stages:
    """Stage times of one run (module docstring; NaN where not reached) and its final hard loss."""

    t_neurons: float
    t_escape: float
    t_fit: float
    hard_loss: float

    @property
    def outcome(self) -> str:
        """``"hard fitted"`` or ``"hard not fitted"``."""
        return "hard fitted" if np.isfinite(self.t_fit) else "hard not fitted"


def _stages(
    ts: np.ndarray,
    hard: np.ndarray,
    consistent: np.ndarray,
    score: np.ndarray,
    config: MixtureFateConfig,
) -> Stages:
    """The stage times of a run from its hard and consistent losses and ``max |B|``, each ``(T,)``."""
    return Stages(
        t_neurons=first_crossing(ts, consistent, NEURON_LEVEL, rising=False),
        t_escape=first_crossing(ts, score, config.escape_level, rising=True),
        t_fit=first_crossing(ts, hard, config.fit_level, rising=False),
        hard_loss=float(hard[-1]),
    )


@dataclass(frozen=True)
class MixtureFate(FateResult):
    """The two-mixture fate map: the runs (:func:`fate_cells`) and what they recorded.

    Attributes:
        config: what was run.
        runs: the cells, in :func:`fate_cells` order.
        records: each run's arrays (:func:`~gradflow.systems.two_mixture.runs.run_cell`).
    """

    config: MixtureFateConfig
    runs: tuple[dict[str, Any], ...]
    records: tuple[dict[str, np.ndarray], ...]

    @property
    def system(self) -> str:
        return "two-mixture"

    @property
    def axes(self) -> tuple[str, ...]:
        return ("K", "omega", "m") + (("seed",) if self.config.seeds > 1 else ())

    def first_draw(self, run: dict[str, Any]) -> bool:
        """Whether a run is a limit run or a full run of the first draw (the one the escape
        table and the figure's grid show)."""
        return run["kind"] == "limit" or run["seed"] == self.config.seed

    @functools.cached_property
    def ts(self) -> np.ndarray:
        """Flow times of the records, shape ``(T,)``."""
        return self.config.lr * self.runs[0]["every"] * np.arange(self.config.records + 1)

    @functools.cached_property
    def stages(self) -> tuple[Stages, ...]:
        """The stage times of every run, in :attr:`runs` order."""
        return tuple(
            _stages(self.ts, *self.losses(run, rec), rec["max_score"], self.config)
            for run, rec in zip(self.runs, self.records)
        )

    def _limit_index(self) -> dict[tuple[int, float, str], int]:
        return {
            (r["K"], r["omega"], r["group"]): i
            for i, r in enumerate(self.runs)
            if r["kind"] == "limit"
        }

    def linear_escape(self, K: int, omega: float) -> tuple[float, float]:
        """``(t*_lin, 1/λ(t*_lin))`` at ``(K, ω)``: the predicted escape time and the predicted
        slope ``dt*/d ln(1/ω)`` from the linear escape of the frozen limit run (module
        docstring); NaN if ``ω² max|b|`` never reaches the level."""
        rec = self.records[self._limit_index()[K, omega, "attention frozen"]]
        grown = omega**2 * rec["tangent"]
        t_star = first_crossing(self.ts, grown, self.config.escape_level, rising=True)
        if not np.isfinite(t_star) or t_star <= self.ts[0]:
            return t_star, float("nan")
        i = int(np.searchsorted(self.ts, t_star))
        rate = 0.5 * np.log(grown[i] / grown[i - 1]) / (self.ts[i] - self.ts[i - 1])
        return t_star, float(1.0 / rate)

    def cells(self) -> list[FateCell]:
        limits = self._limit_index()
        out = []
        for run, rec, stages in zip(self.runs, self.records, self.stages):
            if run["kind"] != "full":
                continue
            limit = self.stages[limits[run["K"], run["omega"], run["group"]]]
            out.append(self._compare(run, stages, limit, float(rec["deviation"])))
        return out

    def csv_columns(self) -> dict[str, Sequence[Any]]:
        """Per comparison its full run's and its limit run's stage times (``nan`` where not
        reached) and final hard loss, and the full run's init deviation from the limit's."""
        limits = self._limit_index()
        keys = ("t_neurons", "t_escape", "t_fit", "hard_loss")
        columns: dict[str, list[float]] = {f"{s}_{k}": [] for s in ("full", "limit") for k in keys}
        columns["deviation"] = []
        for run, rec, full in zip(self.runs, self.records, self.stages):
            if run["kind"] == "full":
                limit = self.stages[limits[run["K"], run["omega"], run["group"]]]
                for side, stages in (("full", full), ("limit", limit)):
                    for key in keys:
                        columns[f"{side}_{key}"].append(float(getattr(stages, key)))
                columns["deviation"].append(float(rec["deviation"]))
        return columns

    def agreement_spread(self) -> dict[str, dict[str, Any]] | None:
        """Per group, the agreement of each draw with its mean and spread
        (:func:`~gradflow.systems.fate_spread.agreement_over_draws`); ``None`` for one draw."""
        if self.config.seeds == 1:
            return None
        from ..fate_spread import agreement_over_draws

        return agreement_over_draws(self.cells(), "seed")

    def _compare(
        self, run: dict[str, Any], full: Stages, limit: Stages, deviation: float
    ) -> FateCell:
        config = self.config
        keys = ("t_neurons", "t_escape", "t_fit") if run["attention"] else ("t_neurons", "t_fit")
        off, lone, parts = [], [], []
        for key in keys:
            a, b = getattr(full, key), getattr(limit, key)
            if np.isfinite(a) and np.isfinite(b):
                parts.append(f"{key} {a:.0f}/{b:.0f}")
                if not 1 / config.band <= a / b <= config.band:
                    off.append(key)
            elif np.isfinite(a) or np.isfinite(b):
                parts.append(f"{key} {a:.0f}/{b:.0f}")
                lone.append(max(np.nan_to_num(a), np.nan_to_num(b)))
        agree = not off and not lone and full.outcome == limit.outcome
        reason = None
        if not agree:
            if deviation >= DEVIATION_LIMIT:
                reason = "assumption"
            elif not off and lone and min(lone) > config.t_max / config.band:
                reason = "slow-corner"
            else:
                reason = "unexplained"
        detail = (
            "full/limit: "
            + ", ".join(parts)
            + f"; hard loss {full.hard_loss:.3g}/{limit.hard_loss:.3g}"
            + f"; init deviation {deviation:.2f}"
        )
        coords = {"K": run["K"], "omega": run["omega"], "m": run["m"]}
        if config.seeds > 1:
            coords["seed"] = run["seed"]
        return FateCell(
            coords=coords,
            reduced=limit.outcome,
            full=full.outcome,
            agree=agree,
            group=run["group"],
            reason=reason,
            detail=detail,
        )

    def escape_law(self, K: int) -> dict[str, Any]:
        """The ``ln(1/ω)`` law of the escape at ``K``: the slope the linear escape predicts
        (least squares of ``t*_lin`` over ``ln(1/ω)``, and ``1/λ`` at each ``ω``), and the slopes
        measured on the limit runs and on the full runs of each width (joint group); ``None``
        where fewer than two escapes were reached."""
        omegas = list(self.config.omegas)
        linear = [self.linear_escape(K, w) for w in omegas]

        def slope(times: Sequence[float]) -> float | None:
            if np.isfinite(times).sum() < 2:
                return None
            return fit_log_law(omegas, times).slope

        joint = {
            (r["kind"], r["m"], r["omega"]): s.t_escape
            for r, s in zip(self.runs, self.stages)
            if r["K"] == K and r["attention"] and self.first_draw(r)
        }
        return {
            "K": K,
            "omegas": omegas,
            "t_escape_linear": [t for t, _ in linear],
            "slope_local": [s for _, s in linear],
            "slope_predicted": slope([t for t, _ in linear]),
            "slope_limit": slope([joint["limit", self.config.particles, w] for w in omegas]),
            "slope_full": {
                str(m): slope([joint["full", m, w] for w in omegas]) for m in self.config.widths
            },
        }

    def attention_needed(self) -> list[dict[str, Any]]:
        """Per ``(K, ω)``: the limit's final hard loss with the attention trained and frozen,
        and whether the hard samples are fitted without attention (the paper: they are not)."""
        limits = self._limit_index()
        out = []
        for K in self.config.ks:
            for omega in self.config.omegas:
                joint = self.stages[limits[K, omega, "joint"]]
                frozen = self.stages[limits[K, omega, "attention frozen"]]
                out.append(
                    {
                        "K": K,
                        "omega": omega,
                        "hard_loss_joint": joint.hard_loss,
                        "hard_loss_frozen": frozen.hard_loss,
                        "fitted_without_attention": bool(np.isfinite(frozen.t_fit)),
                    }
                )
        return out

    def losses(self, run: dict[str, Any], record: dict) -> tuple[np.ndarray, np.ndarray]:
        """The loss (nats) on the hard and on the consistent samples of a run, each ``(T,)``."""
        from .data import population

        hard = population(run["K"]).hard
        ell = np.logaddexp(0.0, -record["margins"])
        return ell[:, hard].mean(axis=1), ell[:, ~hard].mean(axis=1)

    def arrays(self) -> dict[str, Any]:
        kinds = np.array([r["kind"] for r in self.runs])
        out: dict[str, Any] = {"ts": self.ts}
        for kind in ("full", "limit"):
            runs = [r for r, k in zip(self.runs, kinds) if k == kind]
            stages = [s for s, k in zip(self.stages, kinds) if k == kind]
            records = [rec for rec, k in zip(self.records, kinds) if k == kind]
            out[f"{kind}_K"] = np.array([r["K"] for r in runs])
            out[f"{kind}_omega"] = np.array([r["omega"] for r in runs])
            out[f"{kind}_m"] = np.array([r["m"] for r in runs])
            out[f"{kind}_attention"] = np.array([r["attention"] for r in runs])
            out[f"{kind}_seed"] = np.array([r["seed"] for r in runs])
            for key in ("t_neurons", "t_escape", "t_fit", "hard_loss"):
                out[f"{kind}_{key}"] = np.array([getattr(s, key) for s in stages])
            for part, losses in zip(("hard", "consistent"), zip(*map(self.losses, runs, records))):
                out[f"{kind}_loss_{part}"] = np.stack(losses)
            out[f"{kind}_max_score"] = np.stack([rec["max_score"] for rec in records])
        limit_records = [rec for rec, k in zip(self.records, kinds) if k == "limit"]
        out["limit_tangent"] = np.stack([rec["tangent"] for rec in limit_records])
        out["limit_drive"] = np.stack([rec["drive"] for rec in limit_records])
        full_records = [rec for rec, k in zip(self.records, kinds) if k == "full"]
        out["full_deviation"] = np.array([float(rec["deviation"]) for rec in full_records])
        out["full_drift"] = np.array([float(rec["drift"]) for rec in full_records])
        out["full_agree"] = np.array([c.agree for c in self.cells()])
        return out

    def figure(self) -> Any:
        from matplotlib.figure import Figure

        from .fate_figure import SIZE, draw_fate

        fig = Figure(figsize=SIZE(len(self.config.ks)), layout="constrained")
        draw_fate(self, fig)
        return fig

    def details(self) -> dict[str, Any]:
        limits = [
            {
                "K": r["K"],
                "omega": r["omega"],
                "group": r["group"],
                **asdict(s),
                "outcome": s.outcome,
            }
            for r, s in zip(self.runs, self.stages)
            if r["kind"] == "limit"
        ]
        full = [rec for r, rec in zip(self.runs, self.records) if r["kind"] == "full"]
        return {
            "settings": asdict(self.config),
            "limit": limits,
            "escape_law": [self.escape_law(K) for K in self.config.ks],
            "attention_needed": self.attention_needed(),
            "max_conservation_drift": float(max(float(rec["drift"]) for rec in full)),
            "agreement_over_draws": self.agreement_spread(),
        }

    def detail_lines(self) -> list[str]:
        from gradflow import format_table

        from ..fate_spread import spread_line

        lines = [spread_line(g, s) for g, s in (self.agreement_spread() or {}).items()]
        if lines:
            lines.append(f"(escape table and figure: the draw of seed {self.config.seed})")
        for law in (self.escape_law(K) for K in self.config.ks):
            K = law["K"]
            rows = []
            for i, omega in enumerate(law["omegas"]):
                joint = self.stages[self._limit_index()[K, omega, "joint"]]
                full = [
                    s.t_escape
                    for r, s in zip(self.runs, self.stages)
                    if r["kind"] == "full"
                    and self.first_draw(r)
                    and r["K"] == K
                    and r["omega"] == omega
                    and r["attention"]
                ]
                rows.append(
                    [f"{omega:g}", _t(law["t_escape_linear"][i]), _t(law["slope_local"][i])]
                    + [_t(joint.t_escape)]
                    + [_t(t) for t in full]
                )
            head = ["ω", "t*_lin", "1/λ", "limit"] + [f"m = {m}" for m in self.config.widths]
            lines.append(f"K = {K}: escape time (max |B| ≥ {self.config.escape_level:g})")
            lines.append(format_table(head, rows))
            slopes = ", ".join(f"m = {m}: {_t(v)}" for m, v in law["slope_full"].items())
            lines.append(
                f"  slope dt*/d ln(1/ω): predicted {_t(law['slope_predicted'])}, limit "
                f"{_t(law['slope_limit'])}; full {slopes}"
            )
        for row in self.attention_needed():
            lines.append(
                f"K = {row['K']}, ω = {row['omega']:g}: limit hard loss at t = {self.config.t_max:g}: "
                f"{row['hard_loss_joint']:.3g} (attention trained), {row['hard_loss_frozen']:.3g} "
                f"(frozen){' — fitted without attention' if row['fitted_without_attention'] else ''}"
            )
        return lines

    def text(self) -> str:
        c = self.config
        head = (
            f"two-mixture, {c.neurons} neurons, {c.combine} heads: full width m ∈ "
            f"{list(c.widths)} against the m → ∞ limit ({c.particles} quadrature points), "
            f"descent η = {c.lr:g} to t = {c.t_max:g}"
        )
        return head + "\n" + super().text()


def _t(value: float | None) -> str:
    return "—" if value is None or not np.isfinite(value) else f"{value:.4g}"


def fate_map(
    config: MixtureFateConfig, checkpoint: Path | str | None = None, **cell_options: Any
) -> MixtureFate:
    """Run the two-mixture fate map (module docstring).

    Args:
        config: what to run.
        checkpoint: a folder to keep finished runs in and resume from.
        cell_options: passed on to :func:`gradflow.run_cells` (``progress``, …).

    Raises:
        GradflowError: a checkpoint folder of another map.
    """
    from .runs import run_cell

    runs = fate_cells(config)
    manifest = {
        "system": "two-mixture",
        **{k: getattr(config, k) for k in RUN_FIELDS},
        "records": config.records,
        "seed": config.seed,
        "seeds": config.seeds,
    }
    records = run_cells(
        run_cell,
        runs,
        names=[_name(r) for r in runs],
        checkpoint=checkpoint,
        manifest=manifest,
        desc="two-mixture fate",
        work=[config.run_seconds(r["kind"], r["K"]) for r in runs],
        **cell_options,
    )
    return MixtureFate(config=config, runs=tuple(runs), records=tuple(records))
