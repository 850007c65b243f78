"""Crash-safe file writes inside an already-open directory.

A reader (or a crash) must never see a half-written memory file, so content is
written to a temp file in the same directory, fsynced, and then published in
one step: ``os.replace`` to overwrite, ``os.link`` to create without
overwriting. The directory is fsynced afterwards so the new name survives a
power cut. Publishing a fresh inode also means an edit never writes through a
hard link into some other file's data.
"""

from __future__ import annotations

import errno
import os
import uuid
from collections.abc import Callable

from .paths import TEMP_PREFIX

FILE_MODE = 0o600
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# link() is not supported everywhere (some FUSE/network filesystems).
_NO_LINK_ERRNOS = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV})


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written == 0:
            raise OSError(errno.EIO, "write returned 0 bytes")
        view = view[written:]


def _write_temp(dir_fd: int, data: bytes, sync: Callable[[int], None]) -> str:
    temp_name = f"{TEMP_PREFIX}{os.getpid()}-{uuid.uuid4().hex}"
    fd = os.open(temp_name, _TEMP_FLAGS, FILE_MODE, dir_fd=dir_fd)
    try:
        os.fchmod(fd, FILE_MODE)  # exact mode whatever the umask
        _write_all(fd, data)
        sync(fd)
    except BaseException:
        os.close(fd)
        _remove_quietly(dir_fd, temp_name)
        raise
    os.close(fd)
    return temp_name


def _remove_quietly(dir_fd: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass


def _publish_new(dir_fd: int, temp_name: str, name: str) -> None:
    """Give the temp file its final name, failing with FileExistsError if taken."""
    try:
        os.link(temp_name, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    except OSError as err:
        if err.errno not in _NO_LINK_ERRNOS:
            raise
        # Fallback: check then rename; only safe because callers hold the root lock.
        try:
            os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            os.rename(temp_name, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            return
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), name) from err
    os.unlink(temp_name, dir_fd=dir_fd)


def write_file(dir_fd: int, name: str, data: bytes, *, overwrite: bool,
               sync: Callable[[int], None] = os.fsync) -> None:
    """Atomically make ``name`` in ``dir_fd`` hold ``data`` (mode 0600).

    ``overwrite=False`` raises FileExistsError if anything (even a dangling
    symlink) already has that name; ``overwrite=True`` replaces the name, never
    the old inode's contents. ``sync`` flushes the file, then the directory.
    """
    temp_name = _write_temp(dir_fd, data, sync)
    try:
        if overwrite:
            os.replace(temp_name, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        else:
            _publish_new(dir_fd, temp_name, name)
    except BaseException:
        _remove_quietly(dir_fd, temp_name)
        raise
    sync(dir_fd)
