"""Grids of independent cells: each cell computed once, checkpointed, returned in order.

A sweep over hyperparameters and a fate map (one full-model run per cell) are grids of cells
that share nothing while they run.  :func:`run_cells` computes every cell with a module-level
function ``compute(cell) -> arrays`` and returns the results in the cells' order.  With a
checkpoint folder each finished cell is written there at once (``<name>.npz``, atomically), and
a run interrupted and started again with the same manifest loads the finished cells and computes
only the rest, so its results are identical to an uninterrupted run's.

``compute`` and the cells must be picklable (a function defined at a module's top level, or an
instance of a class defined there; plain data as cells): that is what lets the same grid run in
other processes.  With a ``dask.distributed`` client the cells not yet checkpointed run on its
workers (:mod:`gradflow._cells.cluster`) and each is written here as it arrives, so the files, the
results and the resume point are those of the serial run.
"""

from __future__ import annotations

import contextlib
import functools
import math
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import GradflowError
from .._output.io import atomic_outputs, open_checkpoint, write_npz
from .._output.progress import progress_bar, weighted_bar

__all__ = ["Cells", "run_cells"]

MANIFEST = "cells.json"
"""The file in a checkpoint folder that says which computation its cells belong to."""

Cells = list[dict[str, np.ndarray]]
"""What :func:`run_cells` returns: one mapping of arrays per cell, in the cells' order."""


def run_cells(
    compute: Callable[[Any], Mapping[str, Any]],
    cells: Sequence[Any],
    *,
    names: Sequence[str] | None = None,
    checkpoint: Path | str | None = None,
    manifest: Mapping[str, Any] | None = None,
    progress: bool | None = None,
    desc: str | None = None,
    client: Any = None,
    work: Sequence[float] | None = None,
) -> Cells:
    """Compute every cell of a grid, resuming from a checkpoint folder.

    Args:
        compute: a module-level function of one cell returning its arrays by name (NumPy arrays
            or numbers; every cell the same names).
        cells: the cells, picklable plain data, in the order of the results.
        names: each cell's file stem in the checkpoint folder (default ``cell00000``, …);
            distinct, letters, digits, ``.``, ``_`` and ``-`` only.
        checkpoint: a folder to write each finished cell to and resume from (created if
            missing); ``None`` keeps nothing.
        manifest: what identifies the computation (JSON-ready); a folder holding another
            manifest is refused.  Required with ``checkpoint``.
        progress: a progress bar over cells: always (``True``), never (``False``), or after
            1.5 s (``None``); unless ``False``, a run that resumes says so first on stderr
            (``resuming: 53 of 361 cells done (kept in fate.runs/)``).
        desc: the bar's label.
        client: a ``dask.distributed.Client``: the cells run on its workers, and each
            finished cell is written by this process as it arrives; a
            worker that dies loses only its unfinished cells, which run again elsewhere.
            ``None`` (the default) computes them here, one after the other, without Dask.
        work: each cell's estimated work (> 0, any unit: seconds at measured rates, runs of
            equal cost), for cells of very different cost: the progress bar then advances by
            work, and its time left is the work still to do at the rate measured so far
            (:func:`gradflow._output.progress.weighted_bar`); ``None`` counts cells alike.

    Returns:
        One ``dict`` of arrays per cell, in the order of ``cells``.

    Raises:
        GradflowError: no cells, names not one per cell or not distinct or not plain, work
            not one positive number per cell, a checkpoint without a manifest, or a folder of
            another computation.
        Exception: the first error a cell's ``compute`` raised.
    """
    if not cells:
        raise GradflowError("no cells to compute: the grid is empty")
    names = [f"cell{i:05d}" for i in range(len(cells))] if names is None else list(names)
    _check_names(names, len(cells))
    if work is not None and (
        len(work) != len(cells) or not all(math.isfinite(w) and w > 0 for w in work)
    ):
        raise GradflowError(f"work: one number > 0 per cell ({len(cells)}), got {len(work)}")
    folder = None
    if checkpoint is not None:
        if manifest is None:
            raise GradflowError("a checkpoint folder needs a manifest naming the computation")
        folder = open_checkpoint(
            Path(checkpoint), MANIFEST, manifest, "the cells of another computation"
        )
    out: list[dict[str, np.ndarray] | None] = [
        None if folder is None else load_cell(folder, name) for name in names
    ]
    pending = [i for i, done in enumerate(out) if done is None]
    if folder is not None and pending and len(pending) < len(cells) and progress is not False:
        done = len(cells) - len(pending)
        print(f"resuming: {done} of {len(cells)} cells done (kept in {folder}/)", file=sys.stderr)
    finished = [i for i, result in enumerate(out) if result is not None]
    bar: Any = (
        progress_bar(len(cells), "cell", progress, desc, done=len(finished))
        if work is None
        else weighted_bar(work, "cell", progress, desc, done=finished)
    )

    def advance(*done: int) -> None:
        """Count the cells of these indices as done."""
        bar.update(len(done)) if work is None else bar.update(*done)

    with bar:
        if pending:
            todo = [cells[i] for i in pending]
            if client is None:
                results = _here(compute, todo)
            else:
                from .cluster import results_on

                results = results_on(client, functools.partial(cell_arrays, compute), todo)
            with contextlib.closing(results):
                for k, arrays in results:
                    if folder is not None:
                        store_cell(folder, names[pending[k]], arrays)
                    out[pending[k]] = arrays
                    advance(pending[k])
    return [done for done in out if done is not None]


def _here(
    compute: Callable[[Any], Mapping[str, Any]], cells: Sequence[Any]
) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
    """The cells computed in this process, in order."""
    for k, cell in enumerate(cells):
        yield k, cell_arrays(compute, cell)


def cell_arrays(compute: Callable[[Any], Mapping[str, Any]], cell: Any) -> dict[str, np.ndarray]:
    """``compute(cell)`` as NumPy arrays by name (what a worker sends back, and what a serial
    run keeps)."""
    return {k: np.asarray(v) for k, v in compute(cell).items()}


def store_cell(folder: Path, name: str, arrays: Mapping[str, np.ndarray]) -> None:
    """Write one finished cell as ``folder/name.npz``, atomically."""
    with atomic_outputs(folder / f"{name}.npz") as (temp,):
        write_npz(temp, arrays)


def load_cell(folder: Path, name: str) -> dict[str, np.ndarray] | None:
    """A finished cell from ``folder``, or ``None`` if it has not been written."""
    path = folder / f"{name}.npz"
    if not path.exists():
        return None
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def _check_names(names: Sequence[str], count: int) -> None:
    if len(names) != count:
        raise GradflowError(f"{len(names)} cell names for {count} cells: give one per cell")
    if len(set(names)) != count:
        raise GradflowError("cell names must be distinct")
    plain = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
    bad = next((n for n in names if not n or not set(n) <= plain), None)
    if bad is not None:
        raise GradflowError(f"cell name {bad!r}: use letters, digits, '.', '_' and '-' only")
