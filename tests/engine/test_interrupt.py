"""Ctrl-C: a real SIGINT at any moment ends ``gradflow`` with exit status 130 and no output file;
an interrupted sweep keeps its finished cells, says so, and the same command resumes.

Each run is a fresh process.  The signal is sent to the process by itself (``os.kill``) at a
chosen moment: when a function of that moment is entered (start-up, writing a file, storing a
sweep cell), or from a timer thread a while after one is entered, so that it lands while the
main thread is inside compiled code (compiling, integrating).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

LOSS = ["--loss", "(x**2 - 1)**2 + y**2", "--params", "x,y"]
DRIVER = textwrap.dedent(
    """
    import importlib, os, signal, sys, threading
    module_name, function, when = sys.argv[1], sys.argv[2], sys.argv[3]
    module = importlib.import_module(module_name)
    original = getattr(module, function)

    def interrupt():
        os.kill(os.getpid(), signal.SIGINT)

    def patched(*args, **kwargs):
        if when == "before":
            interrupt()
        elif when != "after":
            threading.Timer(float(when), interrupt).start()
        result = original(*args, **kwargs)
        if when == "after":
            interrupt()
        return result

    setattr(module, function, patched)
    from gradflow.cli import main
    sys.exit(main(sys.argv[4:]))
    """
)


def interrupted(folder: Path, where: str, when: str, *argv: str) -> subprocess.CompletedProcess:
    """Run ``gradflow argv`` in ``folder``, sending SIGINT when ``where`` (``module:function``)
    is entered (``when="before"``), when it returns (``"after"``), or a number of seconds after
    it is entered (``"0.5"``)."""
    module, function = where.split(":")
    env = {**os.environ, "GRADFLOW_CACHE_DIR": ""}
    command = [sys.executable, "-c", DRIVER, module, function, when, *argv]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=600)


def assert_interrupted(run: subprocess.CompletedProcess, folder: Path) -> None:
    """Exit status 130, one line saying so — a line of its own, not the tail of a progress
    bar's — no traceback, nothing left in ``folder``."""
    assert run.returncode == 130, run.stderr
    assert "interrupted" in run.stderr and "Traceback" not in run.stderr, run.stderr
    (said,) = [line for line in run.stderr.split("\n") if "interrupted" in line]
    assert said.startswith("gradflow"), run.stderr
    assert sorted(p.name for p in folder.iterdir()) == []


MOMENTS = [
    pytest.param("gradflow.cli._setup:configure_jax", "before", id="start-up"),
    pytest.param("gradflow._output.io:write_npz", "before", id="writing"),
    pytest.param("gradflow:basins", "0.5", id="compiling", marks=pytest.mark.slow),
    pytest.param(
        "gradflow._flow.batched:_run_stage", "before", id="integrating", marks=pytest.mark.slow
    ),
]


@pytest.mark.parametrize("where, when", MOMENTS)
def test_ctrl_c_at_any_moment_exits_130_and_writes_nothing(where, when, tmp_path):
    run = interrupted(tmp_path, where, when, "basins", *LOSS, "--grid", "41")
    assert_interrupted(run, tmp_path)


@pytest.mark.slow
def test_an_interrupted_sweep_keeps_its_cells_and_the_same_command_resumes(tmp_path):
    argv = ["sweep", "--loss", "(x**2 - a)**2 + y**2", "--params", "x,y"]
    argv += ["--hyper", "a=0.5,1,2", "--grid", "5"]
    run = interrupted(tmp_path, "gradflow._cells.cells:store_cell", "after", *argv)
    assert run.returncode == 130 and "Traceback" not in run.stderr, run.stderr
    (said,) = [line for line in run.stderr.split("\n") if "interrupted" in line]
    assert said.startswith("gradflow sweep: interrupted"), run.stderr
    assert "kept in sweep.cells/" in run.stderr and "run the same command again" in run.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["sweep.cells"]
    assert len(list((tmp_path / "sweep.cells").glob("*.npz"))) == 1
    env = {**os.environ, "GRADFLOW_CACHE_DIR": ""}
    command = [sys.executable, "-c", "import sys; from gradflow.cli import main; sys.exit(main())"]
    done = subprocess.run([*command, *argv], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.json", "sweep.npz"]
