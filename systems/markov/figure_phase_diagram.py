"""Local to Global: the phase diagram of the canonical model over the switching square.

For every ``(p, q)`` of a grid in ``(0, 1)²``, the basin map of the canonical flow ``L(e, w)`` on
``[-3, 3]²``: (a) the share of initializations that reach the global minimum Γ* (the bigram
solution), with the line ``p + q = 1`` where the chain is i.i.d. and the bifurcations located
between cells along every row and column (the halves of ``e = 0`` trade kinds there); (b) the
loss gap between the local and the global minimum, ``H(π) - H`` (the entropy rate ``H``), in
nats; (c) the share that reaches the local minimum on ``e = 0`` (the unigram solution).

The sweep is the expensive part; ``Config(sweep="sweep.npz")`` draws a sweep saved earlier
(``gradflow sweep --model canonical --p … --q …``, or this figure's own ``.npz``) instead of
computing one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from gradflow import GradflowError, Kind, sweep_memory

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["NAME", "SIZE", "Config", "Data", "compute", "draw", "load_sweep"]

NAME = "local-to-global-phase-diagram"
SIZE = (15.0, 6.6)


@dataclass(frozen=True)
class Config:
    """Settings of the figure.

    Raises:
        GradflowError: fewer than 2 cells per axis, a grid below 2, or a range not inside
            ``(0, 1)``.
    """

    cells: int = field(default=19, metadata={"help": "values of p and of q"})
    lo: float = field(default=0.05, metadata={"help": "smallest p and q"})
    hi: float = field(default=0.95, metadata={"help": "largest p and q"})
    grid: int = field(default=51, metadata={"help": "basin grid points per axis in every cell"})
    sweep: str = field(
        default="",
        metadata={
            "help": "a saved sweep of the canonical model over p and q (its .npz, the .json "
            "beside it) to draw instead of computing one; --cells, --lo, --hi, --grid are "
            "then the sweep's",
            "metavar": "NPZ",
        },
    )

    SIZES: ClassVar[tuple[str, ...]] = ("cells", "grid")
    """The fields that set the memory the figure needs."""

    def __post_init__(self) -> None:
        if self.cells < 2 or self.grid < 2:
            raise GradflowError(f"cells = {self.cells} and grid = {self.grid} must be ≥ 2")
        if not 0 < self.lo < self.hi < 1:
            raise GradflowError(f"need 0 < lo < hi < 1, got lo = {self.lo}, hi = {self.hi}")

    def memory_bytes(self) -> float:
        """The sweep's every cell kept and one basin map at a time
        (:func:`gradflow.sweep_memory`; nothing when a saved sweep is drawn)."""
        return 0.0 if self.sweep else sweep_memory(self.cells**2, self.grid, 2)


@dataclass(frozen=True)
class Data:
    """A sweep over ``(p, q)`` (its arrays and record, as :class:`gradflow.Sweep` writes them)
    and the closed-form loss gap on its cells.

    Attributes:
        sweep_arrays: :meth:`gradflow.Sweep.arrays`: ``fractions`` of shape
            ``(len(p), len(q), len(LABELS))``, ``label_names``, ``axis_p``, ``axis_q``, …
        sweep_record: :meth:`gradflow.Sweep.metadata`: model, axes, grid, box, cells.
        gap: ``H(π) - H`` per cell, nats, shape ``(len(p), len(q))``.
    """

    config: Config
    sweep_arrays: dict[str, np.ndarray]
    sweep_record: dict[str, Any]
    gap: np.ndarray

    @property
    def p(self) -> np.ndarray:
        """The values of p, shape ``(len(p),)``."""
        return np.asarray(self.sweep_arrays["axis_p"])

    @property
    def q(self) -> np.ndarray:
        """The values of q, shape ``(len(q),)``."""
        return np.asarray(self.sweep_arrays["axis_q"])

    def share(self, kind: Kind) -> np.ndarray:
        """The share of each cell's grid reaching ``kind``, shape ``(len(p), len(q))``."""
        names = [str(n) for n in self.sweep_arrays["label_names"]]
        return self.sweep_arrays["fractions"][..., names.index(kind)]

    def arrays(self) -> dict[str, np.ndarray]:
        """The sweep's arrays, the shares reaching each kind and the loss gap, over ``(p, q)``."""
        return {
            **self.sweep_arrays,
            "global_share": self.share(Kind.GLOBAL_MIN),
            "local_share": self.share(Kind.LOCAL_MIN),
            "loss_gap": self.gap,
        }

    def metadata(self) -> dict[str, Any]:
        """The settings, the sweep's cells and where critical sets change kind."""
        return {
            "config": vars(self.config),
            **self.sweep_record,
            "source": "Makkuva et al., Local to Global (NeurIPS 2024): how the basins depend on p, q",
        }


