"""Symbolic results kept between processes.

What SymPy works out about a loss (where its gradient jumps, the surfaces where its Hessian
jumps, its critical sets, proofs) is the same in every process that asks about the same loss,
and a warm command would otherwise pay for it again: SymPy's derivatives of the canonical loss
alone cost about a tenth of a second.  A result is kept as ``<cache folder>/<folder>/<sha256>
.pickle``, the sha256 of everything it depends on (:func:`budgeted_file`): a change in any of them
is another file, a miss and never a wrong answer.  ``GRADFLOW_CACHE_DIR=""`` turns it off.
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import sympy as sp

from .._compiled.files import write_atomically
from .._compiled.store import kept_file
from .budget import any_ran_out, symbolic_seconds

__all__ = ["budgeted_file", "kept_value", "written"]

T = TypeVar("T")

UNREADABLE = (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError)
"""What reading a kept file may raise where it is missing, cut short or stale: the result is
then computed again and the file rewritten."""


@functools.lru_cache(maxsize=256)
def written(expr: sp.Basic) -> str:
    """``sp.srepr(expr)``, the text that names a SymPy object completely, worked out once per
    object and process: every kept result and stored program of a loss is named by it, and the
    ``srepr`` of a model's loss costs milliseconds."""
    return sp.srepr(expr)


def budgeted_file(folder: str, parts: Sequence[str], suffix: str) -> Path | None:
    """:func:`~gradflow._compiled.store.kept_file` for a result that symbolic steps under a
    time budget feed (SymPy's solves, interval forms, proofs): named by the budget too
    (:func:`~gradflow._symbolic.budget.symbolic_seconds`), and ``None`` once a step of this
    process has run out of its budget (:func:`~gradflow._symbolic.budget.any_ran_out`), since a
    result that took a fallback depends on the machine's speed.  Check ``any_ran_out()`` again
    before writing what was computed meanwhile."""
    if any_ran_out():
        return None
    return kept_file(folder, [f"symbolic budget {symbolic_seconds()!r} s", *parts], suffix)


def kept_value(
    folder: str, parts: Sequence[str], compute: Callable[[], T], kind: type | None = None
) -> T:
    """``compute()``, read from ``<cache folder>/<folder>`` where an earlier process computed it
    for the same ``parts`` (texts naming everything it depends on, :func:`budgeted_file`), else
    computed and written there unless a symbolic step ran out of its budget meanwhile.  A file
    that cannot be read, or holds no ``kind`` where one is given, is computed again and
    rewritten."""
    path = budgeted_file(folder, parts, ".pickle")
    if path is not None:
        try:
            found = pickle.loads(path.read_bytes())
        except UNREADABLE:
            pass
        else:
            if kind is None or isinstance(found, kind):
                return found
    value = compute()
    if path is not None and not any_ran_out():
        write_atomically(path, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    return value
