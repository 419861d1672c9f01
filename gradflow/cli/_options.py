"""What the commands share: the model and its plane, the ``--out``/``--json`` report, tables.

Model commands (``portrait``, ``critical``, ``basins``, ``flow``) pick a registered model by name
with its hyperparameters; commands that write a record take ``--out PATH.npz`` (its ``.json``
beside it) and ``--json``, check the path before any work and report in one way
(:func:`save_and_report`).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ._models import add_model_arguments, bound_model, precheck

__all__ = [
    "add_box_arguments",
    "add_json_argument",
    "add_model_arguments",
    "add_output_arguments",
    "bound_model",
    "check_init",
    "check_out",
    "fixed_of",
    "precheck_model",
    "print_json",
    "print_notes",
    "print_report",
    "region_of",
    "save_and_report",
    "wrote",
]


def add_box_arguments(parser: argparse.ArgumentParser) -> None:
    """``--box XMIN XMAX YMIN YMAX``, ``--plane X Y`` and ``--fixed NAME=VALUE …``."""
    parser.add_argument(
        "--box",
        nargs=4,
        type=float,
        metavar=("XMIN", "XMAX", "YMIN", "YMAX"),
        help="the plane's box, horizontal axis first; for the canonical model WMIN WMAX EMIN EMAX (default: the model's ranges)",
    )
    parser.add_argument(
        "--plane",
        nargs=2,
        metavar=("X", "Y"),
        help="parameters on the axes (default: the model's plane, (w, e) for canonical)",
    )
    parser.add_argument(
        "--fixed",
        nargs="*",
        default=[],
        metavar="NAME=VALUE",
        help="values of parameters off the plane (default 0)",
    )


def precheck_model(
    args: argparse.Namespace, *, grid: int | None = None, init: Sequence[float] | None = None
) -> None:
    """Refuse bad model input before the model is imported (a registered model from the
    registry, a ``--loss`` by its grammar; a plugin is checked when it is built): hyperparameter
    ranges, the plane, ``--grid``, ``--box``, ``--fixed`` and the length of ``--init``.

    Raises:
        GradflowError: naming the option.
    """
    from gradflow import GradflowError
    from gradflow._landscape.region import check_region

    from ._sizes import check_grid

    entry = precheck(args)
    if grid is not None:
        check_grid(grid, len(entry.params) if entry else 2, "--grid")
    if getattr(args, "metric", None) == "induced" and (
        args.loss is not None or (entry is not None and not entry.full)
    ):
        what = "a loss given with --loss" if args.loss is not None else f"model {args.model!r}"
        raise GradflowError(
            f"--metric induced: {what} has no full model to induce a metric from; leave out "
            "--metric for the Euclidean flow, or choose a model with a full model "
            "(gradflow models lists them)"
        )
    if entry is None:
        return
    if init is not None:
        check_init(init, entry.params)
    if hasattr(args, "plane"):
        plane = tuple(args.plane) if args.plane else entry.plane
        check_region(entry.params, plane, box=args.box, fixed=fixed_of(args) if grid else None)
        owner = "the loss" if args.loss is not None else f"model {args.model or 'canonical'!r}"
        for name in fixed_of(args):
            if name not in entry.params:
                raise GradflowError(
                    f"unknown parameter {name!r} of {owner}; "
                    f"parameters are {', '.join(entry.params)}"
                )


def check_init(init: Sequence[float], names: Sequence[str]) -> None:
    """``--init``: one finite number per parameter."""
    from gradflow import GradflowError

    if len(init) != len(names):
        raise GradflowError(
            f"--init needs {len(names)} numbers ({' '.join(names)}), got {len(init)}"
        )
    if not all(math.isfinite(v) for v in init):
        raise GradflowError(f"--init {' '.join(map(str, init))}: every value must be finite")


def region_of(args: argparse.Namespace, landscape: Any) -> Any:
    """The :class:`gradflow.Region` of ``--grid``, ``--box``, ``--fixed`` and ``--plane`` on
    ``landscape``.

    Raises:
        GradflowError: an invalid region (one line naming the value).
    """
    from gradflow import Region

    return Region.of(
        landscape,
        args.grid,
        None if args.box is None else tuple(args.box),
        fixed_of(args),
        tuple(args.plane) if args.plane else None,
    )


def fixed_of(args: argparse.Namespace) -> dict[str, float]:
    """``--fixed b=0.5`` as ``{"b": 0.5}``.

    Raises:
        GradflowError: an entry is not ``NAME=NUMBER`` or not finite.
    """
    from gradflow import GradflowError

    out = {}
    for item in args.fixed:
        name, sep, value = item.partition("=")
        try:
            out[name] = float(value)
        except ValueError:
            sep = ""
        if not sep:
            raise GradflowError(f"--fixed {item!r}: expected NAME=NUMBER, e.g. b=0.5")
        if not math.isfinite(out[name]):
            raise GradflowError(f"--fixed {item} must be a finite number")
    return out


def print_json(data: Any) -> None:
    """One JSON object on stdout (NumPy values converted, non-finite numbers as null)."""
    from gradflow import to_jsonable

    json.dump(to_jsonable(data), sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")


def print_notes(notes: Sequence[str]) -> None:
    """The model's notes at its hyperparameters, one ``note: …`` line each."""
    for note in notes:
        print(f"note: {note}")


