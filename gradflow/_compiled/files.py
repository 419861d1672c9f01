"""Files of the cache folder: where the store keeps executables, reading and writing files
atomically, executables to and from bytes, and the hash of gradflow's own source, shared by the
store (:mod:`gradflow._compiled.store`) and its read-ahead (:mod:`gradflow._compiled.read_ahead`).
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .cache import cache_dir

__all__ = [
    "EXECUTABLES",
    "bind_lapack",
    "deserialized",
    "hashed_file",
    "read_bytes",
    "serialized",
    "source_hash",
    "store_folder",
    "write_atomically",
]

EXECUTABLES = "executables"
"""The store's folder in the cache folder."""


def store_folder() -> Path | None:
    """``<cache folder>/executables``, or ``None`` where the cache is off."""
    folder = cache_dir()
    return None if folder is None else folder / EXECUTABLES


def hashed_file(folder: str, parts: Sequence[str], suffix: str) -> Path | None:
    """``<cache folder>/<folder>/<sha256><suffix>``, the sha256 of ``parts`` joined: the file
    of what depends on exactly these; ``None`` where the cache is off."""
    root = cache_dir()
    if root is None:
        return None
    digest = hashlib.sha256(chr(0).join(parts).encode()).hexdigest()
    return root / folder / f"{digest}{suffix}"


@functools.cache
def source_hash() -> str:
    """sha256 of gradflow's own source (every ``.py`` of the engine, by relative path)."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def read_bytes(path: Path | None) -> bytes | None:
    try:
        return None if path is None else path.read_bytes()
    except OSError:
        return None


def serialized(program: Any) -> bytes | None:
    """``program``'s executable as bytes, or ``None`` where it cannot be serialized (a
    program holding constants, or a host callback: the callback is a Python function of this
    process, which JAX's serializer fails to pickle with an ``AttributeError``)."""
    from jax.experimental.serialize_executable import serialize

    try:
        return pickle.dumps(serialize(program))
    except (ValueError, NotImplementedError, pickle.PicklingError, TypeError, AttributeError):
        return None


def deserialized(data: bytes) -> Any:
    """The executable serialized in ``data``, loaded, with the CPU's LAPACK kernels bound
    first (:func:`bind_lapack`)."""
    from jax.experimental.serialize_executable import deserialize_and_load

    bind_lapack()

    payload, in_tree, out_tree = pickle.loads(data)
    return deserialize_and_load(payload, in_tree, out_tree)


def bind_lapack() -> None:
    """Bind the CPU's LAPACK kernels (JAX's own ``jax._src.lax.linalg.initialize_lapack``, as
    its exported programs do before they run; idempotent).  An executable that solves,
    factors or diagonalizes calls them by name, and JAX binds them only when it lowers such an
    operation, which a loaded executable never does: a warm ``gradflow flow``, whose stored
    trajectory program factors the implicit solver's Jacobian, crashed with a segmentation
    fault without it."""
    from jax._src.lax.linalg import initialize_lapack

    initialize_lapack()


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically; skipped where the folder cannot be written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.part")
        partial.write_bytes(data)
        os.replace(partial, path)
    except OSError:
        pass
