"""The basin map as a result: :class:`BasinMap` (the :class:`~gradflow.Outcome` each grid point
reached, attractor ids, stopping times and endpoints on a :class:`~gradflow.Region`, with its
table, arrays, metadata and picture).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._critical.attractors import Attractor
from .._critical.sets import CriticalSets
from .._flow.options import FlowOptions
from .._landscape.region import OnRegion, Region
from .._outcome import LABELS, Kind, Outcome
from .._output.text import TABLE_WIDTH, format_point, format_table

__all__ = ["CONFIDENCE", "BasinMap", "FractionError", "OUTCOMES"]


EVIDENCE_NAMES = ("numerical", "proven")
"""The names of the codes of :attr:`BasinMap.evidence`, in code order."""


OUTCOMES = (Outcome.DIVERGED, Outcome.NOT_CONVERGED, Outcome.NON_SMOOTH)
"""The labels of grid points that reached no attractor."""


CONFIDENCE = 0.95
"""The confidence level of the Wilson intervals of :meth:`BasinMap.errors`."""
GRID_DESIGN = (
    "a regular grid of starts, not a random sample: the Wilson interval is the one a random "
    "sample of as many points would give; the cell bracket bounds the area share where the "
    "grid resolves the basin's edge (a cell whose four corners agree lies in one basin); "
    "the change is from the grid of every other point (spacing 2h) to this one (h)"
)
"""What the fraction errors of a basin map assume, said in its JSON and its text."""


@dataclass(frozen=True)
class FractionError:
    """How closely a basin map's grid pins one attractor's share of the box.

    Attributes:
        id: the attractor's id.
        count: grid points that reach it.
        points: grid points in all.
        wilson: the :data:`CONFIDENCE` Wilson score interval of ``count`` out of ``points``
            (``scipy.stats.binomtest(count, points).proportion_ci(method="wilson")``; E. B.
            Wilson, *J. Am. Stat. Assoc.* 22 (1927) 209): the interval of a random sample of
            that size.  A grid is no random sample (its error is a discretization error, of the
            order of the basin edge's length times the spacing), so read it as a sampling-style
            scale (the standard error bSTAB reports is of this kind), not a coverage claim.
        cells: ``(lo, hi)``: the shares of the grid's ``(nx - 1)(ny - 1)`` cells (squares
            between neighbouring points) whose four corners all reach the attractor, and
            whose corners include it.  Where every cell whose corners agree lies in one basin
            (the grid resolves the edge) the area share of the basin in the box lies between
            them; a basin of measure zero has ``lo = 0``.
        coarse: the share on the grid of every other point (spacing doubled; an even number
            of points per axis leaves out the last row or column).
        change: ``count/points - coarse``, the change of the share when the spacing is halved
            from that grid to this one: where the error is proportional to the spacing (a
            straight edge), it estimates this grid's own error.
    """

    id: int
    count: int
    points: int
    wilson: tuple[float, float]
    cells: tuple[float, float]
    coarse: float
    change: float

    @property
    def fraction(self) -> float:
        """``count/points``."""
        return self.count / self.points

    def metadata(self) -> dict[str, Any]:
        """JSON-ready: ``{"id", "fraction", "count", "points", "wilson", "cells", "coarse",
        "change"}``."""
        return {
            "id": self.id,
            "fraction": self.fraction,
            "count": self.count,
            "points": self.points,
            "wilson": list(self.wilson),
            "cells": list(self.cells),
            "coarse": self.coarse,
            "change": self.change,
        }


def fraction_errors(ids: np.ndarray, attractors: list[int]) -> list[FractionError]:
    """The :class:`FractionError` of each attractor in ``attractors`` on the grid of attractor
    ids ``ids`` (shape ``(ny, nx)``, ``-1`` for none)."""
    from scipy.stats import binomtest

    corners = np.stack([ids[:-1, :-1], ids[1:, :-1], ids[:-1, 1:], ids[1:, 1:]])
    coarse = ids[::2, ::2]
    out = []
    for a in attractors:
        count = int(np.sum(ids == a))
        wilson = binomtest(count, ids.size).proportion_ci(CONFIDENCE, method="wilson")
        here = corners == a
        fine, rough = count / ids.size, float(np.mean(coarse == a))
        out.append(
            FractionError(
                id=a,
                count=count,
                points=int(ids.size),
                wilson=(float(wilson.low), float(wilson.high)),
                cells=(float(np.mean(here.all(axis=0))), float(np.mean(here.any(axis=0)))),
                coarse=rough,
                change=fine - rough,
            )
        )
    return out


@dataclass(frozen=True)
class BasinMap(OnRegion):
    """A basin map on a grid of the plane ``(x, y)`` of two parameters.

    Attributes:
        region: the grid of initial points: its plane, box, points per axis and the values of
            the parameters off the plane (a slice of a higher-dimensional flow).
        labels: :class:`~gradflow.Outcome` codes, shape ``(ny, nx)`` (row = y).
        attractor_ids: the id of the attractor each grid point reached, ``-1`` where none
            (diverged, not converged, stuck on a kink), shape ``(ny, nx)``.
        attractors: every attractor, with the share of the grid reaching it as ``fraction``.
        times: flow time at which each trajectory stopped, shape ``(ny, nx)``.
        steps: solver steps taken (accepted and rejected), shape ``(ny, nx)``.
        endpoints: where each trajectory stopped, shape ``(ny, nx, dim)``.
        critical: the classified critical sets used for the labels.
        options: the integration stages used.
        shortcut: whether trajectories were decided below the lowest non-global critical value.
        metric: the metric of the flow (``"euclidean"``, ``"induced"``, or a callable's name).
        evidence: whether each label is proven (1) or numerical (0; :class:`~gradflow.Evidence`),
            shape ``(ny, nx)``; ``None`` where not judged.
        reason_codes: each label's reason, an index into ``reasons``, shape ``(ny, nx)``.
        reasons: the reasons, one line each (``"proven: in the certified region of attraction
            of #1"``, ``"numerical: #0 is a saddle: …"``).
        evidence_seconds: wall time (s) the map spent judging its labels, part of its own time
            (``0`` where not judged): what the evidence costs.
    """

    region: Region
    labels: np.ndarray
    attractor_ids: np.ndarray
    attractors: tuple[Attractor, ...]
    times: np.ndarray
    steps: np.ndarray
    endpoints: np.ndarray
    critical: CriticalSets
    options: tuple[FlowOptions, ...]
    shortcut: bool
    metric: str = "euclidean"
    evidence: np.ndarray | None = None
    reason_codes: np.ndarray | None = None
    reasons: tuple[str, ...] = ()
    evidence_seconds: float = 0.0

    @property
    def xs(self) -> np.ndarray:
        """The grid's x coordinates, shape ``(nx,)`` (endpoints included)."""
        return self.region.xs

    @property
    def ys(self) -> np.ndarray:
        """The grid's y coordinates, shape ``(ny,)``."""
        return self.region.ys

    def fractions(self) -> dict[str, float]:
        """Fraction of grid points per label (every label listed; they sum to 1)."""
        counts = np.bincount(self.labels.ravel(), minlength=len(LABELS))
        return {label: float(c) / self.labels.size for label, c in zip(LABELS, counts)}

    def mask(self, label: str) -> np.ndarray:
        """Boolean map of the grid points with ``label``, shape ``(ny, nx)``."""
        return self.labels == Outcome.of(label)

    def proven_share(self) -> float:
        """The share of the grid whose label is proven (0 where not judged)."""
        return 0.0 if self.evidence is None else float(np.mean(self.evidence == 1))

    def reason_counts(self) -> list[tuple[str, int]]:
        """Each reason with the number of grid points it is given for, most first."""
        if self.reason_codes is None:
            return []
        counts = np.bincount(self.reason_codes.ravel(), minlength=len(self.reasons))
        order = np.argsort(-counts, kind="stable")
        return [(self.reasons[i], int(counts[i])) for i in order if counts[i]]

    def evidence_text(self) -> str:
        """The proven share of the grid and every reason with its count, one line each."""
        if self.evidence is None:
            return "evidence: not judged"
        lines = [f"evidence: {self.proven_share():.1%} of the grid proven"]
        for reason, count in self.reason_counts():
            lines += textwrap.wrap(
                f"  {count:>7d}  {reason}", TABLE_WIDTH, subsequent_indent=" " * 11
            )
        return "\n".join(lines)

    def reached(self) -> list[Attractor]:
        """The attractors some grid point reaches, largest basin first."""
        return sorted((a for a in self.attractors if a.fraction > 0), key=lambda a: -a.fraction)

    def table(self) -> str:
        """The attractors reached and the other outcomes, largest share first, as a text table;
        a basin that is a measure-zero set (grid points on a stable manifold, no 2 × 2 block of
        the grid) is marked, whatever the attractor's kind."""
        names = ", ".join(self.critical.param_names)
        rows = [
            [
                f"#{a.id}",
                a.kind + (" *" if a.measure_zero else ""),
                a.described,
                format_point(a.point),
                f"{a.fraction:.4f}",
                f"{a.proven:.4f}",
            ]
            for a in self.reached()
        ]
        fractions = self.fractions()
        rows += [
            ["", str(label), "", "", f"{fractions[str(label)]:.4f}", f"{proven:.4f}"]
            for label, proven in ((o, self._proven_of(o)) for o in OUTCOMES)
            if fractions[str(label)] > 0
        ]
        header = ["attractor", "kind", "set", f"point ({names})", "fraction", "proven"]
        text = format_table(header, rows)
        starred = [a.kind for a in self.reached() if a.measure_zero]
        if starred and set(starred) <= {Kind.SADDLE, Kind.LOCAL_MAX}:
            text += (
                "\n* measure zero: these grid points lie on a saddle's or maximum's stable manifold"
            )
        elif starred:
            text += "\n* measure zero: these grid points lie on a set of lower dimension"
        return text

    def _proven_of(self, outcome: Outcome) -> float:
        """The share of the grid labelled ``outcome`` (no attractor) with proven evidence."""
        if self.evidence is None:
            return 0.0
        here = (self.labels == outcome) & (self.attractor_ids < 0)
        return float(np.sum(here & (self.evidence == 1))) / self.labels.size

    def errors(self) -> list[FractionError]:
        """The error bars of the shares of the attractors reached, largest share first
        (:class:`FractionError`: a Wilson interval, the boundary-cell bracket, the change from
        the grid of every other point)."""
        return fraction_errors(self.attractor_ids, [a.id for a in self.reached()])

    def error_table(self) -> str:
        """:meth:`errors` as a text table, with what they assume (:data:`GRID_DESIGN`)."""
        ny, nx = self.labels.shape
        rows = [
            [
                f"#{e.id}",
                f"{e.fraction:.4f}",
                f"[{e.wilson[0]:.4f}, {e.wilson[1]:.4f}]",
                f"[{e.cells[0]:.4f}, {e.cells[1]:.4f}]",
                f"{e.change:+.4f}",
            ]
            for e in self.errors()
        ]
        header = ["attractor", "fraction", f"{CONFIDENCE:.0%} Wilson", "cells", "2h → h"]
        coarse = f"{(nx + 1) // 2} × {(ny + 1) // 2}"
        note = (
            f"{nx * ny} grid points, {(nx - 1) * (ny - 1)} cells, the grid of every other "
            f"point {coarse}: {GRID_DESIGN}"
        )
        return f"{format_table(header, rows)}\n{textwrap.fill(note, TABLE_WIDTH)}"

    def error_metadata(self) -> dict[str, Any]:
        """JSON-ready :meth:`errors`: ``{"design", "confidence", "attractors":
        [FractionError.metadata(), …]}``."""
        return {
            "design": GRID_DESIGN,
            "confidence": CONFIDENCE,
            "attractors": [e.metadata() for e in self.errors()],
        }

    def __repr__(self) -> str:
        return self.text()

    def text(self) -> str:
        """The grid, its plane and box (each range named), then :meth:`table`."""
        ny, nx = self.labels.shape
        return (
            f"BasinMap {nx} × {ny} of the ({self.plane[0]}, {self.plane[1]}) plane"
            f"{self.region.fixed_text()}: {self.region.box_text()}\n{self.table()}\n"
            f"{self.evidence_text()}"
        )

    def csv_table(self) -> tuple[list[str], list[list[Any]]]:
        """The map flat, one row per start (row-major over the grid: ``y`` outer, ``x`` inner),
        for pandas or R: the start's coordinates (one column per parameter), its ``label``
        (kind or outcome), its ``attractor`` id (empty for none), the stopping ``time`` and,
        where judged, its ``evidence`` (``proven`` or ``numerical``).  Written beside the NPZ."""
        names = list(self.region.names)
        starts = self.region.points().reshape(-1, len(names))
        labels = np.array(LABELS)[self.labels.reshape(-1)]
        ids = self.attractor_ids.reshape(-1)
        times = self.times.reshape(-1)
        header = [*names, "label", "attractor", "time"]
        evidence = None
        if self.evidence is not None:
            header.append("evidence")
            evidence = np.array(EVIDENCE_NAMES)[self.evidence.reshape(-1)]
        rows = []
        for k in range(len(starts)):
            row = [*(repr(float(v)) for v in starts[k]), str(labels[k])]
            row += ["" if ids[k] < 0 else int(ids[k]), repr(float(times[k]))]
            if evidence is not None:
                row.append(str(evidence[k]))
            rows.append(row)
        return header, rows

    def arrays(self) -> dict[str, np.ndarray]:
        """``x`` and ``y`` (the grid's axes), ``labels`` with their ``label_names``,
        ``attractor_ids``, ``times``, ``steps`` (each of shape ``(ny, nx)``) and ``endpoints``
        (shape ``(ny, nx, dim)``); where judged, ``evidence`` (codes of ``evidence_names``) and
        ``reason_codes`` (indices into ``reasons``), each of shape ``(ny, nx)``."""
        judged = (
            {}
            if self.evidence is None
            else {
                "evidence": self.evidence,
                "evidence_names": np.array(EVIDENCE_NAMES),
                "reason_codes": self.reason_codes,
                "reasons": np.array(self.reasons),
            }
        )
        return {
            **judged,
            "x": self.xs,
            "y": self.ys,
            "labels": self.labels,
            "label_names": np.array(LABELS),
            "attractor_ids": self.attractor_ids,
            "times": self.times,
            "steps": self.steps,
            "endpoints": self.endpoints,
        }

    def metadata(self) -> dict[str, Any]:
        """JSON-ready: the region (``plane``, ``box``, ``grid``, ``fixed``), the ``fractions`` by
        label, every attractor with its share, the ``solver`` stages, ``shortcut`` and
        ``metric``, and the ``evidence``: the proven share and each reason with its count
        (the error bars of the shares: :meth:`error_metadata`)."""
        return {
            "evidence": {
                "proven": self.proven_share(),
                "reasons": [{"reason": r, "count": c} for r, c in self.reason_counts()],
            },
            **self.region.metadata(),
            "fractions": self.fractions(),
            "attractors": [a.metadata() for a in self.attractors],
            "solver": [o.metadata() for o in self.options],
            "shortcut": self.shortcut,
            "metric": self.metric,
        }

    def title(self) -> str:
        """``canonical, p = 0.7, q = 0.6: basins in the (w, e) plane`` (the landscape, the
        values fixed off the plane, the plane)."""
        plane = f"({self.plane[0]}, {self.plane[1]})"
        of = self.critical.title or "the loss"
        return f"{of}{self.region.fixed_text()}: basins in the {plane} plane"

    def figure(self, title: str | None = None) -> Any:
        """A new matplotlib figure of the map: each attractor's basin in a tint of its kind's
        colour, the legend listing each with its share; ``title`` (default :meth:`title`)."""
        from .._output.draw import basin_figure

        return basin_figure(self, LABELS, title or self.title())

    def _repr_png_(self) -> bytes:
        from .._output.draw import figure_png

        return figure_png(self.figure())
