"""Shared test set-up: float64 JAX (imported through gradflow), fixed seeds, the CLI in-process."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import gradflow  # noqa: F401  (enables float64 before any test builds an array)
from gradflow.cli import main


@pytest.fixture
def rng() -> np.random.Generator:
    """A NumPy generator with a fixed seed."""
    return np.random.default_rng(20241129)


@pytest.fixture(autouse=True)
def _no_persistent_compilation_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """CLI runs in tests do not write compiled programs to the user's cache folder."""
    monkeypatch.setenv("GRADFLOW_CACHE_DIR", "")


@dataclass(frozen=True)
class CliRun:
    """Exit status, stdout and stderr of one ``gradflow`` run."""

    code: int
    out: str
    err: str

    def __iter__(self):
        """Unpack as ``code, out, err = cli(...)``."""
        return iter((self.code, self.out, self.err))


class Cli:
    """``gradflow`` run in-process, in an empty working folder (``folder``)."""

    def __init__(self, folder: Path, capsys: pytest.CaptureFixture) -> None:
        self.folder = folder
        self._capsys = capsys

    def __call__(self, *argv: str) -> CliRun:
        try:
            code = main(list(argv))
        except SystemExit as stop:
            code = stop.code
        out, err = self._capsys.readouterr()
        return CliRun(int(code), out, err)

    def assert_rejected(self, argv: list[str], named: str) -> None:
        """Bad input: exit status 2, one line on stderr containing ``named``, no file written.

        A progress bar redrawn with carriage returns before the error is part of that line.
        """
        run = self(*argv)
        lines = run.err.strip().split("\n")
        assert run.code == 2, run
        assert len(lines) == 1 and named in lines[0], lines
        assert list(self.folder.iterdir()) == []


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> Cli:
    """Run the CLI with ``tmp_path`` as the working folder."""
    monkeypatch.chdir(tmp_path)
    return Cli(tmp_path, capsys)
