"""Compiled executables of the engine's hot programs, kept between processes.

JAX's persistent compilation cache (:mod:`gradflow._compiled.cache`) keys a program by its
lowered module, so a warm run still traces and lowers every program before it can look one up.
The store keys a program by what it is made of instead, and keeps the *compiled executable*
(``jax.experimental.serialize_executable``): a hit is read and loaded with no tracing, lowering
or compiling.

A program is stored only where its maker names everything it depends on (:func:`stored`'s
``key``: for a symbolic loss, its SymPy expression; for an integrator's round, the solver, the
stop rule and the key of its field), and the store adds what every program depends on
(:func:`environment`): gradflow's own source, the versions of JAX, jaxlib, NumPy and SymPy,
``XLA_FLAGS``, JAX's float64 mode and matmul precision, the compile options' maker and the
devices; then the call's signature (the argument tree, each leaf's shape, dtype and weak type).
A change in any of them is a different file: a miss, never a wrong program.  Programs whose
maker names no key (a loss written in JAX, a flow in a metric) are jitted as usual.

The files are ``<cache folder>/executables/<sha256>.bin`` (:func:`gradflow._compiled.cache
.cache_dir`); ``GRADFLOW_CACHE_DIR=""`` turns the store off with the cache.  A file that cannot
be read or loaded is compiled again and rewritten; one that cannot be written is skipped.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .cache import cache_dir
from .files import (
    EXECUTABLES,
    deserialized,
    hashed_file,
    read_bytes,
    serialized,
    source_hash,
    store_folder,
    write_atomically,
)
from .read_ahead import taken, used

__all__ = [
    "LIBRARIES",
    "LOAD_EVENT",
    "StoredProgram",
    "environment",
    "extended",
    "key_of",
    "kept_file",
    "label",
    "stored",
    "stored_for",
]

LOAD_EVENT = "/gradflow/store/executable_loaded"
"""The ``jax.monitoring`` event recorded each time an executable is loaded from the store."""

Key = Callable[[], "str | None"]
"""A program's key, computed on first use (a SymPy expression's ``srepr`` costs time);
``None`` where what the program computes cannot be named (a metric whose derivative JAX cannot
trace): the program is then compiled in each process and not kept."""

_LABELS: weakref.WeakKeyDictionary[Any, Key] = weakref.WeakKeyDictionary()


def label(obj: Any, key: Key | None) -> Any:
    """Record that ``obj`` (a field, a function) is fully described by ``key()``, so that
    programs built from it can be stored (:func:`key_of`); returns ``obj``."""
    if key is not None:
        _LABELS[obj] = functools.cache(key)
    return obj


def extended(base: Key, part: str) -> Key:
    """The key of a program made of ``part`` (its kind, its options) and what ``base`` names:
    ``part`` and ``base()`` on two lines, or ``None`` where ``base()`` is."""

    def key() -> str | None:
        named = base()
        return None if named is None else f"{part}\n{named}"

    return key


def key_of(obj: Any) -> Key | None:
    """The key :func:`label` recorded for ``obj``, or ``None``."""
    try:
        return _LABELS.get(obj)
    except TypeError:
        return None


def kept_file(folder: str, parts: Sequence[str], suffix: str) -> Path | None:
    """``<cache folder>/<folder>/<sha256><suffix>``, the sha256 of :func:`environment` and
    ``parts`` joined: the file of a result that depends on exactly these, kept between
    processes (executables, proven tubes, critical sets); ``None`` where the cache is off."""
    if cache_dir() is None:
        return None
    return hashed_file(folder, [environment(), *parts], suffix)


LIBRARIES = ("jax", "jaxlib", "numpy", "sympy", "diffrax", "equinox", "optimistix", "lineax")
"""The libraries whose code is in the programs kept: a trajectory's program is diffrax's solver,
with its root finder (optimistix) and linear solve (lineax), written with equinox."""


def environment() -> str:
    """What every program depends on besides its own key: gradflow's source, the library
    versions (:data:`LIBRARIES`), ``XLA_FLAGS``, JAX's float64 mode and matmul precision, the
    compile options' maker (a test that changes optimization levels replaces it) and the
    devices."""
    import jax
    from jax._src import compiler

    maker = getattr(compiler, "get_compile_options", None)
    devices = jax.devices()
    parts = [
        source_hash(),
        *_library_versions(),
        os.environ.get("XLA_FLAGS", ""),
        f"x64 {jax.config.jax_enable_x64}",
        f"precision {jax.config.jax_default_matmul_precision}",
        f"options {getattr(maker, '__module__', '')}.{getattr(maker, '__qualname__', '')}",
        f"{devices[0].client.platform} {devices[0].client.platform_version}",
        *(f"{d.id} {d.device_kind}" for d in devices),
    ]
    return "\n".join(parts)


@functools.cache
def _library_versions() -> tuple[str, ...]:
    """``"jax 0.10.2"``, … for each of :data:`LIBRARIES`, read once per process (reading a
    package's metadata costs about half a millisecond, and the libraries a process has loaded
    do not change while it runs)."""
    from importlib.metadata import version

    return tuple(f"{name} {version(name)}" for name in LIBRARIES)


def _signature(args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The call's argument tree and each leaf's shape, dtype (a ``numpy.dtype``, whose
    ``repr`` names it in the program's file) and weak type, or ``None`` where a leaf is a
    tracer (the program is being traced into another: no executable to run)."""
    import jax

    leaves, tree = jax.tree.flatten(args)
    described = []
    for leaf in leaves:
        if isinstance(leaf, jax.core.Tracer):
            return None
        if isinstance(leaf, np.ndarray):
            described.append((leaf.shape, leaf.dtype, False))
        else:
            aval = jax.typeof(leaf)
            described.append((aval.shape, aval.dtype, aval.weak_type))
    return (str(tree), *described)


