"""``gradflow bench NAME``: run a benchmark (listed in ``gradflow.analysis.BENCHES``)."""

from __future__ import annotations

from ._registry import Command


def SUBCOMMANDS() -> dict[str, Command]:  # noqa: N802 - the protocol name of nested commands
    from ._registry import BENCHES

    return BENCHES