def load_sweep(path: Path | str) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The arrays and record of a sweep saved by ``gradflow sweep`` (or by this figure).

    Raises:
        GradflowError: the ``.npz`` or the ``.json`` beside it is missing or unreadable, or the
            sweep is not of the canonical model over exactly ``p`` and ``q`` on the plane.
    """
    npz = Path(path)
    meta = npz.with_suffix(".json")
    try:
        with np.load(npz, allow_pickle=False) as stored:
            arrays = {k: stored[k] for k in stored.files}
        record = json.loads(meta.read_text())
    except (OSError, ValueError) as error:
        raise GradflowError(
            f"--sweep {str(npz)!r}: cannot read it and {meta.name}: {error}"
        ) from None
    axes = list(record.get("axes", {}))
    if record.get("model") != "canonical" or axes != ["p", "q"] or record.get("fixed"):
        raise GradflowError(
            f"--sweep {str(npz)!r} is a sweep of {record.get('model')!r} over {axes}; "
            "the phase diagram needs the canonical model swept over p and q"
        )
    missing = {"fractions", "label_names", "axis_p", "axis_q"} - set(arrays)
    if missing:
        raise GradflowError(f"--sweep {str(npz)!r} lacks the arrays {sorted(missing)}")
    keep = (
        *("model", "axes", "grid", "box", "plane", "fixed", "cells", "transitions"),
        *("branches", "bifurcations", "attractor_tracks"),
    )
    return arrays, {k: record[k] for k in keep if k in record}


def compute(config: Config = Config()) -> Data:
    """Sweep the canonical model over ``config.cells²`` values of ``(p, q)``, or read the sweep
    ``config.sweep``; the loss gap in closed form on its cells."""
    from gradflow import Region, sweep

    from .reduced import canonical_model

    model = canonical_model()
    if config.sweep:
        arrays, record = load_sweep(config.sweep)
    else:
        values = np.linspace(config.lo, config.hi, config.cells)
        result = sweep(model, {"p": values, "q": values}, region=Region.of(model, grid=config.grid))
        arrays, record = result.arrays(), result.metadata()
    gap = np.array(
        [
            [_loss_gap(model.bind(p=float(p), q=float(q)).references) for q in arrays["axis_q"]]
            for p in arrays["axis_p"]
        ]
    )
    return Data(config=config, sweep_arrays=arrays, sweep_record=record, gap=gap)


def _loss_gap(references: dict[str, float]) -> float:
    """``H(π) - H``: the unigram solution's loss above the entropy rate (nats)."""
    return references["unigram_loss"] - references["entropy_rate"]


def _edges(values: np.ndarray) -> tuple[float, float]:
    """The outer edges of cells centred on evenly spaced ``values``."""
    half = (values[-1] - values[0]) / max(len(values) - 1, 1) / 2
    return float(values[0] - half), float(values[-1] + half)


