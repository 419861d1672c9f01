"""Ctrl-C: exit status 130 and no output file, whatever the program is doing when it comes.

Python turns SIGINT into ``KeyboardInterrupt`` wherever the main thread runs Python next; inside
a JAX host callback (a progress bar) that exception is caught and printed by the runtime, and the
run goes on to write its files.  So while a command runs, SIGINT instead ends the process at
once (``os._exit``, after flushing and one line on stderr), except while outputs are being
written (:func:`gradflow._output.io.writing`): there it raises ``KeyboardInterrupt``, which unwinds
through the atomic write and removes its temporary files.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType

__all__ = ["EXIT_INTERRUPTED", "interruptible"]

EXIT_INTERRUPTED = 130
"""Exit status after Ctrl-C (128 + SIGINT), as shells use."""


@contextlib.contextmanager
def interruptible(message: Callable[[], str]) -> Iterator[None]:
    """While active (in the main thread), SIGINT prints ``message()`` on a line of its own (a
    progress bar, or the ``^C`` a terminal echoes, may hold the current one) and exits with
    status 130, or raises ``KeyboardInterrupt`` while outputs are being written."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        from gradflow._output.io import writing

        if writing():
            raise KeyboardInterrupt
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        with contextlib.suppress(Exception):
            print(f"\n{message()}", file=sys.stderr, flush=True)
        os._exit(EXIT_INTERRUPTED)

    previous = signal.signal(signal.SIGINT, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
