"""Process-wide settings for command-line runs: JAX's, and the garbage collector's."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from .._compiled.cache import cache_dir, enable_persistent_cache, gradflow_cache

__all__ = [
    "FAST_COMPILE_FLAGS",
    "GC_YOUNGEST",
    "cache_dir",
    "configure_jax",
    "fewer_collections",
    "freeze_at_exit",
    "imports_frozen",
    "known_xla_flags",
    "with_xla_flags",
]

FAST_COMPILE_FLAGS = ("--xla_cpu_use_fusion_emitters=false",)
"""XLA flags of command-line runs: XLA's elemental emitters instead of its MLIR fusion emitters
compile the batched integrator's programs in about a third of the time and run them as fast
(a cold 1000² canonical map: 2.2–3.2 s of compilation against 7.2–9.4 s, the same labels; the
main job with an empty compilation cache 10–11 CPU s against 14–15), docs/performance.md.  The
results agree to rounding (no fast-math either way)."""


GC_YOUNGEST = 10_000
"""Allocations between collections of the garbage collector's youngest generation during a
command (Python's default is 700).  A command imports JAX, SymPy, SciPy and matplotlib, millions
of long-lived objects that every full collection walks again: the warm main job spent
0.53–0.60 s in 702–705 collections, 0.40–0.45 s of it in full ones, and 0.24–0.27 s in 69, none
full, with this threshold (docs/performance.md).  The process's own command also freezes what its
imports create (:func:`imports_frozen`), after which its collections cost 3–9 ms with either
threshold; the threshold serves a command called from Python, whose imports are not frozen."""


@contextmanager
def imports_frozen() -> Iterator[None]:
    """Within the block, a module imported for the first time is imported with automatic garbage
    collection paused, and then every object alive is moved into the collector's permanent
    generation (``gc.freeze``), which no later collection walks.

    A command imports JAX, SymPy, SciPy, matplotlib and gradflow's own modules as it goes:
    hundreds of thousands of objects that live as long as the process, which the collections
    their own allocations set off walked again and again (0.15–0.20 s of the warm main job's
    0.16–0.24 s of collection; 3–9 ms are left, docs/performance.md).  Imports of modules
    already loaded pass straight through, and so do the imports a new module makes (its
    thread's outermost new import pauses and freezes once).  What the command made before a new
    import is frozen with it, the cyclic garbage among it included, and released with the
    process.  For the process's own command only (:func:`gradflow.cli.main` without
    ``argv``): a Python caller's objects are never frozen.
    """
    import builtins
    import gc
    import threading

    from .._symbolic.budget import collection_paused

    original = builtins.__import__
    inside = threading.local()

    def importing(
        name: str,
        globals: dict | None = None,
        locals: dict | None = None,
        fromlist: Sequence[str] = (),
        level: int = 0,
    ) -> object:
        if getattr(inside, "new", False) or _absolute(name, globals, level) in sys.modules:
            return original(name, globals, locals, fromlist, level)
        inside.new = True
        try:
            with collection_paused():
                module = original(name, globals, locals, fromlist, level)
                gc.freeze()
        finally:
            inside.new = False
        return module

    builtins.__import__ = importing
    try:
        yield
    finally:
        builtins.__import__ = original


def _absolute(name: str, globals: dict | None, level: int) -> str:
    """The absolute name of ``import``'s ``name`` at ``level`` (``from ..a import b``: level 2)
    in the module whose globals are ``globals`` (``importlib.util.resolve_name``); ``name``
    itself where it does not resolve (the import then fails as Python's own would)."""
    if not level:
        return name
    try:
        return importlib.util.resolve_name("." * level + name, (globals or {}).get("__package__"))
    except (ImportError, ValueError):
        return name


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Within the block, the youngest generation is collected every :data:`GC_YOUNGEST`
    allocations, and so the older ones proportionally less often; the thresholds are restored
    after it, so that calling the command line from Python leaves the process as it was.
    Cyclic garbage is still collected, in larger batches."""
    import gc

    before = gc.get_threshold()
    gc.set_threshold(GC_YOUNGEST, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


@functools.cache
def freeze_at_exit() -> None:
    """When the interpreter exits, move every object still alive into the garbage collector's
    permanent generation (``gc.freeze``), so that the collections Python runs while it shuts
    down do not walk them.

    A process that has imported JAX, SymPy, SciPy and matplotlib holds millions of objects, and
    those collections took 0.5–0.8 CPU s of every run of the main job, after its output was
    written (0.17–0.25 s in all with the objects frozen; docs/performance.md).  Registered once
    per process (an exit handler registered later runs before it); nothing is frozen before the
    exit, so calling the command line from Python leaves the collector as it was.  Objects alive
    at the exit are released by the operating system, as Python leaves any it does not
    collect.
    """
    import atexit
    import gc

    atexit.register(gc.freeze)


def _gradflow_cache() -> Path:
    """``$XDG_CACHE_HOME/gradflow`` (default ``~/.cache/gradflow``)."""
    return gradflow_cache()


def configure_jax() -> None:
    """Enable JAX's persistent compilation cache (as ``import gradflow`` does,
    :func:`gradflow._compiled.cache.enable_persistent_cache`), so a second run skips most
    compilation, and compile with :data:`FAST_COMPILE_FLAGS` (those the installed XLA knows,
    unless JAX is already loaded; tried once per ``jaxlib`` version in the background, so the
    first run on a machine goes without them, :func:`known_xla_flags`).

    Compiling the batched flow takes seconds on a CPU; with the cache a repeated
    ``gradflow portrait`` starts integrating at once.  An unwritable cache folder is skipped.
    ``GRADFLOW_CACHE_DIR``, where it is set, decides over JAX's own variables: its folder is
    the cache even where ``JAX_COMPILATION_CACHE_DIR`` names another (as in a process started by
    a gradflow process, which inherits the variables this function sets), and with the cache
    turned off (``GRADFLOW_CACHE_DIR=""``) JAX's persistent cache is disabled and the flags are
    left alone.  Where it is not set, a ``JAX_COMPILATION_CACHE_DIR`` in the environment is kept.
    The settings go through JAX's environment variables, read when JAX is imported, so that a
    command that refuses its input never imports JAX; if JAX is already loaded (the command line
    called from Python), they are set on its config.
    """
    path = cache_dir()
    if path is not None:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError:
            return
        if "jax" not in sys.modules:
            current = os.environ.get("XLA_FLAGS", "")
            os.environ["XLA_FLAGS"] = with_xla_flags(current, FAST_COMPILE_FLAGS, wait=False)
    enable_persistent_cache()


def _xla_accepts(flags: Sequence[str]) -> bool:
    """Whether XLA starts with ``flags``: a child process starts JAX's CPU backend with them
    (XLA aborts a process on a flag it does not know)."""
    probe = [sys.executable, "-c", "import jax; jax.devices()"]
    env = {**os.environ, "XLA_FLAGS": " ".join(flags)}
    return subprocess.run(probe, env=env, capture_output=True, check=False).returncode == 0


def known_xla_flags(flags: Sequence[str], *, wait: bool = True) -> list[str]:
    """The ones of ``flags`` that the installed XLA knows.

    XLA aborts a process on a flag it does not know, and its flags come and go between
    releases, so they are tried in child processes (about a second) once per installed
    ``jaxlib`` version; the answer is kept in ``~/.cache/gradflow/xla-flags.json`` (not kept
    where that folder cannot be written).  Without ``wait``, flags not yet tried are tried in a
    background process for the next run, and left out of this one (a command that refuses its
    input stays instant).
    """
    from importlib.metadata import version

    record = _gradflow_cache() / "xla-flags.json"
    key = f"jaxlib {version('jaxlib')}"
    try:
        known = json.loads(record.read_text())
    except (OSError, ValueError):
        known = {}
    answers = known.get(key, {})
    missing = [flag for flag in flags if flag not in answers]
    if missing and not wait:
        script = f"from gradflow.cli._setup import known_xla_flags; known_xla_flags({missing!r})"
        subprocess.Popen(
            [sys.executable, "-c", script],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    elif missing:
        every = _xla_accepts(missing)
        answers |= {flag: every or _xla_accepts([flag]) for flag in missing}
        known[key] = answers
        try:
            record.parent.mkdir(parents=True, exist_ok=True)
            record.write_text(json.dumps(known, indent=1, sort_keys=True))
        except OSError:
            pass
    return [flag for flag in flags if answers.get(flag)]


def with_xla_flags(current: str, flags: Sequence[str], *, wait: bool = True) -> str:
    """``XLA_FLAGS`` ``current`` with each of ``flags`` that it does not name and XLA knows
    (:func:`known_xla_flags`)."""
    missing = [flag for flag in flags if flag.split("=")[0] not in current]
    return " ".join([current, *known_xla_flags(missing, wait=wait)]).strip()
