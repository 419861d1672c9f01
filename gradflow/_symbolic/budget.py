"""A time budget for computations that cannot be cancelled from outside: SymPy's solvers.

``sympy.solve`` has no time limit and no way to be interrupted; on some rational losses it
runs for many minutes (three Lennard-Jones atoms on a line).  :func:`within` runs such a
step in a worker thread and waits until it has used its budget of CPU time (wall-clock time
where the platform has no per-thread CPU clock), so that the answer does not depend on how
loaded the machine is, or :data:`WALL_FACTOR` times that in wall-clock time (a thread starved of
CPU), whichever comes first.  Then the step is **stopped**, not abandoned: an exception is raised
inside the worker thread (CPython's ``PyThreadState_SetAsyncExc``), which pure-Python code
such as SymPy's sees at its next bytecode, so the thread unwinds (its ``finally`` blocks run,
its caches keep only completed entries) and its CPU is free again within milliseconds.
Automatic garbage collection is off while a step runs, so that the exception lands in the
step's own code, never in a ``gc`` callback that a collection would run in its thread.  A
step stuck inside one long call of a C extension stops when that call returns; if it has not
stopped after :data:`GRACE` seconds it is left to finish as a daemon thread, and the caller
is told so.  The caller gets :class:`OutOfTime` and falls back (to the numerical search, for
the critical sets) with the reason in its report.

The budget is :data:`DEFAULT_SECONDS` of CPU time per step; the environment variable
``GRADFLOW_SYMBOLIC_SECONDS`` sets another.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from .._errors import GradflowError

__all__ = [
    "DEFAULT_SECONDS",
    "ENV",
    "GRACE",
    "OutOfTime",
    "any_ran_out",
    "budgeted_cache",
    "collection_paused",
    "symbolic_seconds",
    "within",
]

DEFAULT_SECONDS = 20.0
"""CPU seconds each symbolic step may use (``GRADFLOW_SYMBOLIC_SECONDS`` overrides it)."""
ENV = "GRADFLOW_SYMBOLIC_SECONDS"
"""The environment variable that sets the budget of each symbolic step, in CPU seconds."""
WALL_FACTOR = 10.0
"""A step is also stopped after this many times its budget in wall-clock time: a guard against
a thread starved of CPU, not the budget itself (a machine running a few other jobs gives the
thread a fraction of a core, and the answer should not change with that)."""
GRACE = 2.0
"""Seconds to wait for a stopped step's thread to unwind before leaving it to finish."""
POLL = 0.02
"""Seconds between two looks at the worker thread's clock."""

T = TypeVar("T")


class OutOfTime(Exception):
    """A step ran out of its budget.

    Attributes:
        what: the step, e.g. ``"sympy.solve(∇L = 0)"``.
        seconds: its budget (CPU seconds).
        stopped: whether its thread has stopped (else it finishes in the background).
    """

    def __init__(self, what: str, seconds: float, stopped: bool) -> None:
        self.what, self.seconds, self.stopped = what, seconds, stopped
        tail = "" if stopped else "; it could not be stopped and finishes in the background"
        super().__init__(f"{what} ran out of its {seconds:g} s budget ({ENV} sets it){tail}")


class _Stop(BaseException):
    """Raised inside a worker thread to stop it (a ``BaseException``, so that the ``except
    Exception`` clauses of the code it interrupts do not swallow it)."""


_RAN_OUT = threading.Event()
"""Set once a step of this process has run out of its budget."""


def any_ran_out() -> bool:
    """Whether a step of this process has run out of its budget.  A result computed after that
    may have taken a fallback (directly, or through a fact cached from that step), so it
    depends on the machine's speed, and is not kept between processes."""
    return _RAN_OUT.is_set()


def symbolic_seconds() -> float:
    """The budget of one symbolic step in CPU seconds: ``GRADFLOW_SYMBOLIC_SECONDS`` if set,
    else :data:`DEFAULT_SECONDS`.

    Raises:
        GradflowError: a value that is not a positive finite number.
    """
    text = os.environ.get(ENV)
    if text is None:
        return DEFAULT_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise GradflowError(f"{ENV}={text!r} must be a number of seconds in (0, inf)")
    return value


def budgeted_cache(fn: Callable[..., T]) -> Callable[..., T]:
    """``functools.cache`` for a function whose result depends on the symbolic time budget (it
    runs a step :func:`within` the default budget, or reads one that does): cached per budget,
    so that an answer found under one budget (or the fallback taken when it ran out) is never
    served under another.  ``cache_clear`` empties it."""
    by_budget = functools.cache(lambda seconds, *args: fn(*args))

    @functools.wraps(fn)
    def cached(*args: Any) -> T:
        return by_budget(symbolic_seconds(), *args)

    cached.cache_clear = by_budget.cache_clear  # type: ignore[attr-defined]
    return cached


