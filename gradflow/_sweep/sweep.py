"""Sweeps over hyperparameters: critical sets and basin fractions in every cell of a grid of
``h`` values, compiled once, checkpointed cell by cell, resumable.

Every cell binds the model to its values, finds the critical sets and integrates the basin map.
The model's compiled functions take ``h`` as an argument, so the whole sweep compiles once; each
cell's trajectories are spread over every JAX device (:mod:`gradflow._flow.batched`).  With a
checkpoint folder, each finished cell is written there at once; a sweep interrupted (Ctrl-C, a
crash) and run again with the same arguments loads the finished cells and computes the rest, and
its results are identical to an uninterrupted run's.  The cells are a grid of
:func:`gradflow.run_cells` (:class:`CellOfSweep`), so with a Dask client they run on its
workers, with the same results and files; following branches and bifurcations across the cells
(:func:`follow`) runs afterwards, in this process.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import sympy as sp

from .._basins.basins import basins
from .._cells.cells import run_cells
from .._critical.search import critical_sets
from .._errors import GradflowError
from .._flow.batched import small_tails
from .._landscape.base import Landscape
from .._landscape.region import OnRegion, Region
from .._outcome import LABELS, Kind
from .._output.io import package_versions, to_jsonable
from .._output.memory import sweep_estimate
from .._symbolic.closed_forms import CriticalSetSpec, closed_form_specs
from .._symbolic.facts import degenerate_set_values, singular_critical_points
from .._symbolic.model import BoundModel, ReducedModel
from .branches import Bifurcation, Branch, CellPoints
from .continuation import follow_branches
from .matching import AttractorTrack, cell_attractors, match_attractors

__all__ = ["Sweep", "SweepCell", "follow", "remove_checkpoint", "sweep"]


@dataclass(frozen=True)
class SweepCell:
    """One cell of a sweep.

    Attributes:
        values: the hyperparameter values of the cell.
        record: JSON-ready results: the values, ``fractions`` by kind, ``attractors`` (id,
            kind, set, point, loss, fraction), ``critical_sets`` (name, kind, dimension, loss,
            equation, sample) and the ``kinds`` present.
        labels: basin labels (indices into :data:`gradflow.LABELS`), shape ``(ny, nx)``.
        attractor_ids: attractor reached by each grid point, ``-1`` for none, shape ``(ny, nx)``.
    """

    values: dict[str, float]
    record: dict[str, Any]
    labels: np.ndarray
    attractor_ids: np.ndarray


@dataclass(frozen=True)
class Sweep(OnRegion):
    """A sweep's cells over the product of its axes (the first axis varies slowest).

    Attributes:
        model: the model's name.
        axes: the values of each swept hyperparameter, in order.
        region: every cell's basin grid: its plane, box, points per axis and the values of the
            parameters off the plane.
        cells: the cells, in the order of ``itertools.product`` over the axes.
        branches: every isolated critical point followed across the cells
            (:mod:`gradflow._sweep.continuation`).
        bifurcations: where branches and closed-form sets change, located between cells.
        attractor_tracks: each attractor matched from cell to cell, with its fraction in each
            (:mod:`gradflow._sweep.matching`).
    """

    model: str
    axes: dict[str, tuple[float, ...]]
    region: Region
    cells: tuple[SweepCell, ...]
    branches: tuple[Branch, ...] = ()
    bifurcations: tuple[Bifurcation, ...] = ()
    attractor_tracks: tuple[AttractorTrack, ...] = ()

    @property
    def grid(self) -> int:
        """Basin grid points per axis in every cell."""
        return self.region.grid[0]

    @property
    def shape(self) -> tuple[int, ...]:
        """Cells along each axis."""
        return tuple(len(v) for v in self.axes.values())

    def fraction(self, kind: str) -> np.ndarray:
        """The share of each cell's grid that reaches ``kind`` (a label of :data:`LABELS`),
        shape :attr:`shape`."""
        shares = [cell.record["fractions"][kind] for cell in self.cells]
        return np.asarray(shares).reshape(self.shape)

    def transitions(self) -> list[dict[str, Any]]:
        """Where a critical set changes kind between neighbouring cells (continuation of the
        critical sets along each axis): ``{"set", "at", "from", "to", "between": [values,
        values]}``, ``at`` the set's sample point in the first cell.

        A set is followed by its name (its closed form); a set found numerically has no
        identity across cells and is not followed.
        """
        index = np.arange(len(self.cells)).reshape(self.shape)
        out = []
        for axis in range(len(self.shape)):
            first = np.take(index, range(self.shape[axis] - 1), axis=axis).ravel()
            second = np.take(index, range(1, self.shape[axis]), axis=axis).ravel()
            for a, b in zip(first, second):
                out += _changes(self.cells[a], self.cells[b])
        return out

    def text(self) -> str:
        """The cells, the range of the global-minimum share, and the transitions, branches and
        bifurcations found; a bifurcation located many times along one curve of the
        hyperparameters (a set changing kind on ``p + q = 1``, crossed between every pair of
        neighbouring cells it separates) is one event, printed once (:func:`_same_events`)."""
        events = _same_events(self.bifurcations)
        shape = " × ".join(f"{len(v)} {k}" for k, v in self.axes.items())
        share = self.fraction(Kind.GLOBAL_MIN)
        lines = [
            f"{self.model}: sweep over {shape} cells ({len(self.cells)} in all), "
            f"{self.grid} × {self.grid} grid each",
            f"  global-minimum share: {share.min():.4f} … {share.max():.4f}",
            f"  kinds that change between neighbouring cells: {len(self.transitions())} "
            "transitions",
            f"  branches of isolated critical points followed across cells: {len(self.branches)}",
            f"  bifurcations: {len(self.bifurcations)}"
            + (f", {len(events)} distinct" if len(events) < len(self.bifurcations) else ""),
        ]
        lines += [f"    {_event_text(event, self.region.names)}" for event in events]
        return "\n".join(lines)

    def figure(self) -> Any:
        """A new matplotlib figure: the share of the grid reaching each kind over the swept
        hyperparameters, with the bifurcations
        (:func:`gradflow._output.sweep_picture.sweep_figure`).  The
        paper's phase diagram and the bifurcation diagram
        (``gradflow figures local-to-global-phase-diagram``, ``bifurcation-diagram``) draw
        sweeps in more detail."""
        from .._output.sweep_picture import sweep_figure

        fractions = {label: self.fraction(label) for label in LABELS}
        shape = " × ".join(f"{len(v)} {k}" for k, v in self.axes.items())
        return sweep_figure(
            {k: np.asarray(v) for k, v in self.axes.items()},
            fractions,
            [b.metadata() for b in self.bifurcations],
            f"{self.model}: sweep over {shape}, {self.grid} × {self.grid} grid each",
        )

    def metadata(self) -> dict[str, Any]:
        """JSON-ready: ``{"model", "axes", "grid", "box", "plane", "fixed", "cells",
        "transitions", "branches", "bifurcations", "attractor_tracks"}``."""
        return {
            "model": self.model,
            "axes": {k: list(v) for k, v in self.axes.items()},
            "grid": self.grid,
            "box": list(self.box),
            "plane": list(self.plane),
            "fixed": self.fixed,
            "cells": [cell.record for cell in self.cells],
            "transitions": self.transitions(),
            "branches": [b.metadata() for b in self.branches],
            "bifurcations": [b.metadata() for b in self.bifurcations],
            "attractor_tracks": [t.metadata() for t in self.attractor_tracks],
        }

    def arrays(self) -> dict[str, np.ndarray]:
        """Every cell's arrays stacked: ``labels`` and ``attractor_ids`` of shape
        ``(*shape, ny, nx)``, the ``fractions`` by kind of shape ``(*shape, len(LABELS))``, and
        the axes."""
        ny, nx = self.cells[0].labels.shape
        return {
            "labels": np.stack([c.labels for c in self.cells]).reshape(*self.shape, ny, nx),
            "attractor_ids": np.stack([c.attractor_ids for c in self.cells]).reshape(
                *self.shape, ny, nx
            ),
            "fractions": np.stack([self.fraction(label) for label in LABELS], axis=-1),
            "label_names": np.array(LABELS),
            **{f"axis_{name}": np.asarray(values) for name, values in self.axes.items()},
        }


def _same_events(found: Sequence[Bifurcation]) -> list[list[Bifurcation]]:
    """The bifurcations grouped into events: those of one type and one set on one curve of the
    hyperparameters (``q = 1 - p`` and ``p = 1 - q`` are one curve) are one event; each other
    bifurcation is an event of its own.  In the order of each event's first bifurcation."""
    events: list[list[Bifurcation]] = []
    curves: list[tuple[str, str | None, sp.Expr] | None] = []
    for b in found:
        key = None
        if b.curve is not None and b.set is not None:
            lhs, _, rhs = b.curve.partition(" = ")
            key = (b.type, b.set, sp.sympify(lhs) - sp.sympify(rhs))
        same = next(
            (
                i
                for i, other in enumerate(curves)
                if key is not None
                and other is not None
                and other[:2] == key[:2]
                and (sp.simplify(other[2] - key[2]) == 0 or sp.simplify(other[2] + key[2]) == 0)
            ),
            None,
        )
        if same is None:
            events.append([b])
            curves.append(key)
        else:
            events[same].append(b)
    return events


