"""The fate contract: where each reduced model predicts the training of its full model, and where not.

A *fate map* runs, over a grid of a system's own axes (the Markov model's reduced starts, the
induction-head task's data prior × init scale, the two-mixture's ``ω`` × width, the shallow
encoder's ``N`` × ``d_m``), the full model and the reduced model from matching starts, and
compares what the paper claims about training in that system: the basin reached, the order and
the times of the stages, convergence within a budget.  Every system has

- a configuration dataclass whose checks import no JAX (the command line builds it from its
  options), with ``QUICK``, the overrides of a small map (a test, a look: ≤ 60 s on 2 cores),
  ``memory_bytes()`` and ``estimate()``: the map's size, rough duration and memory
  (:class:`gradflow.Estimate`), which :func:`run_fate` checks before anything runs;
- ``fate_map(config, checkpoint=None, **cell_options) -> FateResult``, whose heavy work is a grid
  of independent cells run by :func:`gradflow.run_cells` (``cell_options`` go to it), so that a
  map is resumable from ``checkpoint`` and runs wherever ``run_cells`` can run its cells;
- a result that is a :class:`FateResult`: one :class:`FateCell` per comparison (the reduced
  prediction, the full outcome, whether they agree and, where not, a :data:`REASONS` key),
  written by the commands' one writer (NPZ, JSON, a picture).

:data:`FATE_SYSTEMS` lists the systems with a fate map of their own by name (``gradflow fate
--model NAME``) as plain data, so the command line reads it without importing any of them;
:func:`fate_systems` adds every other registered model that declares a full model
(:data:`gradflow.systems.MODELS` entries marked ``full``), and :func:`plane_system` any other
model spec with one (an installed plugin's, ``FILE.py:FACTORY``): their map is the plane fate map
of :mod:`gradflow.systems.plane_fate`.
"""

from __future__ import annotations

import abc
import dataclasses
import importlib
import itertools
import math
import numbers
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "COMPARISON_BYTES",
    "FATE_SYSTEMS",
    "REASONS",
    "FateCell",
    "FateResult",
    "FateSystem",
    "config_type",
    "fate_system",
    "fate_systems",
    "plane_cells",
    "run_columns",
    "plane_system",
    "quick_config",
    "run_fate",
]

REASONS = {
    "metric": "the reduced flow is compared in the wrong metric: the full flow pulled back to "
    "the reduced coordinates is θ' = -G⁻¹∇L with G = JᵀJ, not the Euclidean -∇L",
    "slow-corner": "the full run sat in a slow region (a plateau, near a saddle or a kink) and "
    "its budget ran out before its outcome was decided",
    "off-reduction": "the full run left the reduced family: its off-family component grew, so "
    "the reduced dynamics no longer describe it",
    "full-saddle": "the reduced prediction is a set that is a saddle of the full model: the "
    "run's projection climbed the reduced loss, which no reduced flow does, leaving along the "
    "unstable directions of the full Hessian there, which the reduced family lacks",
    "assumption": "an assumption of the theorem or limit the reduction rests on is not met in "
    "this cell (a width, a scale, a data property)",
    "unexplained": "no mechanism identified",
}
"""Why a full run's outcome differs from the reduced prediction: key → what it means."""
COMPARISON_BYTES = 6 * 1024
"""Peak bytes a map spends per comparison on its records: the :class:`FateCell` with its detail
line, a mismatch's JSON record and the JSON text while it is written (4.7 KB measured per
comparison with half of a 30 × 30 canonical map's comparisons mismatching: ``tracemalloc``
around ``FateMap.metadata()`` and ``json.dumps`` of it; a mismatch takes more than an
agreement)."""


@dataclass(frozen=True)
class FateSystem:
    """A system with a full model, as the fate command finds it.

    Attributes:
        config: ``"module:Class"`` of its configuration dataclass (no JAX at import).
        run: ``"module:function"`` of its ``fate_map(config, checkpoint=None, **cell_options)``.
        help: one line for ``gradflow fate --help``.
        fixed: configuration values the system's name implies (not options).
    """

    config: str
    run: str
    help: str
    fixed: Mapping[str, Any] = field(default_factory=dict)