class StoredProgram:
    """A jitted function whose compiled executables are kept in the store, one per signature.

    Called with concrete arguments, it runs the executable of their signature: loaded from the
    process's memory, else from the store, else compiled (and written to the store).  Called
    inside another trace (tracers among its arguments), it is the jitted function.  Threads
    that call it at once with a new signature load or compile it once: the others wait (a
    program compiled ahead in a second thread, :func:`gradflow._flow.batched.prepare_rounds`,
    is waited for, not compiled again).

    Attributes:
        jitted: the ``jax.jit`` function.
        loads, compiles: executables this object read from the store and compiled.
    """

    def __init__(self, jitted: Callable[..., Any], key: Key) -> None:
        self.jitted = jitted
        self._key = key
        self._programs: dict[tuple[Any, ...], Callable[..., Any]] = {}
        self._first = threading.Lock()
        self.loads = self.compiles = 0
        functools.update_wrapper(self, jitted)

    def __call__(self, *args: Any) -> Any:
        signature = _signature(args)
        if signature is None:
            return self.jitted(*args)
        program = self._programs.get(signature)
        if program is not None:
            return program(*args)
        with self._first:
            program = self._programs.get(signature)
            if program is not None:
                return program(*args)
            program, out = self._first_call(args, signature)
            self._programs[signature] = program
        return out

    def _cache_size(self) -> int:
        """The executables held, one per signature, as ``jax.jit``'s own ``_cache_size``
        counts its compiled signatures (the jitted function's count stays 0 here: it never
        runs a call of its own)."""
        return len(self._programs)

    def __getattr__(self, name: str) -> Any:
        """The jitted function's other attributes (``lower``, ``eval_shape``, …)."""
        if name == "jitted":
            raise AttributeError(name)
        return getattr(self.jitted, name)

    def _file(self, signature: tuple[Any, ...]) -> Path | None:
        key = self._key()
        return None if key is None else kept_file(EXECUTABLES, [key, repr(signature)], ".bin")

    def _first_call(self, args: tuple[Any, ...], signature: tuple[Any, ...]) -> tuple[Any, Any]:
        """The executable of ``signature`` and its outputs on ``args``.

        A fresh compile is written to the store and runs as compiled: its bytes hold the same
        machine code, so a later process that loads them computes the same bits (tested), and
        reading them back here would cost a cold run a quarter of a second.  Where reading,
        loading or running a stored file fails, the file is removed and a fresh compile runs
        instead.
        """
        import jax

        path = self._file(signature)
        ahead = None if path is None else taken(path)
        data = None if ahead is not None else read_bytes(path)
        if ahead is None and data is None:
            compiled = self._compile(args)
            data = serialized(compiled)
            if data is not None and path is not None:
                write_atomically(path, data)
                used(path)
            return compiled, compiled(*args)
        try:
            program = ahead if ahead is not None else deserialized(data)
            out = jax.block_until_ready(program(*args))
            used(path)
        except Exception:  # noqa: BLE001 - a stale or broken file: compiled afresh
            if path is not None:
                path.unlink(missing_ok=True)
            compiled = self._compile(args)
            return compiled, compiled(*args)
        self.loads += 1
        jax.monitoring.record_event(LOAD_EVENT)
        return program, out

    def _compile(self, args: tuple[Any, ...]) -> Any:
        """A fresh compile, past JAX's persistent cache: an executable JAX loaded from its
        cache serializes without its compiled functions on the CPU (it fails when run).  JAX
        asks whether its cache is used at each compile, and the question is answered "no" for
        the compiles of this thread meanwhile (:func:`_past_jax_cache`), so that a program
        another thread compiles at the same time still uses the cache."""
        self.compiles += 1
        with _past_jax_cache():
            return self.jitted.lower(*args).compile()