def _event_text(event: list[Bifurcation], names: Sequence[str]) -> str:
    """One line per event: a single bifurcation as :meth:`Bifurcation.text`; one located
    between several pairs of cells along its curve with the number of places, the first and
    last of them and every change seen."""
    if len(event) == 1:
        return event[0].text(names)
    first, last = event[0], event[-1]
    changes = "; ".join(dict.fromkeys(f"{a} → {b}" for e in event for a, b in e.changes))

    def at(b: Bifurcation) -> str:
        return ", ".join(f"{k} = {v:.7g}" for k, v in b.at.items())

    return (
        f"{first.type} of {first.set} on the curve {first.curve}, located between "
        f"{len(event)} pairs of neighbouring cells, from ({at(first)}) to ({at(last)})"
        + (f": {changes}" if changes else "")
    )


def _changes(a: SweepCell, b: SweepCell) -> list[dict[str, Any]]:
    """The named sets that change kind between two cells: each set of ``a`` is matched to the
    set of ``b`` with its name whose sample point is nearest (the pieces of a line split by kind
    move along it as the kinds trade places)."""
    out = []
    for s in a.record["critical_sets"]:
        same = [t for t in b.record["critical_sets"] if t["name"] == s["name"]]
        if s["name"] == "numerical" or not same:
            continue
        match = min(same, key=lambda t: np.linalg.norm(np.subtract(t["sample"], s["sample"])))
        if match["kind"] != s["kind"]:
            out.append(
                {
                    "set": s["name"],
                    "at": s["sample"],
                    "from": s["kind"],
                    "to": match["kind"],
                    "between": [a.values, b.values],
                }
            )
    return out


