"""Plain-text formatting shared by reports, ``repr`` and the command line: tables and points."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["TABLE_WIDTH", "format_point", "format_table", "shorten"]

TABLE_WIDTH = 100
"""Tables are at most this many characters wide (long cells are shortened with '…')."""


def shorten(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, ending in '…' when cut."""
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def format_point(point: Sequence[float] | np.ndarray, digits: int = 4) -> str:
    """``(0.8163, -1.2)``: a point in the parameter order, ``digits`` significant digits."""
    return "(" + ", ".join(f"{float(v):.{digits}g}" for v in point) + ")"


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
