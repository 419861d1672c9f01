"""The basin map as a result: :class:`Label` (what a grid point reached), :class:`BasinMap` (the
labels, attractor ids, stopping times and endpoints on a :class:`~gradflow.Region`, with its
table, arrays, metadata and picture).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._attractors import Attractor
from ._critical_sets import CriticalSets
from ._errors import GradflowError
from ._integrate import FlowOptions
from ._region import OnRegion, Region
from ._text import format_point, format_table

__all__ = ["BasinMap", "LABELS", "Label", "OUTCOMES"]


class Label(enum.IntEnum):
    """What a grid point of a basin map reached: the kind of its attractor (:data:`KINDS`), or
    why it reached none.  The value is the code :attr:`BasinMap.labels` stores; ``str(label)``
    is its name in every output (``"global_min"``, …, ``"non_smooth"``)."""

    GLOBAL_MIN = 0
    LOCAL_MIN = 1
    SADDLE = 2
    LOCAL_MAX = 3
    DEGENERATE = 4
    DIVERGED = 5
    """The trajectory left every bound (``‖θ‖₂`` beyond the divergence radius) or became
    non-finite."""
    NOT_CONVERGED = 6
    """The budget ran out first."""
    NON_SMOOTH = 7
    """Stuck on a kink of a non-smooth loss."""

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def of(cls, name: str) -> Label:
        """The label named ``name`` (a kind, ``"diverged"``, ``"not_converged"`` or
        ``"non_smooth"``).

        Raises:
            GradflowError: an unknown name.
        """
        try:
            return cls[name.upper()]
        except KeyError:
            raise GradflowError(
                f"unknown basin label {name!r}; labels are {', '.join(LABELS)}"
            ) from None


LABELS = tuple(str(label) for label in Label)
"""The names of the :class:`Label` values in code order: ``BasinMap.labels`` indexes it."""
OUTCOMES = (Label.DIVERGED, Label.NOT_CONVERGED, Label.NON_SMOOTH)
"""The labels of grid points that reached no attractor."""


@dataclass(frozen=True)
class BasinMap(OnRegion):
    """A basin map on a grid of the plane ``(x, y)`` of two parameters.

    Attributes:
        region: the grid of initial points: its plane, box, points per axis and the values of
            the parameters off the plane (a slice of a higher-dimensional flow).
        labels: :class:`Label` codes, shape ``(ny, nx)`` (row = y).
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
        return self.labels == Label.of(label)

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
                a.set,
                format_point(a.point),
                f"{a.fraction:.4f}",
            ]
            for a in self.reached()
        ]
        fractions = self.fractions()
        rows += [
            ["", str(label), "", "", f"{fractions[str(label)]:.4f}"]
            for label in OUTCOMES
            if fractions[str(label)] > 0
        ]
        text = format_table(["attractor", "kind", "set", f"point ({names})", "fraction"], rows)
        starred = [a.kind for a in self.reached() if a.measure_zero]
        if starred and set(starred) <= {"saddle", "local_max"}:
            text += (
                "\n* measure zero: these grid points lie on a saddle's or maximum's stable manifold"
            )
        elif starred:
            text += "\n* measure zero: these grid points lie on a set of lower dimension"
        return text

    def __repr__(self) -> str:
        return self.text()

    def text(self) -> str:
        """The grid, its plane and box (each range named), then :meth:`table`."""
        ny, nx = self.labels.shape
        return (
            f"BasinMap {nx} × {ny} of the ({self.plane[0]}, {self.plane[1]}) plane"
            f"{self.region.fixed_text()}: {self.region.box_text()}\n{self.table()}"
        )

    def arrays(self) -> dict[str, np.ndarray]:
        """``x`` and ``y`` (the grid's axes), ``labels`` with their ``label_names``,
        ``attractor_ids``, ``times``, ``steps`` (each of shape ``(ny, nx)``) and ``endpoints``
        (shape ``(ny, nx, dim)``)."""
        return {
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
        ``metric``."""
        return {
            **self.region.to_dict(),
            "fractions": self.fractions(),
            "attractors": [a.to_dict() for a in self.attractors],
            "solver": [o.to_dict() for o in self.options],
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
        from ._draw import basin_figure

        return basin_figure(self, LABELS, title or self.title())

    def _repr_png_(self) -> bytes:
        from ._draw import figure_png

        return figure_png(self.figure())
