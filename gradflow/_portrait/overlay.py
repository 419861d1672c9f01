"""Paths drawn over a portrait: :class:`Overlay`, and saved runs read from an NPZ file.

The file format (:func:`read_overlays`) is the one ``gradflow train`` writes, so a full-model
training run projected onto the reduced coordinates draws on the reduced model's portrait as it
is; a run of the user's own code is saved in the same two keys:

- ``coords``: the points, shape ``(T, k)`` for one run or ``(n_runs, T, k)`` for several, each
  row one point of the run in the model's own coordinates and units (the values ``--init``
  takes), ``T ≥ 2`` rows in time order;
- ``coordinate_names``: the ``k`` names of the columns, e.g. ``["e", "w"]`` (``gradflow train``
  writes ``["e", "w", "a", "b"]``).

The two columns named like the portrait's plane are drawn; the others are left out (a slice's
fixed values are not compared).  Nothing else in the file is read.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._errors import GradflowError

__all__ = ["COORDS_KEY", "NAMES_KEY", "OVERLAY_STYLES", "Overlay", "read_overlays"]

COORDS_KEY = "coords"
"""The key of an overlay file's points."""
NAMES_KEY = "coordinate_names"
"""The key of an overlay file's column names."""
OVERLAY_STYLES = tuple(
    (color, style) for style in ("-", "--", ":") for color in ("#6b3e26", "#e6007e", "#7f6d00")
)
"""``(color, linestyle)`` of a file's runs in turn: brown, magenta and dark olive, solid, dashed,
dotted.  None is a colour of a kind of critical set, a basin's tint or the separatrices' black;
the lines are drawn cased in white, which sets a magenta run apart from the magenta end of the
level sets' colour map, so a run never reads as a set, a level set or a separatrix.  A file of
more runs draws them all in the first style, under one legend entry."""


@dataclass(frozen=True)
class Overlay:
    """A path drawn over a portrait: a line in ``color`` and ``linestyle`` (matplotlib's), a dot
    at its start and a cross at its end, under ``label`` in the legend.

    Attributes:
        label: the legend's entry (overlays with the same label share one entry).
        path: the points in the portrait's plane coordinates (horizontal, vertical), shape
            ``(n, 2)``, ``n ≥ 1``, finite.
        color: a matplotlib colour.
        linestyle: a matplotlib line style.

    Raises:
        GradflowError: a path that is not ``(n, 2)`` finite numbers.
    """

    label: str
    path: np.ndarray
    color: str = "black"
    linestyle: str = "-"

    def __post_init__(self) -> None:
        path = np.asarray(self.path)
        if path.ndim != 2 or path.shape[1] != 2 or len(path) == 0 or path.dtype.kind not in "iuf":
            raise GradflowError(
                f"overlay {self.label!r}: the path must be numbers of shape (n, 2), got "
                f"{path.dtype} of shape {path.shape}"
            )
        if not np.isfinite(path).all():
            row = int(np.flatnonzero(~np.isfinite(path).all(axis=1))[0])
            raise GradflowError(f"overlay {self.label!r}: row {row} of the path is not finite")
        object.__setattr__(self, "path", path.astype(float))


def read_overlays(path: Path | str, plane: tuple[str, str], *, style: int = 0) -> list[Overlay]:
    """The runs saved in ``path`` (the format of this module's docstring) as overlays of a
    portrait of the ``plane`` (its horizontal and vertical coordinates' names, e.g.
    ``("w", "e")``): one :class:`Overlay` per run, labelled ``"NAME"`` (one run) or
    ``"NAME, run i"`` with the start and end markers explained, styled by
    :data:`OVERLAY_STYLES` from its entry ``style`` on (cyclically: the next file of a portrait
    starts where this one ended).

    Raises:
        GradflowError: a missing or unreadable file, a file that is not NPZ, a missing key,
            ``coords`` not of shape ``(T, k)`` or ``(n_runs, T, k)`` with ``T ≥ 2``, names that
            are not ``k`` distinct strings or do not include both of ``plane``'s, or a
            non-finite value in a drawn column (the run and row named) — one line each.
    """
    path = Path(path)
    name = path.name
    coords, names = _load(path)
    if names.ndim != 1 or names.dtype.kind not in "US" or len(set(names.tolist())) != len(names):
        raise GradflowError(
            f"{path}: {NAMES_KEY!r} must be distinct strings, one per column, e.g. "
            f"{list(plane)!r}; got {names.tolist()!r}"
        )
    if coords.ndim == 2:
        coords = coords[None]
    if coords.ndim != 3 or coords.shape[1] < 2 or coords.shape[2] != len(names):
        raise GradflowError(
            f"{path}: {COORDS_KEY!r} has shape {coords.shape}; it must be (T, {len(names)}) or "
            f"(n_runs, T, {len(names)}) with T ≥ 2 points, one column per name in {NAMES_KEY!r}"
        )
    if coords.dtype.kind not in "iuf":
        raise GradflowError(f"{path}: {COORDS_KEY!r} must be numbers, got {coords.dtype}")
    listed = names.tolist()
    missing = [p for p in plane if p not in listed]
    if missing:
        raise GradflowError(
            f"{path}: its coordinates are named ({', '.join(listed)}); the portrait's plane is "
            f"({', '.join(plane)}), and {', '.join(missing)} is not among them"
        )
    drawn = coords[:, :, [listed.index(p) for p in plane]].astype(float)
    bad = ~np.isfinite(drawn).all(axis=2)
    if bad.any():
        run, row = (int(i) for i in np.argwhere(bad)[0])
        raise GradflowError(
            f"{path}: run {run}, row {row} of {COORDS_KEY!r} is not finite in "
            f"({', '.join(plane)}) ({int(bad.sum())} such rows); remove them"
        )
    n, markers = len(drawn), "• start, × end"
    styles = [OVERLAY_STYLES[(style + i) % len(OVERLAY_STYLES)] for i in range(n)]
    if n == 1:
        return [Overlay(f"{name} ({markers})", drawn[0], *styles[0])]
    if n > len(OVERLAY_STYLES):
        label = f"{name}: {n} runs ({markers})"
        return [Overlay(label, run, *styles[0]) for run in drawn]
    return [Overlay(f"{name}, run {i} ({markers})", run, *styles[i]) for i, run in enumerate(drawn)]


def _load(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """``coords`` and ``coordinate_names`` of the NPZ file ``path``."""
    if not path.is_file():
        what = "is a folder" if path.is_dir() else "does not exist"
        raise GradflowError(f"overlay file {path} {what}")
    if not zipfile.is_zipfile(path):
        with path.open("rb") as file:
            single = file.read(6) == b"\x93NUMPY"
        what = "a single NumPy array, " if single else ""
        raise GradflowError(f"{path} is {what}not an NPZ archive (as np.savez writes)")
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
        raise GradflowError(f"{path} is not a readable NPZ archive ({error})") from None
    with data:
        absent = [k for k in (COORDS_KEY, NAMES_KEY) if k not in data.files]
        if absent:
            raise GradflowError(
                f"{path} has no {' or '.join(map(repr, absent))} (it holds "
                f"{', '.join(data.files) or 'nothing'}); save a run as "
                f"np.savez(path, {COORDS_KEY}=points, {NAMES_KEY}=names)"
            )
        try:
            return data[COORDS_KEY], data[NAMES_KEY]
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as error:
            raise GradflowError(f"{path}: its arrays cannot be read ({error})") from None
