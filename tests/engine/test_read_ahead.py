"""Executables read ahead: a job run again loads, in a second thread as it starts, the
executables its last run used, and its programs take them there, computing the same bits.

Each "process" is a fresh build of the same programs (``compile_loss.__wrapped__``) with the
read-ahead's per-process state emptied, against one cache folder."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp

from gradflow._compiled import read_ahead as ahead
from gradflow._symbolic.compiled import compile_loss

X, Y, A = sp.symbols("x y a", real=True)
POINTS = np.array([[0.5, -1.0], [2.0, 0.25], [-1.5, 3.0]])
H = np.array([3.0])
LOSS = X**2 + A * Y**4
"""``∇L = (2x, 4a·y³)``, ``∇²L = diag(2, 12a·y²)``."""


@pytest.fixture
def process(tmp_path, monkeypatch):
    """A new "process" each call: empty read-ahead state, nothing registered to run at exit."""
    monkeypatch.setenv("GRADFLOW_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(ahead.atexit, "register", lambda *args: None)

    def new() -> None:
        monkeypatch.setattr(ahead, "_AHEAD", {})
        monkeypatch.setattr(ahead, "_USED", {})

    return new


def _run(job: str):
    """Start the read-ahead of ``job``, build the loss's programs and call them."""
    worker = ahead.read_ahead(job)
    if worker is not None:
        worker.join()
    built = compile_loss.__wrapped__((X, Y), (A,), LOSS)
    outs = [np.asarray(built.grad(POINTS, H)), np.asarray(built.hessian(POINTS, H))]
    return worker, built, outs


def test_a_job_run_again_takes_the_executables_its_last_run_used(process) -> None:
    process()
    worker, first, outs = _run("portrait --p 0.7")
    assert worker is None and (first.grad.compiles, first.hessian.compiles) == (1, 1)
    ahead.remember("portrait --p 0.7")
    process()
    worker, again, repeat = _run("portrait --p 0.7")
    assert worker is not None and not ahead._AHEAD  # both were read ahead and taken
    assert (again.grad.loads, again.hessian.loads) == (1, 1)
    assert (again.grad.compiles, again.hessian.compiles) == (0, 0)
    for a, b in zip(outs, repeat):
        assert a.tobytes() == b.tobytes()
    x, y = POINTS[:, 0], POINTS[:, 1]
    np.testing.assert_allclose(repeat[0], np.stack([2 * x, 12 * y**3], axis=1), rtol=1e-15)
    np.testing.assert_allclose(repeat[1][:, 1, 1], 36 * y**2, rtol=1e-15)


def test_another_job_reads_nothing_ahead(process) -> None:
    process()
    _run("portrait --p 0.7")
    ahead.remember("portrait --p 0.7")
    process()
    worker, again, _ = _run("portrait --p 0.2")
    assert worker is None and (again.grad.loads, again.grad.compiles) == (1, 0)


def test_a_listed_file_that_is_gone_is_made_again(process) -> None:
    """The list names the gradient's file and the Hessian's; the Hessian's is deleted: the
    gradient is taken from the read-ahead, the Hessian compiled again, both right."""
    process()
    _, first, _ = _run("job")
    ahead.remember("job")
    listed = ahead.job_list("job").read_text().split()
    assert len(listed) == 2
    (signature,) = first.hessian._programs
    first.hessian._file(signature).unlink()
    process()
    _, again, repeat = _run("job")
    assert (again.grad.loads, again.hessian.compiles) == (1, 1)
    np.testing.assert_allclose(repeat[1][:, 0, 0], 2.0, rtol=1e-15)


SPY = """
import importlib.abc, sys, threading

imported_in_thread = []


class Spy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if threading.current_thread() is not threading.main_thread():
            imported_in_thread.append(name)
        return None


sys.meta_path.insert(0, Spy())
from gradflow._compiled import read_ahead as ahead

worker = ahead.read_ahead("job")
import gradflow.systems.markov  # the main thread imports on, as a command does
worker.join()
loaded = sum(future.result() is not None for future in ahead._AHEAD.values())
print(loaded, imported_in_thread)
"""


def test_the_read_ahead_thread_imports_nothing(process, tmp_path) -> None:
    """In a fresh interpreter, the thread loads both listed executables without importing a
    module: its imports would race the main thread's, which can hand either one a
    half-initialized module (an ``ImportError`` that failed a command)."""
    process()
    _run("job")
    ahead.remember("job")
    env = {**os.environ, "GRADFLOW_CACHE_DIR": str(tmp_path / "cache")}
    child = subprocess.run(
        [sys.executable, "-c", SPY], env=env, capture_output=True, text=True, check=True
    )
    assert child.stdout == "2 []\n"