def within(what: str, fn: Callable[..., T], *args: Any, seconds: float | None = None) -> T:
    """``fn(*args)``, or :class:`OutOfTime` once it has used ``seconds`` of CPU time (default
    :func:`symbolic_seconds`) or ``WALL_FACTOR`` times that in wall-clock time.

    A step that ends after using more than its budget is out of time too, though it was not
    seen running over (the waiting thread looks every :data:`POLL` seconds): so a step's
    outcome does not depend on when it was looked at.  An exception raised by ``fn`` is raised
    here.  An interrupt of the waiting thread stops the step too.
    """
    budget = symbolic_seconds() if seconds is None else float(seconds)
    step = _Step(what, fn, args)
    start = time.monotonic()
    with collection_paused():
        step.start()
        clock = _thread_clock(step)
        try:
            while not step.ended.wait(POLL):
                wall = time.monotonic() - start
                if _read(clock, wall) > budget or wall > WALL_FACTOR * budget:
                    _RAN_OUT.set()
                    raise OutOfTime(what, budget, step.stop())
        except OutOfTime:
            raise
        except BaseException:
            step.stop()
            raise
        finally:
            step.released.set()
            if step.ended.is_set():
                step.join()
    if step.error is not None:
        raise step.error
    if step.used > budget or time.monotonic() - start > WALL_FACTOR * budget:
        _RAN_OUT.set()
        raise OutOfTime(what, budget, True)
    return step.value


class _Step(threading.Thread):
    """The worker thread of one step: it runs ``fn(*args)``, records its value or error and the
    CPU time it used, sets :attr:`ended`, and does not end before :attr:`released` is set.

    A stop is sent only while the step has not ended, but one sent just before it ended can
    arrive after; the thread takes such late stops until it is released, after which no more
    are sent, so no stop ever escapes the thread (it would be reported as unhandled)."""

    def __init__(self, what: str, fn: Callable[..., Any], args: tuple) -> None:
        super().__init__(name=f"gradflow budget: {what}", daemon=True)
        self.fn, self.args = fn, args
        self.value: Any = None
        self.error: BaseException | None = None
        self.used = float("inf")
        self.ended, self.released = threading.Event(), threading.Event()

    def run(self) -> None:
        try:
            began = time.thread_time()
            try:
                self.value = self.fn(*self.args)
            except _Stop:
                pass
            except BaseException as error:  # handed to the caller's thread
                self.error = error
            self.used = time.thread_time() - began
        except _Stop:
            pass
        released = False
        while not released:
            try:
                self.ended.set()
                released = self.released.wait()
            except _Stop:
                pass

    def stop(self) -> bool:
        """Raise :class:`_Stop` inside the step until it ends or :data:`GRACE` passes; whether
        it ended.

        The exception is not raised while the step is importing a module (SymPy imports some
        of its modules the first time a solver needs them): stopped there, the import leaves
        its file open, reported as unraisable instead of stopping the step.  A step that has
        not ended by then has its pending exception withdrawn: it finishes in the background."""
        deadline = time.monotonic() + GRACE
        while not self.ended.is_set() and time.monotonic() < deadline:
            if not _importing(self):
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(self.ident), ctypes.py_object(_Stop)
                )
            self.ended.wait(POLL)
        if not self.ended.is_set():
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.ident), None)
        return self.ended.is_set()


def _thread_clock(worker: threading.Thread) -> int | None:
    """The CPU-time clock of ``worker`` where the platform has one (POSIX), else ``None``."""
    getter = getattr(time, "pthread_getcpuclockid", None)
    if getter is None or worker.ident is None:
        return None
    try:
        return getter(worker.ident)
    except OSError:
        return None


def _read(clock: int | None, wall: float) -> float:
    """The CPU seconds on ``clock``, or ``wall`` without one (or once the thread is gone)."""
    if clock is None:
        return wall
    try:
        return time.clock_gettime(clock)
    except OSError:
        return wall


_PAUSES = [0, False]
"""How many steps are running, and whether automatic garbage collection was on before the
first of them."""
_PAUSES_LOCK = threading.Lock()


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """Automatic garbage collection off while any step runs (as it was before, after the last);
    reentrant, and shared by every thread (the command line's imports pause it too,
    :func:`gradflow.cli._setup.imports_frozen`).

    A collection that a step's allocations trigger runs in the step's thread, with the ``gc``
    callbacks (JAX registers one); the stop raised there would land in a callback or in a
    finaliser, be reported as unraisable, and the step would run on.  With collection off no
    collection starts in the step's thread, so the stop lands in the step's own code.  Cyclic
    garbage made meanwhile is collected afterwards."""
    with _PAUSES_LOCK:
        if _PAUSES[0] == 0:
            _PAUSES[1] = gc.isenabled()
            gc.disable()
        _PAUSES[0] += 1
    try:
        yield
    finally:
        with _PAUSES_LOCK:
            _PAUSES[0] -= 1
            if _PAUSES[0] == 0 and _PAUSES[1]:
                gc.enable()


def _importing(worker: threading.Thread) -> bool:
    """Whether ``worker`` is inside Python's import machinery now."""
    frame = sys._current_frames().get(worker.ident)
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False
