"""Atomic output files with their metadata: a figure, an NPZ of its data, a JSON of how it was made.

Every output is written to a temporary file in the target folder and renamed into place only
once all of a result's files are complete, so an interrupted or failed run leaves no partial
output behind.
"""

from __future__ import annotations

import contextlib
import csv
import importlib.metadata
import json
import os
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .._errors import GradflowError

__all__ = [
    "FORMATS",
    "Result",
    "save_result",
    "atomic_outputs",
    "check_folder",
    "check_output",
    "open_checkpoint",
    "package_versions",
    "save_with_data",
    "to_jsonable",
    "write_figure",
    "write_json",
    "write_npz",
    "writing",
]

FORMATS = (".png", ".pdf", ".svg")
"""Figure formats the engine writes, chosen by the file suffix."""


@runtime_checkable
class Result(Protocol):
    """What every result of the engine and of the analyses provides, and what
    :func:`save_result` writes: a basin map, critical sets, a trajectory, a portrait, a sweep,
    a fate map, a training run, an experiment's report."""

    def arrays(self) -> dict[str, np.ndarray]:
        """The result's arrays by name (what the NPZ holds)."""
        ...

    def metadata(self) -> dict[str, Any]:
        """How the result was computed and what it found, JSON-ready (what the JSON holds)."""
        ...

    def text(self) -> str:
        """The result as plain text for a terminal, lines at most 100 characters."""
        ...

    def figure(self) -> Any:
        """A new matplotlib figure of the result, or ``None`` for a result drawn only within a
        paper figure (:mod:`gradflow.systems.figures`)."""
        ...


_PACKAGES = (
    "gradflow",
    "jax",
    "jaxlib",
    "diffrax",
    "equinox",
    "optax",
    "sympy",
    "numpy",
    "scipy",
    "matplotlib",
)


def package_versions() -> dict[str, str]:
    """Installed versions of gradflow and the libraries its results depend on."""
    out = {}
    for name in _PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def to_jsonable(value: Any) -> Any:
    """Convert NumPy scalars/arrays, tuples and paths (recursively) into JSON types."""
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def check_output(path: Path, suffixes: tuple[str, ...], what: str, option: str = "out") -> None:
    """Check an output path before any work is done: its format and that its folder exists and
    can be written.

    Args:
        path: the path the user gave.
        suffixes: the accepted suffixes, lower case with the dot (``(".npz",)``).
        what: what is written there, for the message (``"the basin map"``).
        option: how the message names the path: the argument's name (``out``) from Python, the
            option (``--out``) on the command line.

    Raises:
        GradflowError: an unsupported suffix, a missing or unwritable folder, or a path that is a
            folder, in one line naming the path.
    """
    path = Path(path)
    if path.is_dir():
        raise GradflowError(f"{option} {str(path)!r} is a folder, not a file")
    if path.suffix.lower() not in suffixes:
        raise GradflowError(
            f"{option} {str(path)!r}: {what} is written as {' or '.join(suffixes)}, "
            f"not {path.suffix or '(no suffix)'!r}"
        )
    if not path.parent.is_dir():
        raise GradflowError(f"{option} {str(path)!r}: folder {str(path.parent)!r} does not exist")
    _check_writable(path.parent, f"{option} {str(path)!r}")