def print_report(args: argparse.Namespace, report: Any) -> None:
    """``report.metadata()`` as one JSON object with ``--json``, else ``report.text()``."""
    if args.json:
        print_json(report.metadata())
    else:
        print(report.text())


def add_metric_argument(parser: argparse.ArgumentParser) -> None:
    """``--metric euclidean|induced``: the metric ``G`` of the flow ``dθ/dt = -G⁻¹∇L``."""
    parser.add_argument(
        "--metric",
        choices=("euclidean", "induced"),
        default="euclidean",
        help="metric of the flow: euclidean (the paper's), or induced by the embedding into the "
        "full model, G = JᵀJ (models with a full model; default euclidean)",
    )


def add_json_argument(
    parser: argparse.ArgumentParser, text: str = "one JSON object on stdout"
) -> None:
    """``--json``: print the report as JSON (``text`` says what)."""
    parser.add_argument("--json", action="store_true", help=text)


def add_output_arguments(
    parser: argparse.ArgumentParser,
    default: str,
    json_help: str = "one JSON object on stdout",
    picture: bool = False,
) -> None:
    """``--out PATH`` (an NPZ, its ``.json`` — and with ``picture`` its ``.png`` — beside it;
    default ``default``) and ``--json``."""
    beside = "the .json and the .png go" if picture else "the .json goes"
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(default),
        help=f"NPZ path (default {default}); {beside} beside it",
    )
    add_json_argument(parser, json_help)


def check_out(args: argparse.Namespace, what: str) -> None:
    """Check ``--out`` before any work: an ``.npz`` in an existing folder.

    Raises:
        GradflowError: another suffix or a missing folder (``what`` names the record).
    """
    from gradflow import check_output

    check_output(args.out, (".npz",), what, "--out")


def wrote(paths: Sequence[Path]) -> str:
    """``wrote a.npz, a.json``."""
    return "wrote " + ", ".join(str(p) for p in paths)


def save_and_report(
    args: argparse.Namespace,
    result: Any,
    *,
    metadata: Mapping[str, Any] | None = None,
    record: Mapping[str, Any] | None = None,
    text: str | None = None,
    notes: Sequence[str] = (),
    list_written: bool = False,
    dpi: int = 130,
) -> list[Path]:
    """The commands' one writer: ``result`` (a :class:`gradflow.Result`) to ``--out`` — its NPZ,
    its JSON and its picture beside them, atomically (:func:`gradflow.save_result`) — then the
    report on stdout.

    Args:
        args: the command's arguments (``--out``, ``--json``).
        result: what to write.
        metadata: the JSON's content (default ``result.metadata()``).
        record: what ``--json`` prints (default the JSON's content).
        text: what is printed otherwise (default ``result.text()``), then ``notes`` and the
            ``wrote …`` line.
        notes: the model's notes, one ``note: …`` line each.
        list_written: with ``--json``, add ``"written"``, the paths.
        dpi: the picture's resolution.

    Returns:
        The paths written.
    """
    from gradflow import save_result

    metadata = result.metadata() if metadata is None else metadata
    written = save_result(result, args.out, metadata, dpi)
    if args.json:
        paths = {"written": [str(p) for p in written]} if list_written else {}
        print_json({**(metadata if record is None else record), **paths})
    else:
        print(result.text() if text is None else text)
        print_notes(notes)
        print(wrote(written))
    return written