FATE_SYSTEMS: dict[str, FateSystem] = {
    "canonical": FateSystem(
        "gradflow.systems.markov.config:FateConfig",
        "gradflow.systems.markov.fate:fate_map",
        "canonical Markov model L(e, w): full single-layer transformer from a grid of (e, w)",
        {"model": "canonical"},
    ),
    "canonical-attention": FateSystem(
        "gradflow.systems.markov.config:FateConfig",
        "gradflow.systems.markov.fate:fate_map",
        "three-scalar model L(e, w, a) at a = 0: full transformer from a grid of (e, w)",
        {"model": "canonical-attention"},
    ),
    "induction-heads": FateSystem(
        "gradflow.systems.induction_heads.config:ICLFateConfig",
        "gradflow.systems.induction_heads.fate:fate_map",
        "in-context Markov chains (Edelman et al. 2024): the transformer against the minimal "
        "model and its (a, b, v) reduction over the doubly-stochastic share ρ × init scale σ",
    ),
    "shallow-ntk": FateSystem(
        "gradflow.systems.shallow_ntk.config:NtkFateConfig",
        "gradflow.systems.shallow_ntk.fate:fate_map",
        "shallow encoder (Wu et al. 2023): GD over (N, d_m) for each init and scaling, against "
        "the theorem's sufficient width; the fitted threshold d_m* ∝ N^α",
    ),
    "two-mixture": FateSystem(
        "gradflow.systems.two_mixture.config:MixtureFateConfig",
        "gradflow.systems.two_mixture.fate:fate_map",
        "two-mixture classification (reconstruction): full transformer of width m against the "
        "m → ∞ reduced dynamics over K × ω × m, attention trained and frozen",
    ),
}
"""The systems with a fate map of their own."""


def fate_systems() -> dict[str, FateSystem]:
    """Every system ``gradflow fate --model NAME`` runs by a registered name: :data:`FATE_SYSTEMS`,
    then each model of :data:`gradflow.systems.MODELS` with a full model and no fate system of
    its own, with the plane fate map (:func:`plane_system`).  Read from the registry when
    called, so a model registered after import is found.  Any other model spec with a full
    model (a plugin's, ``FILE.py:FACTORY``) is run by :func:`plane_system` too."""
    from gradflow.systems import MODELS

    generic = {
        name: plane_system(name)
        for name, entry in MODELS.items()
        if entry.full and name not in FATE_SYSTEMS
    }
    return {**FATE_SYSTEMS, **generic}


def plane_system(spec: str) -> FateSystem:
    """The plane fate map (:mod:`gradflow.systems.plane_fate`) of the model ``spec`` names (a
    model spec of :mod:`gradflow.systems.model_specs`)."""
    return FateSystem(
        "gradflow.systems.plane_fate_config:ModelFateConfig",
        "gradflow.systems.plane_fate:fate_map",
        f"{spec}: its full model's gradient flow from a grid of embedded reduced starts",
        {"model": spec},
    )