def check_folder(folder: Path | str, option: str = "folder") -> Path:
    """``folder`` as a path, checked before any work to be an existing folder that can be
    written.

    Args:
        folder: the folder the user gave.
        option: how the message names it (``folder`` from Python, ``--out`` on the command
            line).

    Raises:
        GradflowError: it is not an existing folder, or files cannot be created in it.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise GradflowError(f"{option} {str(folder)!r} is not an existing folder")
    _check_writable(folder, f"{option} {str(folder)!r}")
    return folder


def _check_writable(folder: Path, named: str) -> None:
    """Create and remove a temporary file in ``folder``: the one test of writability that
    holds for every user (permission bits say nothing to root, nor about a read-only mount).

    Raises:
        GradflowError: ``named: cannot write in …``.
    """
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        raise GradflowError(
            f"{named}: cannot write in {str(folder)!r}: no file can be created there (the "
            f"system says: {error.strerror}); write to a folder of your own"
        ) from None


_WRITING = [0]
"""How many :func:`atomic_outputs` are open (see :func:`writing`)."""


def writing() -> bool:
    """Whether outputs are being written now (an :func:`atomic_outputs` is open): an interrupt
    must then unwind through it, so that its temporary files are removed."""
    return _WRITING[0] > 0


@contextlib.contextmanager
def atomic_outputs(*paths: Path | str) -> Iterator[list[Path]]:
    """Yield temporary paths to write; on success rename each onto its target, else delete all.

    Raises:
        GradflowError: a target folder does not exist.
    """
    targets = [Path(p) for p in paths]
    for target in targets:
        if not target.parent.is_dir():
            raise GradflowError(f"output folder {str(target.parent)!r} does not exist")
    temps = []
    _WRITING[0] += 1
    try:
        for target in targets:
            fd, name = tempfile.mkstemp(
                prefix=f".{target.name}.", suffix=target.suffix, dir=target.parent
            )
            os.close(fd)
            temps.append(Path(name))
        yield temps
        umask = os.umask(0)
        os.umask(umask)
        for temp, target in zip(temps, targets):
            os.chmod(temp, 0o666 & ~umask)
            os.replace(temp, target)
    finally:
        for temp in temps:
            temp.unlink(missing_ok=True)
        _WRITING[0] -= 1


def open_checkpoint(folder: Path, name: str, manifest: Mapping[str, Any], holds: str) -> Path:
    """Create a checkpoint folder stamped with ``manifest`` (written atomically as the JSON file
    ``name`` in it), or check that an existing folder carries the same manifest, so that a rerun
    resumes only work of the same computation.

    Args:
        folder: the checkpoint folder.
        name: the manifest's file name in it.
        manifest: what identifies the computation (made JSON-ready with :func:`to_jsonable`).
        holds: what a foreign folder holds, for the error ("the cells of a different sweep").

    Raises:
        GradflowError: the folder's manifest is another computation's.
    """
    record = to_jsonable(dict(manifest))
    path = folder / name
    if path.exists() and not _writable(folder):
        raise GradflowError(f"checkpoint folder {str(folder)!r} cannot be written")
    if path.exists():
        if json.loads(path.read_text()) != record:
            raise GradflowError(
                f"checkpoint folder {str(folder)!r} holds {holds}; "
                "remove it or choose another output"
            )
        return folder
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with atomic_outputs(path) as (temp,):
            temp.write_text(json.dumps(record, indent=1, ensure_ascii=False))
    except OSError as error:
        raise GradflowError(
            f"checkpoint folder {str(folder)!r} cannot be written ({error.strerror})"
        ) from None
    return folder


def _writable(folder: Path) -> bool:
    """Whether a file can be created in ``folder`` (see :func:`_check_writable`)."""
    try:
        _check_writable(folder, "")
    except GradflowError:
        return False
    return True


def write_npz(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    """Write arrays to ``path`` (already a temporary file from :func:`atomic_outputs`) as a
    compressed NPZ whose bytes depend on the arrays alone (every member's zip time stamp is
    1980-01-01), so the same computation writes the same file."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, value in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(value), allow_pickle=False)


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Write JSON (NumPy values converted) with the package versions added.

    No time stamp: the same computation writes byte-identical files.
    """
    record = {**to_jsonable(data), "versions": package_versions()}
    Path(path).write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")


def save_with_data(
    out: Path | str,
    write_main: Callable[[Path], None] | None,
    arrays: Mapping[str, np.ndarray],
    metadata: Mapping[str, Any],
    table: tuple[Sequence[str], Sequence[Sequence[Any]]] | None = None,
) -> list[Path]:
    """Write ``out`` (via ``write_main``, if given), ``out.npz`` and ``out.json`` atomically,
    and with ``table`` (a header and its rows) ``out.csv``.

    The data files sit beside the main file with its stem: ``portrait.png`` → ``portrait.npz``,
    ``portrait.json``.  With ``write_main=None``, ``out`` itself is the NPZ.

    Returns:
        The paths written.
    """
    out = Path(out)
    npz, meta = out.with_suffix(".npz"), out.with_suffix(".json")
    targets = [npz, meta] if write_main is None else [out, npz, meta]
    if table is not None:
        targets.append(out.with_suffix(".csv"))
    with atomic_outputs(*targets) as temps:
        if write_main is not None:
            write_main(temps[0])
        data = temps[-3:] if table is not None else temps[-2:]
        write_npz(data[0], arrays)
        write_json(data[1], metadata)
        if table is not None:
            with open(data[2], "w", newline="", encoding="utf-8") as handle:
                writer = csv.writer(handle)
                writer.writerow(table[0])
                writer.writerows(table[1])
    return targets


def save_result(
    result: Result,
    out: Path | str,
    metadata: Mapping[str, Any] | None = None,
    dpi: int = 130,
) -> list[Path]:
    """Write a result's NPZ, its JSON and its picture together, atomically (all or none), and a
    flat CSV beside them where the result gives one (``csv_table()``: a header and its rows).

    With ``out`` a figure path (a suffix of :data:`FORMATS`), the picture is ``out`` and the
    ``.npz`` and ``.json`` go beside it; with ``out`` an ``.npz``, the picture (if the result has
    one) is the ``.png`` beside it.  The figure is drawn before any file is opened, so an error
    in drawing leaves nothing behind.

    Args:
        result: what to write.
        out: the figure or NPZ path.
        metadata: the JSON's content (default ``result.metadata()``); package versions are added.
        dpi: the picture's resolution (raster formats).

    Returns:
        The paths written, the picture first.

    Raises:
        GradflowError: a figure path for a result without a picture, or a missing folder.
    """
    out = Path(out)
    figure = result.figure()
    record = result.metadata() if metadata is None else metadata
    rows = getattr(result, "csv_table", None)
    table = None if rows is None else rows()
    if out.suffix.lower() in FORMATS:
        if figure is None:
            raise GradflowError(f"out {str(out)!r}: this result has no picture; write an .npz")
        picture = out
    elif figure is not None:
        picture = out.with_suffix(".png")
    else:
        return save_with_data(out, None, result.arrays(), record, table)
    kind = picture.suffix.lower()[1:]
    return save_with_data(
        picture, lambda path: write_figure(figure, path, kind, dpi), result.arrays(), record, table
    )


def write_figure(figure: Any, path: Path | str, kind: str, dpi: int) -> None:
    """Write a matplotlib ``figure`` as ``kind`` (``"png"``, ``"pdf"`` or ``"svg"``) at ``dpi``.

    A PNG is drawn once: ``figure.savefig`` draws a figure with a layout engine twice, once
    with the renderer's output switched off to run the layout and once for the pixels, and each
    pass lays the figure out and resamples its images again (about a third of writing the main
    job's portrait).  Here the figure is drawn once on an Agg canvas at ``dpi``, its layout
    engine running in that draw, and the canvas's pixels are written as ``savefig`` writes
    them (``matplotlib.image.imsave``, the same PNG metadata): the file is byte for byte the
    one ``savefig`` writes (``tests/test_results.py``).  The figure's ``savefig.*`` rc settings
    (face colour, transparency, tight bounding box) are not applied; gradflow sets none.
    Vector formats go through ``savefig``.
    """
    if kind != "png":
        figure.savefig(path, format=kind, dpi=dpi)
        return
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.image import imsave

    canvas, before = figure.canvas, figure.dpi
    try:
        figure.set_dpi(dpi)
        agg = FigureCanvasAgg(figure)
        agg.draw()
        imsave(path, agg.buffer_rgba(), format="png", origin="upper", dpi=dpi)
    finally:
        figure.set_dpi(before)
        figure.set_canvas(canvas)
