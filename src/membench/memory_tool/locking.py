"""Serialising commands across threads and processes.

One lock per root: a hidden file ``.memory-tool.lock`` in the root directory,
held with ``fcntl.flock`` - exclusive for commands that change anything, shared
for ``view``. A per-root lock (rather than per file) also makes ``rename`` and
``delete`` of whole directories safe against concurrent edits, and memory
commands are far too rare for the coarse grain to matter. Each acquisition opens
the file afresh, so threads of one process exclude each other too. The lock only
binds processes that use this tool; see the docs for what it does not stop.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager

from .atomic import FILE_MODE
from .paths import LOCK_NAME

_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_ONLY_ERRNOS = frozenset({errno.EACCES, errno.EROFS, errno.EPERM})


@contextmanager
def root_lock(root_fd: int, *, exclusive: bool) -> Iterator[None]:
    """Hold the root's lock; a shared lock on a read-only root degrades to none."""
    try:
        fd = os.open(LOCK_NAME, _LOCK_FLAGS, FILE_MODE, dir_fd=root_fd)
    except OSError as err:
        if exclusive or err.errno not in _READ_ONLY_ERRNOS:
            raise
        yield  # nobody can write here either, so there is nothing to wait for
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # closing releases the flock