_BYPASS = threading.local()
"""Per thread: whether its compiles go past JAX's persistent cache now."""
_INSTALLING = threading.Lock()


@contextlib.contextmanager
def _past_jax_cache() -> Iterator[None]:
    """JAX's persistent cache unused by this thread's compiles inside the block.

    JAX's ``compilation_cache.is_cache_used`` is replaced, once per process, by a function that
    answers "no" in a thread inside this block and asks the original otherwise; swapping the
    function for the block's time instead would leave the cache off for good where two
    threads compiled at once (each restoring what the other had set)."""
    from jax._src import compilation_cache

    with _INSTALLING:
        original = compilation_cache.is_cache_used
        if not getattr(original, "thread_aware", False):

            def is_cache_used(backend: Any) -> bool:
                return False if getattr(_BYPASS, "on", False) else original(backend)

            is_cache_used.thread_aware = True  # type: ignore[attr-defined]
            compilation_cache.is_cache_used = is_cache_used
    _BYPASS.on = True
    try:
        yield
    finally:
        _BYPASS.on = False


def stored_for(
    jitted: Callable[..., Any], field: Any, program: str, *, describable: bool = True
) -> Callable[..., Any]:
    """:func:`stored` for a program built from ``field`` (a loss, a gradient field) and
    otherwise fully described by ``program`` (its kind, options, constants): kept where
    ``field`` has a key (:func:`label`) and ``describable`` (false where the program depends on
    something ``program`` cannot name, such as a solver given as an object)."""
    base = key_of(field)
    if base is None or not describable:
        return jitted
    return stored(jitted, extended(base, program))


def stored(jitted: Callable[..., Any], key: Key | None) -> Callable[..., Any]:
    """``jitted`` with its compiled executables kept (:class:`StoredProgram`) where ``key`` is
    given and the cache is on; ``jitted`` itself otherwise.

    ``key()`` must name everything the traced program depends on beyond its arguments'
    signature and :func:`environment` (constants, closed-over functions, options).
    """
    if key is None or store_folder() is None:
        return jitted
    return StoredProgram(jitted, functools.cache(key))
