"""Critical sets kept between processes, for a model declared in SymPy.

Finding and classifying the critical sets of a reduced model (closed forms sampled and checked,
a numerical search, Hessians, interval proofs of kinds and of completeness) is the same work
every time the same model is asked in the same box; a warm ``gradflow portrait`` spent about a
third of its time above its import floor on it.  :func:`kept` reads the result an earlier
process wrote, and otherwise computes it and writes it, as ``<cache folder>/critical/<sha256>
.pickle`` (:func:`gradflow._compiled.store.kept_file`; ``GRADFLOW_CACHE_DIR=""`` turns it off).

The file is named by the sha256 of everything the result depends on:

- the whole declared model (:func:`described`): its loss, parameters, hyperparameters and their
  domains, declared sets, lower bound, completeness, bounds, invariants, references, notes and
  names, each SymPy object by its ``srepr``; only its ``full`` model is left out, which the
  search never reads (it serves fate maps and flows in the induced metric);
- the hyperparameters' values, the box and the search's options;
- the time budget of its symbolic steps, and gradflow's source, the library versions and
  JAX's settings (:func:`gradflow._compiled.store.environment`).

A change in any of them is another file: a miss, never a wrong answer.  Nothing is kept once a
symbolic step of the process has run out of its budget
(:func:`gradflow._symbolic.kept.budgeted_file`): what was computed then may have taken a
fallback that a faster machine would not.  Only a
:class:`~gradflow.BoundModel` of a :class:`~gradflow.ReducedModel` itself is kept, since any
other landscape (a loss written in JAX, a subclass) has code the key cannot see.  A file that
cannot be read is computed again and rewritten; one that cannot be written is skipped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import sympy as sp

from .._landscape.base import Landscape
from .._symbolic.kept import kept_value, written
from .._symbolic.model import BoundModel, ReducedModel
from .sets import CriticalSets

__all__ = ["described", "kept"]

UNREAD = frozenset({"full"})
"""Fields of a :class:`~gradflow.ReducedModel` that critical sets never read."""


def kept(
    landscape: Landscape, options: tuple[Any, ...], compute: Callable[[], CriticalSets]
) -> CriticalSets:
    """``compute()``, read from the cache folder where an earlier process computed the critical
    sets of the same model, values, box and ``options`` (hashable plain values), else computed
    and written there (:func:`gradflow._symbolic.kept.kept_value`)."""
    parts = _parts(landscape, options)
    if parts is None:
        return compute()
    return kept_value("critical", parts, compute, CriticalSets)


def _parts(landscape: Landscape, options: tuple[Any, ...]) -> list[str] | None:
    """What the file is named by, besides the environment, or ``None`` where the landscape
    cannot be described."""
    if type(landscape) is not BoundModel or type(landscape.model) is not ReducedModel:
        return None
    model = described(landscape.model)
    if model is None:
        return None
    return [
        model,
        repr(sorted((name, float(value)) for name, value in landscape.values.items())),
        repr(tuple(o.tobytes().hex() if isinstance(o, np.ndarray) else o for o in options)),
    ]


def described(value: Any) -> str | None:
    """A text that names ``value`` completely: SymPy objects by ``srepr``, plain values by
    ``repr``, mappings with their items sorted, sequences item by item, and dataclasses
    (:class:`~gradflow.ReducedModel`, its declared sets) by type and fields, less
    :data:`UNREAD`; ``None`` where some part is none of these (a function, an arbitrary
    object), which the key cannot see into."""
    if isinstance(value, sp.Basic):
        return written(value)
    if value is None or isinstance(value, str | bool | int | float):
        return repr(value)
    if isinstance(value, Mapping):
        items = [(described(k), described(v)) for k, v in value.items()]
        if any(k is None or v is None for k, v in items):
            return None
        return "{" + ", ".join(f"{k}: {v}" for k, v in sorted(items)) + "}"
    if isinstance(value, tuple | list):
        inner = [described(v) for v in value]
        return None if None in inner else "(" + ", ".join(inner) + ")"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = [
            (f.name, described(getattr(value, f.name)))
            for f in dataclasses.fields(value)
            if f.name not in UNREAD
        ]
        if any(text is None for _, text in fields):
            return None
        kind = type(value)
        return f"{kind.__module__}.{kind.__qualname__}({', '.join(f'{n}={t}' for n, t in fields)})"
    return None
