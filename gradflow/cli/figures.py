"""``gradflow figures NAME``: regenerate a paper figure (listed in ``gradflow.figures.FIGURES``)."""

from __future__ import annotations

from ._registry import Command


def SUBCOMMANDS() -> dict[str, Command]:  # noqa: N802 - the protocol name of nested commands
    from ._registry import FIGURES

    return FIGURES
