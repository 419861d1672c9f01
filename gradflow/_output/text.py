"""Plain-text formatting shared by reports, ``repr`` and the command line: tables and points."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["ROUNDING", "TABLE_WIDTH", "format_number", "format_point", "format_table", "shorten"]

TABLE_WIDTH = 100
"""Tables are at most this many characters wide (long cells are shortened with '…')."""


def shorten(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, ending in '…' when cut."""
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


ROUNDING = 4 * float(np.finfo(np.float64).eps)
"""A printed number is rounding noise, and printed as 0, where its magnitude is at most this
share of its scale: ``-1.027e-39`` beside coordinates of order 1, an interval enclosure
``9.9e-324`` wide."""


def format_number(value: float, spec: str, scale: float = 1.0) -> str:
    """``value`` formatted with ``spec`` (``".4g"``), or ``"0"`` where it is rounding noise:
    ``|value| ≤ ROUNDING·scale`` (:data:`ROUNDING`; ``scale`` the size of the quantities it
    stands beside, default 1, the engine's unit of length)."""
    value = float(value)
    return "0" if abs(value) <= ROUNDING * scale else f"{value:{spec}}"


def format_point(point: Sequence[float] | np.ndarray, digits: int = 4, scale: float = 1.0) -> str:
    """``(0.8163, -1.2)``: a point in the parameter order, ``digits`` significant digits; a
    coordinate that is rounding noise beside the largest of them and ``scale`` prints as 0
    (:func:`format_number`): ``(-1.027e-39, -9.66e-40)`` is ``(0, 0)``."""
    values = [float(v) for v in point]
    size = max([scale, *(abs(v) for v in values if np.isfinite(v))])
    return "(" + ", ".join(format_number(v, f".{digits}g", size) for v in values) + ")"


def format_table(
    header: Sequence[str], rows: Sequence[Sequence[Any]], width: int = TABLE_WIDTH
) -> str:
    """A plain-text table with aligned columns, at most ``width`` characters wide.

    When the natural table is wider, the widest column is shortened (its body cells end in '…')
    until it fits or that column is down to 12 characters or its header's width: headers are
    never cut, so a table of wide headers may run past ``width``.
    """
    cells = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    floors = [min(w, max(12, len(h))) for w, h in zip(widths, cells[0])]
    while sum(widths) + 2 * (len(widths) - 1) > width:
        excess = sum(widths) + 2 * (len(widths) - 1) - width
        slack = [w - f for w, f in zip(widths, floors)]
        widest = int(np.argmax(slack))
        if slack[widest] == 0:
            break
        widths[widest] -= min(excess, slack[widest])
    lines = ["  ".join(shorten(c, w).ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