def draw(data: Data, fig: Figure) -> None:
    """Three heat maps over ``(p, q)``, ``p`` horizontal as in ``gradflow sweep``'s picture,
    each with its colour bar, the line ``p + q = 1`` and the bifurcations the sweep located
    between its cells (where the halves of ``e = 0`` trade kinds); the shares are written per
    side of the line (:func:`_side_shares`), the loss gap has contour lines."""
    axes = fig.subplots(1, 3)
    p, q = data.p, data.q
    extent = (*_edges(p), *_edges(q))
    share = "share of the box's starts (fraction, 0–1)"
    panels = (
        (
            "(a) share reaching the global minimum Γ*",
            data.share(Kind.GLOBAL_MIN),
            "Greens",
            (0, 1),
            share,
        ),
        (
            "(b) loss gap H(π) − H, local − global minimum",
            data.gap,
            "Purples",
            None,
            "H(π) − H (nats)",
        ),
        (
            "(c) share reaching the local minimum (unigram)",
            data.share(Kind.LOCAL_MIN),
            "Blues",
            (0, 1),
            share,
        ),
    )
    for ax, (title, values, cmap, limits, unit) in zip(axes, panels):
        image = ax.imshow(
            values.T,
            origin="lower",
            extent=extent,
            cmap=cmap,
            vmin=None if limits is None else limits[0],
            vmax=None if limits is None else limits[1],
            aspect="equal",
        )
        if limits is None and min(values.shape) >= 2 and np.ptp(values) > 0:
            lines = ax.contour(p, q, values.T, levels=6, colors="black", linewidths=0.5)
            ax.clabel(lines, fontsize=6, fmt="%.2g")
        elif limits is not None:
            _side_shares(ax, p, q, values)
        ax.plot([0, 1], [1, 0], color="#c0202a", lw=1.4, ls="--", label="p + q = 1 (i.i.d. chain)")
        located = data.sweep_record.get("bifurcations", [])
        ax.plot(
            [b["at"]["p"] for b in located],
            [b["at"]["q"] for b in located],
            "x",
            color="black",
            ms=5,
            mew=1.2,
            label="bifurcations located by the sweep",
        )
        ax.set_xlim(extent[:2])
        ax.set_ylim(extent[2:])
        ax.set_xlabel("$p$")
        ax.set_ylabel("$q$", rotation=0, ha="right")
        ax.set_title(title, fontsize=9)
        fig.colorbar(image, ax=ax, location="bottom", shrink=0.8, fraction=0.05, label=unit)
    axes[0].legend(loc="lower left", fontsize=7, framealpha=0.9)
    record = data.sweep_record
    fig.suptitle(
        f"Canonical model L(e, w): basins of {_box_text(record['box'])} over the switching square "
        f"({len(p)} × {len(q)} values of (p, q), {record['grid']}² initializations each)",
        fontsize=11,
    )


def _side_shares(ax: Any, p: np.ndarray, q: np.ndarray, share: np.ndarray) -> None:
    """The share on each side of ``p + q = 1``, written in the middle of its triangle.

    A share is constant on each side (the basin boundary is a level set of the conserved
    energy, which does not depend on ``p`` or ``q``), so it is a number per side, not a field
    for contour lines: contours of a step along the diagonal, interpolated on the cells, are a
    staircase that shows the grid, not the answer.  Cells within half a cell of the line are
    left out of the medians."""
    pp, qq = np.meshgrid(p, q, indexing="ij")
    half = 0.5 * max(float(np.diff(p).mean()), float(np.diff(q).mean()))
    for side, (x, y) in ((1, (0.72, 0.72)), (-1, (0.24, 0.24))):
        cells = side * (pp + qq - 1) > half
        if cells.any():
            ax.text(
                x,
                y,
                f"{np.median(share[cells]):.3g}",
                transform=ax.transAxes,
                ha="center",
                va="center",
                fontsize=11,
                bbox={"boxstyle": "round", "fc": "white", "ec": "0.5", "alpha": 0.85},
            )


def _box_text(box: list[float]) -> str:
    """``[-3, 3]²`` for a square box, else ``[-3, 3] × [-2, 2]``."""
    x, y = f"[{box[0]:g}, {box[1]:g}]", f"[{box[2]:g}, {box[3]:g}]"
    return f"{x}²" if x == y else f"{x} × {y}"
