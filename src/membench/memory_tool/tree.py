"""Whole directory trees: iterative delete and depth, through directory descriptors.

No recursion, so a tree of any depth can be deleted (``shutil.rmtree`` recurses and
raised RecursionError at about 1,000 levels, leaving the data in place). Every level is
opened relative to its parent with ``O_DIRECTORY|O_NOFOLLOW|O_NONBLOCK``, so a symlink
is never followed and a directory swapped for a FIFO fails to open instead of blocking
while the root's lock is held. At most ``OPEN_LEVELS`` descriptors are held at once;
deeper levels are re-opened from the nearest held ancestor by name, again without
following anything.
"""

from __future__ import annotations

import errno
import os
import stat

from .dirfd import DIRECTORY_FLAGS, lstat_at

OPEN_LEVELS = 64
# open() with O_DIRECTORY|O_NOFOLLOW on something that is not (or no longer) a directory
_NOT_A_DIRECTORY = frozenset({errno.ENOTDIR, errno.ELOOP})


class _Level:
    """One directory on the way down: its name in its parent, its descriptor if held."""

    def __init__(self, name: str, fd: int | None) -> None:
        self.name = name
        self.fd = fd
        self.pending: list[str] | None = None  # names still to remove, listed on first visit


def _open_directory(parent_fd: int, name: str) -> int | None:
    """Descriptor of directory ``name``, or None if it is gone or is not a directory now."""
    try:
        return os.open(name, DIRECTORY_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError:
        return None
    except OSError as err:
        if err.errno in _NOT_A_DIRECTORY:
            return None
        raise


class _Descent:
    """The stack of directories from a base descriptor down to the current one.

    Descriptors are held for the deepest levels only (``levels[first_held:]``), at
    most OPEN_LEVELS of them: the walk only ever works at the bottom of the stack.
    """

    def __init__(self, base_fd: int) -> None:
        self.base_fd = base_fd
        self.levels: list[_Level] = []
        self.first_held = 0

    def fd_of(self, depth: int) -> int:
        """Descriptor of level ``depth`` (-1 = the base; else the bottom of the stack)."""
        if depth < 0:
            return self.base_fd
        level = self.levels[depth]
        if level.fd is None:  # the bottom of the stack, all above it closed: walk down again
            fd = self.base_fd
            for above in self.levels[: depth + 1]:
                fd = os.open(above.name, DIRECTORY_FLAGS, dir_fd=fd)
                above.fd = fd
            self.first_held = 0
            self._close_shallowest()
            return fd
        return level.fd

    def push(self, name: str, fd: int) -> None:
        self.levels.append(_Level(name, fd))
        self._close_shallowest()

    def _close_shallowest(self) -> None:
        """Keep at most OPEN_LEVELS descriptors: the deepest, which are needed next."""
        while len(self.levels) - self.first_held > OPEN_LEVELS:
            level = self.levels[self.first_held]
            if level.fd is not None:
                os.close(level.fd)
                level.fd = None
            self.first_held += 1

    def pop(self) -> _Level:
        level = self.levels.pop()
        if level.fd is not None:
            os.close(level.fd)
            level.fd = None
        self.first_held = min(self.first_held, len(self.levels))
        return level

    def close(self) -> None:
        while self.levels:
            self.pop()


def _unlink_non_directory(dir_fd: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass


def remove_entry(dir_fd: int, name: str) -> None:
    """Delete ``name`` in ``dir_fd``: a file or link itself, or a directory and all below it."""
    descent = _Descent(dir_fd)
    try:
        _remove_into(descent, -1, name)
        while descent.levels:
            depth = len(descent.levels) - 1
            level = descent.levels[depth]
            fd = descent.fd_of(depth)
            if level.pending is None:
                level.pending = sorted(os.listdir(fd), reverse=True)
            if level.pending:
                _remove_into(descent, depth, level.pending.pop())
                continue
            descent.pop()
            os.rmdir(level.name, dir_fd=descent.fd_of(depth - 1))
    finally:
        descent.close()


def _remove_into(descent: _Descent, depth: int, name: str) -> None:
    """Unlink ``name`` in level ``depth``, or descend into it if it is a directory."""
    parent_fd = descent.fd_of(depth)
    info = lstat_at(parent_fd, name)
    if info is None:
        return
    if stat.S_ISDIR(info.st_mode):
        child = _open_directory(parent_fd, name)
        if child is not None:
            descent.push(name, child)
            return
        if lstat_at(parent_fd, name) is None:
            return
    _unlink_non_directory(parent_fd, name)


def tree_height(dir_fd: int, name: str, limit: int) -> int:
    """Levels of entries at and below ``name``: 1 for a file, 2 for a directory of files.

    Stops once ``limit`` is reached, so a caller checking a depth bound never walks (or
    holds descriptors for) more than that many levels. 0 if ``name`` does not exist.
    """
    info = lstat_at(dir_fd, name)
    if info is None:
        return 0
    child = _open_directory(dir_fd, name) if stat.S_ISDIR(info.st_mode) else None
    if child is None:
        return 1
    descent = _Descent(dir_fd)
    descent.push(name, child)
    height = 1
    try:
        while descent.levels and height < limit:
            depth = len(descent.levels) - 1
            level = descent.levels[depth]
            fd = descent.fd_of(depth)
            if level.pending is None:
                level.pending = sorted(os.listdir(fd), reverse=True)
            if not level.pending:
                descent.pop()
                continue
            entry = level.pending.pop()
            height = max(height, len(descent.levels) + 1)
            entry_info = lstat_at(fd, entry)
            if entry_info is not None and stat.S_ISDIR(entry_info.st_mode):
                entry_fd = _open_directory(fd, entry)
                if entry_fd is not None:
                    descent.push(entry, entry_fd)
    finally:
        descent.close()
    return height
