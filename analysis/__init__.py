"""Analyses that join a model with the engine (``gradflow.analysis``).

``COMMANDS`` and ``BENCHES`` list the command-line entries analyses provide; each names the
module implementing it (``add_arguments(parser)`` and ``run(args)``), imported only when used.
"""

from __future__ import annotations

from gradflow.cli._registry import Command

__all__ = ["BENCHES", "COMMANDS"]

COMMANDS: dict[str, Command] = {}

BENCHES = {
    "basins": Command(
        "gradflow.analysis.bench_basins",
        "400 × 400 basin map of the canonical flow against scipy solve_ivp (RK45, LSODA)",
    ),
}
