"""Cells on a Dask cluster: each cell a task, results handed back as they finish.

:func:`gradflow.run_cells` with a ``dask.distributed`` client sends the cells it has not
checkpointed here.  The cluster's workers are made to compute as this process does
(:class:`JaxSettings`: float64, the persistent compilation cache, XLA's flags), and the compute
function goes to each worker once, so that a worker keeps one model object and its compiled
programs for all its cells, and loads from the persistent compilation cache what another
worker or an earlier run compiled.  The cells run wherever a worker is free.  A worker that dies loses only the cells it was computing: the scheduler runs them again
on another worker.  The results come back to this process, which writes them, so the
checkpoint stays the one place a run resumes from.

Imported only when a client is given: ``import gradflow`` and the command line's ``--help``
never import Dask.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from distributed import Client, WorkerPlugin, as_completed

from .._errors import GradflowError

__all__ = ["JaxSettings", "jax_settings", "results_on"]

JAX_CONFIG = (
    "jax_enable_x64",
    "jax_enable_compilation_cache",
    "jax_compilation_cache_dir",
    "jax_persistent_cache_min_compile_time_secs",
)
"""JAX's settings a worker takes from the client (each also read from its upper-case
environment variable when JAX starts)."""


def _setting(value: Any) -> str:
    """A JAX setting as its environment variable spells it (booleans as ``1``/``0``)."""
    return str(int(value)) if isinstance(value, bool) else str(value)


def jax_settings() -> dict[str, str]:
    """This process's JAX settings and ``XLA_FLAGS``, as environment variables: the values JAX
    runs with where it is loaded, else those it would read from the environment; float64 on
    (gradflow's)."""
    settings = {
        name.upper(): os.environ[name.upper()] for name in JAX_CONFIG if name.upper() in os.environ
    }
    jax = sys.modules.get("jax")
    if jax is not None:
        settings |= {name.upper(): _setting(getattr(jax.config, name)) for name in JAX_CONFIG}
        settings = {k: v for k, v in settings.items() if v != "None"}
    settings["JAX_ENABLE_X64"] = "1"
    settings["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "")
    return settings


class JaxSettings(WorkerPlugin):
    """Gives every worker of a cluster, present and future, the client's JAX settings
    (:func:`jax_settings`), so that its cells compile the same programs with the same flags and
    share the persistent compilation cache.

    On a worker that has not loaded JAX they go into the environment, which JAX reads when it
    starts.  A worker that has already loaded JAX takes the settings JAX can change; its XLA
    flags are fixed once XLA has started.

    Raises:
        GradflowError: (on the worker, at registration) it loaded JAX with other XLA flags: its
            programs could round differently from the client's.
    """

    idempotent = True
    name = "gradflow-jax-settings"

    def __init__(self, settings: Mapping[str, str]) -> None:
        self.settings = dict(settings)

    def setup(self, worker: Any) -> None:
        jax = sys.modules.get("jax")
        if jax is None:
            os.environ.update(self.settings)
            return
        for name in JAX_CONFIG:
            value = self.settings.get(name.upper())
            if value is not None:
                jax.config.update(name, _parsed(value, getattr(jax.config, name)))
        flags = os.environ.get("XLA_FLAGS", "")
        if flags != self.settings["XLA_FLAGS"]:
            raise GradflowError(
                f"worker {worker.address} started JAX with XLA_FLAGS={flags!r}, the client runs "
                f"with {self.settings['XLA_FLAGS']!r}: restart the worker"
            )


def _parsed(value: str, current: Any) -> Any:
    """An environment variable's text as the type of JAX's setting ``current``."""
    if isinstance(current, bool):
        return value in ("1", "true", "True")
    return float(value) if isinstance(current, int | float) else value


def _same(value: Any) -> Any:
    """The task that hands the compute function to the workers: each fetches it once."""
    return value


def _call(compute: Callable[[Any], Any], cell: Any) -> Any:
    """One cell's task."""
    return compute(cell)


def results_on(
    client: Client, compute: Callable[[Any], Any], cells: Sequence[Any]
) -> Iterator[tuple[int, Any]]:
    """Compute ``cells`` on ``client``'s workers; yield ``(index, compute(cell))`` as each
    finishes.

    A result is released as soon as it is handed over, so that a worker dying later does not
    make the scheduler compute it again (a cell finished on a worker that dies before its
    result reaches this process is computed again).
    Stopping the iteration (an error, a Ctrl-C) cancels the cells still queued or running.

    Raises:
        Exception: the first error a cell raised, as it raised it.
    """
    client.register_plugin(JaxSettings(jax_settings()))
    shared = client.submit(_same, compute, pure=False)
    futures = [client.submit(_call, shared, cell, pure=False) for cell in cells]
    running = {future: i for i, future in enumerate(futures)}
    try:
        for future, result in as_completed(futures, with_results=True):
            i = running.pop(future)
            future.release()
            yield i, result
    finally:
        client.cancel([*running, shared])
