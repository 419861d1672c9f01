"""Executables read ahead: a command loads, as it starts, the executables its last run used.

A warm ``gradflow portrait`` loads about a dozen executables from the store
(:mod:`gradflow._compiled.store`), 2 MB in all, each when its program is first called; loading
one is mostly XLA's work outside the interpreter lock (about 35 ms for the 600 kB basin-map
round).  :func:`read_ahead` starts loading them in a second thread as the command starts, while
the main thread is still importing its libraries, so that each is ready, or on its way, when
its program is first called (:func:`taken`).  The thread imports nothing: the modules that
loading needs (JAX, its serialization, its backend and SciPy's LAPACK) are imported before it
starts.  Two threads that import the same modules at once can each be handed the other's
half-initialized module, as Python's import locks break the cycle; while the main thread
imported JAX, that failed a command with an ``ImportError`` from NumPy.

Which executables: those the last run of the same *job* (the command line's words) loaded or
compiled, listed in ``<cache folder>/jobs/<sha256>.txt``, the sha256 of the job, of gradflow's
source and of ``XLA_FLAGS``, written when the process exits (:func:`remember`).  The list's
name needs no JAX, so a command with no list (its first run, or one that refuses its input)
starts nothing.  A listed file that is gone or broken is skipped here and made again by its
program, as without a list; an executable read ahead that no program asks for is not used.
No result depends on any of this: a program runs the same executable either way.
"""

from __future__ import annotations

import atexit
import os
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from .files import (
    bind_lapack,
    deserialized,
    hashed_file,
    read_bytes,
    source_hash,
    store_folder,
    write_atomically,
)

__all__ = ["JOBS", "job_list", "read_ahead", "remember", "taken", "used"]

JOBS = "jobs"
"""The cache folder's folder of job lists."""

_AHEAD: dict[str, Future[Any]] = {}
"""Executables read ahead, by file name, until a program takes them."""
_USED: dict[str, None] = {}
"""The store's files this process's programs loaded or wrote, in order."""
_LOCK = threading.Lock()


def read_ahead(job: str) -> threading.Thread | None:
    """Start loading the executables the last run of ``job`` used, in a daemon thread (which
    this function returns; ``None`` where there is no list, or the store is off), and list
    this run's when the process exits.  Call it once, as the command starts."""
    folder, listed = store_folder(), job_list(job)
    if folder is None or listed is None:
        return None
    names = read_bytes(listed)
    worker = None
    if names is not None:
        _prepare_loading()
        worker = threading.Thread(target=_load, args=(names.decode().split(), folder))
        worker.name, worker.daemon = "gradflow read-ahead", True
        worker.start()
    atexit.register(remember, job, worker)
    return worker


def _prepare_loading() -> None:
    """Import what loading an executable needs, start JAX's backend (which probes for plugins
    by importing them) and bind LAPACK (which imports SciPy's), so that the thread imports
    nothing."""
    import jax
    import jax.experimental.serialize_executable  # noqa: F401

    jax.devices()
    bind_lapack()


def job_list(job: str) -> Path | None:
    """The file listing the executables of ``job``; ``None`` where the cache is off."""
    return hashed_file(JOBS, [job, source_hash(), os.environ.get("XLA_FLAGS", "")], ".txt")


def _load(names: list[str], folder: Path) -> None:
    """Register a future for every listed file, then load them in order."""
    order = []
    with _LOCK:
        for name in names:
            if name not in _USED and name not in _AHEAD:
                _AHEAD[name] = Future()
                order.append(name)
    for name in order:
        with _LOCK:
            future = _AHEAD.get(name)
        if future is None or not future.set_running_or_notify_cancel():
            continue
        try:
            data = read_bytes(folder / name)
            future.set_result(None if data is None else deserialized(data))
        except Exception:  # noqa: BLE001 - a broken file: its program makes it again
            future.set_result(None)


def taken(path: Path) -> Any:
    """The executable of the store's file ``path`` if it was read ahead (waiting for it if it
    is being loaded), else ``None``; a pending one not yet started is withdrawn instead."""
    with _LOCK:
        future = _AHEAD.pop(path.name, None)
    if future is None or future.cancel():
        return None
    return future.result()


def used(path: Path) -> None:
    """Note that a program of this process loaded or wrote the store's file ``path``."""
    with _LOCK:
        _USED[path.name] = None


def remember(job: str, worker: threading.Thread | None = None) -> None:
    """Write the list of the store's files this process used as the list of ``job``, once the
    read-ahead thread ``worker`` has ended (so that it is not loading while the interpreter
    shuts down)."""
    if worker is not None:
        worker.join()
    with _LOCK:
        names = "\n".join(_USED)
    listed = job_list(job)
    if names and listed is not None and read_bytes(listed) != names.encode():
        write_atomically(listed, names.encode())