def sweep(
    model: ReducedModel,
    axes: Mapping[str, Sequence[float]],
    *,
    values: Mapping[str, float] | None = None,
    region: Region | None = None,
    checkpoint: Path | str | None = None,
    progress: bool | None = None,
    bifurcations: bool = True,
    client: Any = None,
    allow_long: bool = False,
) -> Sweep:
    """Critical sets and basin fractions in every cell of a grid of hyperparameter values.

    Args:
        model: the reduced model.
        axes: the values of each swept hyperparameter, e.g. ``{"p": …, "q": …}``.
        values: the hyperparameters held fixed (every other one of the model).
        region: every cell's basin grid, its plane, box and values off the plane, as for
            :func:`gradflow.basins` (``Region.of(model, …)`` takes the model itself; default
            ``Region.of(model)``: 101 × 101 points of the model's box).
        checkpoint: a folder to write each finished cell to and to resume from.
        progress: a progress bar over the cells (default: shown after 1.5 s).
        bifurcations: follow the isolated critical points from cell to cell and locate the
            bifurcations between cells (:func:`follow`).
        client: a ``dask.distributed.Client`` whose workers compute the cells
            (:func:`gradflow.run_cells`); the result and the checkpoint are those of a run in
            this process.  Following the cells runs here, after them.
        allow_long: run a sweep estimated past 30 min on 2 CPU cores
            (:func:`gradflow._output.memory.sweep_estimate`, the canonical model's rates).

    Returns:
        The cells, in the order of ``itertools.product`` over ``axes``.

    Raises:
        GradflowError: an empty axis, a value outside its domain, an axis that is not a
            hyperparameter, a region over other parameters than the model's, a checkpoint folder of another sweep, or cells
            and a grid whose results need more than half of the memory available now
            (:func:`gradflow.sweep_memory`), or (without ``allow_long``) estimated past 30 min,
            refused before any cell is bound.
    """
    axes = {name: tuple(float(v) for v in vals) for name, vals in axes.items()}
    for name, vals in axes.items():
        if not vals:
            raise GradflowError(f"the sweep over {name} has no values")
    held = dict(values or {})
    if region is None:
        region = Region.of(model)
    region.check_params(model)
    cells = int(np.prod([len(v) for v in axes.values()]))
    nx, ny = region.grid
    sweep_estimate(cells, (nx, ny), model.dim).check(allow_long)
    points = [
        model.validate({**held, **dict(zip(axes, combo))})
        for combo in itertools.product(*axes.values())
    ]
    done = run_cells(
        CellOfSweep(model, region),
        points,
        names=[f"cell-{i:05d}" for i in range(len(points))],
        checkpoint=checkpoint,
        manifest=None if checkpoint is None else _manifest(model, axes, held, region),
        progress=progress,
        desc=f"sweep over {', '.join(axes)}",
        client=client,
    )
    result = Sweep(
        model=model.name,
        axes=axes,
        region=region,
        cells=tuple(
            SweepCell(
                values=json.loads(str(arrays["values"])),
                record=json.loads(str(arrays["record"])),
                labels=arrays["labels"],
                attractor_ids=arrays["attractor_ids"],
            )
            for arrays in done
        ),
    )
    return follow(model, result) if bifurcations else result


