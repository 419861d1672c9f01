"""Progress bars (tqdm) for long batched computations.

The plain text bar (``tqdm.std``), not ``tqdm.auto``: in a notebook without ipywidgets the
latter prints a warning naming the installation's path into the cell's output.
"""

from __future__ import annotations

from tqdm.std import tqdm

__all__ = ["progress_bar"]

DELAY_S = 1.5
"""A bar appears only once a computation has run this long (seconds)."""


def progress_bar(
    total: int, unit: str, enabled: bool | None = None, desc: str | None = None
) -> tqdm:
    """A tqdm bar on stderr: always shown if ``enabled``, never if ``False``, after 1.5 s if ``None``."""
    return tqdm(
        total=total,
        unit=unit,
        desc=desc,
        disable=enabled is False,
        delay=0.0 if enabled else DELAY_S,
        leave=False,
        dynamic_ncols=True,
    )
