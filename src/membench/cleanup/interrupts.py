"""SIGTERM and SIGINT end a command once, through its cleanup.

The first signal prints one line and raises SystemExit(128 + signal) in the main thread,
so the command unwinds through its finally blocks (servers stopped, temporary stores and
partial outputs removed). Every later signal is ignored: a CI runner's or an impatient
user's second SIGTERM never interrupts the cleanup the first one started. They are
ignored by the kernel (SIG_IGN), not by a Python handler: at exit the interpreter resets
the signals it handles to their defaults before it frees its modules, and a second
SIGTERM in that window would otherwise kill the process with -15. A section
that must not be cut in half (removing a directory, renaming outputs into place) runs
under `deferred()`: a first signal arriving there takes effect when the section ends.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

SIGNALS = (signal.SIGTERM, signal.SIGINT)

_received: int | None = None  # the first signal, once one arrived
_pending: int | None = None  # a first signal that arrived in a deferred section
_depth = 0  # deferred sections the main thread is in
_previous: dict[int, object] = {}


def _say(signum: int) -> None:
    # os.write, not print: the main thread may be inside a write to stderr right now
    name = signal.Signals(signum).name
    os.write(2, f"membench: interrupted by {name}: stopping servers and removing "
                f"temporary files, then exiting with {128 + signum}\n".encode())


def _ignore_later_signals() -> None:
    for each in SIGNALS:
        signal.signal(each, signal.SIG_IGN)  # kept through the interpreter's finalization


def _on_signal(signum: int, frame: object) -> None:
    global _received, _pending
    if _received is not None or _pending is not None:
        return  # the cleanup of the first signal is under way
    _ignore_later_signals()
    if _depth:
        _pending = signum
        return
    _received = signum
    _say(signum)
    raise SystemExit(128 + signum)


def install() -> None:
    """Handles SIGTERM and SIGINT in this process (from the main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in SIGNALS:
        previous = signal.signal(signum, _on_signal)
        if previous is not _on_signal:
            _previous[signum] = previous


def restore() -> None:
    """The handlers from before install(), unless a signal is being handled (the process
    is then exiting, and later signals must still not interrupt its cleanup)."""
    if (threading.current_thread() is not threading.main_thread() or _received is not None
            or _pending is not None):
        return
    for signum, previous in _previous.items():
        signal.signal(signum, previous)
    _previous.clear()


def interrupted() -> int | None:
    """The signal that is ending this process, if any."""
    return _received if _received is not None else _pending


@contextmanager
def deferred() -> Iterator[None]:
    """A section a first signal does not cut: the signal takes effect when it ends.
    Signals are delivered to the main thread only, so other threads need no deferring."""
    global _depth, _pending, _received
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if not _depth and _pending is not None and _received is None:
            _received = _pending
            _say(_received)
            raise SystemExit(128 + _received)


@contextmanager
def ignored() -> Iterator[None]:
    """SIGTERM and SIGINT ignored (main thread): for the cleanup at a process's exit, after
    the command ended and its handlers were restored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {signum: signal.signal(signum, signal.SIG_IGN) for signum in SIGNALS}
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


def as_worker() -> None:
    """In a forked worker process: SIGTERM ends it at once (the default; its pool sends
    one when another worker died) and SIGINT is ignored (Ctrl-C reaches the whole process
    group, and the parent's handling stops the pool). Its temporary files are its
    parent's to remove."""
    global _received, _pending, _depth
    _received = _pending = None
    _depth = 0
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
