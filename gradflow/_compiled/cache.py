"""Where compiled programs are kept between runs, and the switch that turns it off.

``import gradflow`` calls :func:`enable_persistent_cache`: JAX's persistent compilation cache is
on in ``$GRADFLOW_CACHE_DIR`` (default ``~/.cache/gradflow/jax``, under ``$XDG_CACHE_HOME``
where that is set), for the command line and the Python API alike, so that a second run of the
same analysis loads its XLA programs instead of compiling them.  ``GRADFLOW_CACHE_DIR=""``
turns it off (and the executable store beside it, :mod:`gradflow._compiled.store`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["cache_dir", "enable_persistent_cache", "gradflow_cache"]

SWITCH = "GRADFLOW_CACHE_DIR"
"""The environment variable naming the cache folder; empty turns every kept program off."""


def gradflow_cache() -> Path:
    """``$XDG_CACHE_HOME/gradflow`` (default ``~/.cache/gradflow``)."""
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "gradflow"


def cache_dir() -> Path | None:
    """Where compiled XLA programs are cached between runs: ``$GRADFLOW_CACHE_DIR`` or
    ``~/.cache/gradflow/jax``; ``GRADFLOW_CACHE_DIR=""`` turns the cache off (``None``)."""
    value = os.environ.get(SWITCH, str(gradflow_cache() / "jax"))
    return Path(value) if value else None


def enable_persistent_cache() -> None:
    """Switch JAX's persistent compilation cache on in :func:`cache_dir`, every program kept
    (no minimum compile time), or off where ``GRADFLOW_CACHE_DIR=""``.

    ``GRADFLOW_CACHE_DIR``, where it is set, decides over JAX's own variables; where it is not,
    a ``JAX_COMPILATION_CACHE_DIR`` or ``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS`` already in
    the environment is kept.  The settings go through JAX's environment variables, read when
    JAX is imported (so ``import gradflow`` stays free of JAX), and onto JAX's config where JAX
    is already loaded.  A folder that cannot be created leaves JAX's settings alone.
    """
    path = cache_dir()
    settings: dict[str, object]
    if path is None:
        settings = {"jax_enable_compilation_cache": False}
    else:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError:
            return
        settings = {
            "jax_enable_compilation_cache": True,
            "jax_compilation_cache_dir": str(path),
            "jax_persistent_cache_min_compile_time_secs": 0.0,
        }
    explicit = SWITCH in os.environ
    chosen = {k: v for k, v in settings.items() if explicit or k.upper() not in os.environ}
    for name, value in chosen.items():
        os.environ[name.upper()] = str(value)
    if "jax" in sys.modules:
        for name, value in chosen.items():
            sys.modules["jax"].config.update(name, value)