def _load(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def config_type(name: str) -> type:
    """The configuration dataclass of the system ``name``.

    Raises:
        GradflowError: an unknown system.
    """
    return _load(_system(name).config)


def quick_config(config: Any) -> Any:
    """``config`` with its class's ``QUICK`` overrides applied to every field still at its
    default (an option the user gave wins)."""
    defaults = {
        f.name: f.default
        for f in dataclasses.fields(config)
        if f.default is not dataclasses.MISSING
    }
    quick = {
        k: v for k, v in type(config).QUICK.items() if getattr(config, k) == defaults.get(k, v)
    }
    return dataclasses.replace(config, **quick)


def run_fate(
    name: str,
    config: Any,
    checkpoint: Path | str | None = None,
    *,
    allow_long: bool = False,
    **cell_options: Any,
) -> FateResult:
    """Run the fate map of the system ``name`` (see the module docstring).

    Every configuration has ``estimate()``, the map's size, rough duration and memory
    (:class:`gradflow.Estimate`); a map whose memory cannot fit is refused before anything
    runs, and so is one estimated past 30 min unless ``allow_long``.

    Args:
        name: a key of :func:`fate_systems`.
        config: an instance of its configuration dataclass.
        checkpoint: a folder to keep finished cells in and resume from.
        allow_long: run a map estimated past the limit.
        cell_options: passed on to :func:`gradflow.run_cells` (``progress``, …).

    Raises:
        GradflowError: an unknown system, a configuration of another system, a checkpoint
            folder of another map, a map beyond the memory available or (without
            ``allow_long``) past the limit.
    """
    from gradflow import GradflowError

    system = _system(name)
    if not isinstance(config, _load(system.config)):
        raise GradflowError(f"fate of {name!r} needs a {system.config.partition(':')[2]}")
    config.estimate().check(allow_long)
    return _load(system.run)(config, checkpoint=checkpoint, **cell_options)


def fate_system(name: str) -> FateSystem | None:
    """The fate system of ``name``: a key of :func:`fate_systems`, else the plane map of a model
    spec (a plugin's model, ``FILE.py:FACTORY``, :func:`plane_system`); ``None`` for neither."""
    from .model_specs import available, is_file_spec

    system = fate_systems().get(name)
    if system is None and (is_file_spec(name) or name in available()):
        return plane_system(name)
    return system


def _system(name: str) -> FateSystem:
    """:func:`fate_system` of ``name``.

    Raises:
        GradflowError: ``name`` names no fate system.
    """
    system = fate_system(name)
    if system is not None:
        return system
    from gradflow import GradflowError

    raise GradflowError(
        f"model = {name!r} has no fate map; one of {', '.join(fate_systems())}, or "
        "FILE.py:FACTORY for a model with a full model"
    )


@dataclass(frozen=True)
class FateCell:
    """One comparison of a fate map: a full run against the reduced prediction.

    Attributes:
        coords: the cell's place on the system's axes, by axis name (``{"omega": 0.05, "m": 64}``).
        reduced: the outcome the reduced model predicts (``"global"``, ``"uniform→unigram→bigram"``).
        full: the outcome of the full model's run.
        agree: whether they agree, by the system's rule (equal outcomes, and for timed stages a
            time ratio within the system's band).
        group: which comparison the cell belongs to where a map makes several (``"induced
            σ=0.01"``, ``"attention frozen"``); agreement is reported per group.
        reason: for a disagreement, a key of :data:`REASONS`; ``None`` where they agree.
        detail: one line of the numbers behind the outcome or the reason.
    """

    coords: Mapping[str, float]
    reduced: str
    full: str
    agree: bool
    group: str = ""
    reason: str | None = None
    detail: str = ""

    def __post_init__(self) -> None:
        if self.agree and self.reason is not None:
            raise ValueError("a cell that agrees has no reason")
        if not self.agree and self.reason not in REASONS:
            raise ValueError(f"reason {self.reason!r} must be one of {', '.join(REASONS)}")

    def record(self) -> dict[str, Any]:
        """The cell as JSON-ready data."""
        return {
            "coords": dict(self.coords),
            "group": self.group,
            "reduced": self.reduced,
            "full": self.full,
            "agree": self.agree,
            "reason": self.reason,
            "detail": self.detail,
        }


def plane_cells(
    full: Any,
    reduced: Mapping[str, Any],
    runs: Sequence[tuple[float, int]],
    axes: tuple[tuple[str, Sequence[float]], tuple[str, Sequence[float]]],
    reason: Callable[[int, int, int, str], str],
    detail: Callable[[int, int, int], dict[str, Any]],
) -> tuple[FateCell, ...]:
    """The cells of a fate map over a plane of reduced starts, compared in two metrics.

    Args:
        full: the full runs' outcome names, shape ``(R, ny, nx)`` (run batch ``(σ, seed)``, row,
            column).
        reduced: the reduced prediction per metric, two metrics, each shape ``(ny, nx)``.
        runs: ``(σ, seed)`` per run batch.
        axes: ``((row name, row values), (column name, column values))`` of the starts.
        reason: ``reason(r, i, j, other)`` for a disagreeing cell, ``other`` the prediction in
            the other metric.
        detail: ``detail(r, i, j)``, the cell's details.

    Returns:
        One :class:`FateCell` per metric, run batch and start, in that order.
    """
    (row, ys), (column, xs) = axes
    metrics = tuple(reduced)
    out = []
    for metric, other in zip(metrics, reversed(metrics)):
        for r, (sigma, seed) in enumerate(runs):
            for i, j in itertools.product(range(len(ys)), range(len(xs))):
                name, predicted = str(full[r][i][j]), str(reduced[metric][i][j])
                agree = name == predicted
                out.append(
                    FateCell(
                        coords={
                            row: float(ys[i]),
                            column: float(xs[j]),
                            "sigma": float(sigma),
                            "seed": int(seed),
                        },
                        reduced=predicted,
                        full=name,
                        agree=agree,
                        group=f"{metric} σ={sigma:g}",
                        reason=None if agree else reason(r, i, j, str(reduced[other][i][j])),
                        detail=detail(r, i, j),
                    )
                )
    return tuple(out)


class FateResult(abc.ABC):
    """A fate map's result: the cells compared, the agreement, the mismatches with their reasons.

    A system's result implements :meth:`cells`, :attr:`system`, :attr:`axes`, :meth:`arrays`,
    :meth:`figure` and :meth:`details` (what only that system reports); the agreement, the
    mismatch list, the JSON record and the text's summary lines are common.
    """

    @property
    @abc.abstractmethod
    def system(self) -> str:
        """The key of :data:`FATE_SYSTEMS`."""

    @property
    @abc.abstractmethod
    def axes(self) -> tuple[str, ...]:
        """The names of the grid's axes, as in :attr:`FateCell.coords`."""

    @abc.abstractmethod
    def cells(self) -> Sequence[FateCell]:
        """Every comparison, in the grid's order."""

    @abc.abstractmethod
    def arrays(self) -> dict[str, Any]:
        """The NPZ's arrays."""

    @abc.abstractmethod
    def figure(self) -> Any:
        """A new matplotlib figure: the grid of outcomes, disagreements marked."""

    @abc.abstractmethod
    def details(self) -> dict[str, Any]:
        """What only this system records (settings, references, measured rates), JSON-ready."""

    def detail_lines(self) -> list[str]:
        """Lines of the text report after the common summary (default none)."""
        return []

    def csv_columns(self) -> dict[str, Sequence[Any]]:
        """What the system measured of each comparison's run, by column name, each aligned with
        :meth:`cells` (default none; the canonical map: time, loss, solver steps, distances
        from the family and its evidence)."""
        return {}

    def csv_table(self) -> tuple[list[str], list[list[Any]]]:
        """The map flat, one row per comparison in :meth:`cells`' order, for pandas or R: the
        cell's coordinates (one column per key of :attr:`FateCell.coords`: the system's axes,
        ``sigma`` and ``seed`` where it has them), ``group`` (a run compared in two metrics, or
        a point compared between two pairs of models, has a row for each), ``reduced`` and
        ``full`` outcomes, ``agree`` (``True``/``False``), ``reason`` (empty where they agree),
        the system's measured values (:meth:`csv_columns`) and the ``detail`` line.  Written
        beside the NPZ (``fate.csv``)."""
        cells = self.cells()
        keys = list(dict.fromkeys(k for c in cells for k in c.coords))
        extra = self.csv_columns()
        header = [*keys, "group", "reduced", "full", "agree", "reason", *extra, "detail"]
        rows = []
        for n, c in enumerate(cells):
            rows.append(
                [
                    *(_csv_value(c.coords.get(k, "")) for k in keys),
                    c.group,
                    c.reduced,
                    c.full,
                    str(bool(c.agree)),
                    c.reason or "",
                    *(_csv_value(values[n]) for values in extra.values()),
                    c.detail,
                ]
            )
        return header, rows

    def groups(self) -> list[str]:
        """The comparison groups, in first-seen order."""
        return list(dict.fromkeys(c.group for c in self.cells()))

    def agreement(self) -> dict[str, float]:
        """Per group, the share of its cells whose outcomes agree."""
        cells = self.cells()
        return {
            g: sum(c.agree for c in cells if c.group == g) / sum(c.group == g for c in cells)
            for g in self.groups()
        }

    def mismatches(self) -> list[dict[str, Any]]:
        """Every cell that disagrees, as JSON-ready records, in the grid's order."""
        return [c.record() for c in self.cells() if not c.agree]

    def reasons(self) -> dict[str, int]:
        """How many mismatches each reason explains."""
        return dict(Counter(c.reason for c in self.cells() if not c.agree))

    def metadata(self) -> dict[str, Any]:
        """The JSON record: system, axes, agreement per group, reasons, mismatches, details."""
        return {
            "system": self.system,
            "axes": list(self.axes),
            "cells": len(self.cells()),
            "agreement": self.agreement(),
            "reasons": self.reasons(),
            "mismatches": self.mismatches(),
            **self.details(),
        }

    def text(self) -> str:
        """Agreement per group, the mismatches (at most 20) with their reasons, then
        :meth:`detail_lines`."""
        cells = self.cells()
        lines = [f"fate map of {self.system}: {len(cells)} comparisons over {', '.join(self.axes)}"]
        for group, share in self.agreement().items():
            lines.append(f"agreement{f' ({group})' if group else ''}: {100 * share:.1f} %")
        found = self.mismatches()
        lines.append(f"mismatches: {len(found)}")
        for m in found[:20]:
            at = ", ".join(f"{k} = {v:g}" for k, v in m["coords"].items())
            group = f" [{m['group']}]" if m["group"] else ""
            lines.append(
                f"  {at}{group}: reduced {m['reduced']}, full {m['full']} — {m['reason']}"
                + (f" ({m['detail']})" if m["detail"] else "")
            )
        if len(found) > 20:
            lines.append(f"  … and {len(found) - 20} more (all in the JSON)")
        return "\n".join(lines + self.detail_lines())


def _csv_value(value: Any) -> Any:
    """A CSV field: text as it is, an integer as one, a float in full (``repr``), ``nan`` empty."""
    if isinstance(value, bool | str):
        return str(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    number = float(value)
    return "" if math.isnan(number) else repr(number)


def run_columns(
    arrays: Mapping[str, Any], runs: tuple[int, ...], metrics: int, skip: Sequence[str] = ()
) -> dict[str, Any]:
    """The CSV columns of a map over a plane of starts compared in several metrics
    (:func:`plane_cells`' order: per metric, per run batch, per start): every array of
    ``arrays`` of shape ``runs`` (run batch, row, column) but ``skip``, flattened and repeated
    once per metric."""
    import numpy as np

    return {
        k: np.tile(np.asarray(v).reshape(-1), metrics)
        for k, v in arrays.items()
        if k not in skip and np.shape(v) == runs
    }
