"""The one exception type of gradflow's argument checks."""

from __future__ import annotations

__all__ = ["GradflowError"]


class GradflowError(ValueError):
    """Invalid input: the message is one line naming the value received and the valid range.

    The CLI prints the message and exits with status 2, writing no output file.
    """