@dataclass(frozen=True)
class CellOfSweep:
    """What a sweep computes in each cell (picklable, so that cells run on other processes):
    the model at the cell's validated values (a ``{name: value}`` in the model's order), its
    critical sets and basin map on ``region``, as the arrays a checkpoint keeps."""

    model: ReducedModel
    region: Region

    def __call__(self, values: dict[str, float]) -> dict[str, np.ndarray]:
        with small_tails():
            cell = _cell(BoundModel(self.model, values), self.region)
        return {
            "labels": cell.labels,
            "attractor_ids": cell.attractor_ids,
            "record": np.array(json.dumps(cell.record, ensure_ascii=False)),
            "values": np.array(json.dumps(cell.values)),
        }


def follow(model: ReducedModel, result: Sweep) -> Sweep:
    """The sweep with its branches and bifurcations (:mod:`gradflow._sweep.continuation`) and its
    attractors matched from cell to cell (:mod:`gradflow._sweep.matching`).

    Every isolated critical point of every cell is continued to the neighbouring cells; closed-
    form sets are named without the hyperparameters' values, so a set keeps its name across
    cells.
    """
    first = model.bind(**result.cells[0].values)
    box = result.region.search_box(first)
    points = [_cell_points(cell.record, cell.values, first.dim) for cell in result.cells]
    found = follow_branches(
        lambda values: _between(model, values), points, result.shape, list(result.axes), box
    )
    bifurcations = tuple(
        dataclasses.replace(b, exact=_exact(model, b, box))
        if b.branches
        else _exact_set(model, b)
        if b.set
        else b
        for b in found.bifurcations
    )
    diagonal = float(np.linalg.norm(box[:, 1] - box[:, 0]))
    tracks = match_attractors(
        [cell_attractors(c.record, c.attractor_ids, first.dim) for c in result.cells],
        result.shape,
        diagonal,
    )
    return dataclasses.replace(
        result, branches=found.branches, bifurcations=bifurcations, attractor_tracks=tracks
    )


EXACT_H = 1e-4
"""An exact solution names a located bifurcation when its hyperparameter is this close
(relative to ``1 + |h|``) …"""
EXACT_POINT = 1e-2
"""… and its point within this fraction of the box diagonal."""


def _exact(model: ReducedModel, found: Bifurcation, box: np.ndarray) -> dict[str, str] | None:
    """The exact ``{symbol: value}`` of a bifurcation of isolated points, where
    :func:`singular_critical_points` solves for it, else ``None``."""
    swept = next(h for h in model.hyperparams if h.name == found.axis)
    held = tuple((h, found.at[h.name]) for h in model.hyperparams if h is not swept)
    h = found.at[found.axis]
    diagonal = float(np.linalg.norm(box[:, 1] - box[:, 0]))
    for solution in singular_critical_points(model.params, model.loss, swept, held):
        point = np.array([float(solution[s]) for s in model.params])
        if (
            abs(float(solution[swept]) - h) <= EXACT_H * (1 + abs(h))
            and np.linalg.norm(point - found.point) <= EXACT_POINT * diagonal
        ):
            return {str(s): str(solution[s]) for s in (swept, *model.params)}
    return None


def _exact_set(model: ReducedModel, found: Bifurcation) -> Bifurcation:
    """``found``, a closed-form set changing kind, with the exact value of its hyperparameter
    (and the curve in the others) where :func:`degenerate_set_values` solves for it at a point
    of the set (:func:`_samples`) and a solution is within :data:`EXACT_H` of the located
    value; else unchanged."""
    swept = next(h for h in model.hyperparams if h.name == found.axis)
    held = {h: sp.nsimplify(found.at[h.name], rational=True) for h in model.hyperparams}
    h = held.pop(swept)
    for family, spec in closed_form_specs(model):
        if family != found.set:
            continue
        solution = tuple(spec.solution.items())
        for sample in _samples(model, spec, found.point, {**held, swept: h}):
            for value in degenerate_set_values(model.params, model.loss, solution, sample, swept):
                at = sp.nsimplify(value.subs(held))
                if at.is_real and abs(float(at - h)) <= EXACT_H * (1 + abs(float(h))):
                    curve = f"{swept} = {value}" if value.free_symbols else None
                    return dataclasses.replace(found, exact={str(swept): str(at)}, curve=curve)
    return found


