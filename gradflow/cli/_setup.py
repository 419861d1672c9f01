"""Process-wide JAX settings for command-line runs."""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["configure_jax", "cache_dir"]


def cache_dir() -> Path | None:
    """Where compiled XLA programs are cached between runs: ``$GRADFLOW_CACHE_DIR`` or
    ``~/.cache/gradflow/jax``; ``GRADFLOW_CACHE_DIR=""`` turns the cache off (``None``)."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "gradflow" / "jax"
    value = os.environ.get("GRADFLOW_CACHE_DIR", str(default))
    return Path(value) if value else None


def configure_jax() -> None:
    """Enable JAX's persistent compilation cache, so a second run skips most compilation.

    Compiling the batched flow takes seconds on a CPU; with the cache a repeated
    ``gradflow portrait`` starts integrating at once.  An unwritable cache folder is skipped.
    The settings go through JAX's environment variables, read when JAX is imported, so that a
    command that refuses its input never imports JAX; if JAX is already loaded (the command line
    called from Python), they are set on its config.
    """
    path = cache_dir()
    if path is None:
        return
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return
    settings = {
        "jax_compilation_cache_dir": str(path),
        "jax_persistent_cache_min_compile_time_secs": 0.0,
    }
    for name, value in settings.items():
        os.environ.setdefault(name.upper(), str(value))
    if "jax" in sys.modules:
        for name, value in settings.items():
            sys.modules["jax"].config.update(name, value)