SAMPLES = (0, 1, -1)
"""Free coordinates tried first for the point of a set where its degeneracy is solved: the same
point for every bifurcation of the set, so SymPy solves once per set and hyperparameter."""


def _samples(
    model: ReducedModel, spec: CriticalSetSpec, point: np.ndarray, values: dict[sp.Symbol, Any]
) -> list[tuple[tuple[sp.Symbol, sp.Expr], ...]]:
    """Points of ``spec``'s set at the hyperparameters ``values``, as exact free coordinates:
    the first of :data:`SAMPLES` on it (every free coordinate that value), then ``point``'s free
    coordinates to one decimal, where they satisfy the set's condition."""
    free = [(i, s) for i, s in enumerate(model.params) if s not in spec.solution]

    def on_set(sample: tuple[tuple[sp.Symbol, sp.Expr], ...]) -> bool:
        at = dict(sample)
        at.update({s: v.subs(at).subs(values) for s, v in spec.solution.items()})
        return spec.condition.subs(at).subs(values) is sp.true

    fixed = [tuple((s, sp.Integer(v)) for _, s in free) for v in SAMPLES]
    near = tuple((s, sp.nsimplify(round(float(point[i]), 1), rational=True)) for i, s in free)
    candidates = [c for c in fixed if on_set(c)][:1]
    return candidates + [near] if near not in candidates and on_set(near) else candidates


def _between(model: ReducedModel, values: Mapping[str, float]) -> BoundModel:
    """The model at values between validated cells (a domain is an interval, so they lie in it):
    bound without checking them again, which SymPy makes the slow part of a bisection step."""
    return BoundModel(model, {name: float(values[name]) for name in model.hyperparam_names})


def _cell_points(record: dict[str, Any], values: dict[str, float], dim: int) -> CellPoints:
    """A cell's isolated critical points and closed-form curves, from its record (a record
    checkpointed before records named set families and listed points falls back on the set's
    name and sample)."""
    points, kinds, names, curves = [], [], [], []
    for s in record["critical_sets"]:
        if s["dimension"] == 0:
            for point in s.get("points", [s["sample"]]):
                points.append(point)
                kinds.append(Kind(s["kind"]))
                names.append(s.get("family", s["name"]))
        elif s["name"] != "numerical":
            family = s.get("family", s["name"])
            curves.append((family, s["kind"], np.asarray(s["sample"], dtype=float)))
    return CellPoints(
        values=values,
        points=np.asarray(points, dtype=float).reshape(-1, dim),
        kinds=tuple(kinds),
        names=tuple(names),
        curves=tuple(curves),
    )


def _cell(landscape: Landscape, region: Region) -> SweepCell:
    """One cell: the critical sets in the region's search box, then the basin map."""
    critical = critical_sets(landscape, box=region.search_box(landscape))
    bm = basins(landscape, region=region, critical=critical, progress=False)
    values = dict(landscape.hyperparameters)
    families = landscape.set_families
    record = to_jsonable(
        {
            **values,
            "fractions": bm.fractions(),
            "attractors": [
                {k: v for k, v in a.metadata().items() if k != "equation"} for a in bm.attractors
            ],
            "critical_sets": [
                {
                    "name": s.name,
                    "kind": s.kind,
                    "dimension": s.dimension,
                    "loss": s.loss,
                    "equation": s.equation,
                    "sample": s.sample,
                    "family": families.get(s.name, s.name),
                    "points": [s.component_points(c)[0] for c in range(s.n_components)]
                    if s.dimension == 0
                    else [],
                }
                for s in critical
            ],
            "kinds": sorted({s.kind for s in critical}),
        }
    )
    return SweepCell(
        values=values,
        record=record,
        labels=bm.labels.astype(np.int8),
        attractor_ids=bm.attractor_ids.astype(np.int32),
    )


def _manifest(
    model: ReducedModel,
    axes: dict[str, tuple[float, ...]],
    held: dict[str, float],
    region: Region,
) -> dict[str, Any]:
    """What identifies a sweep in its checkpoint folder: a folder of another sweep is refused."""
    return {
        "model": model.name,
        "loss": str(model.loss),
        "axes": axes,
        "values": held,
        "grid": region.grid[0],
        "box": region.box,
        "fixed": region.fixed,
        "plane": region.plane,
        "versions": package_versions(),
    }


def remove_checkpoint(folder: Path | str) -> None:
    """Delete a checkpoint folder once the sweep's results are written."""
    shutil.rmtree(folder, ignore_errors=True)
