"""Walking the memory tree through directory file descriptors.

Second and third layers of path safety. Every component is opened relative to
its parent's descriptor with ``O_NOFOLLOW``, so a symlink anywhere below the
root is never followed, and a directory swapped for a symlink after validation
cannot redirect a write: the write goes to the directory we already hold open.
After the walk, the directory actually opened is resolved through
``/proc/self/fd`` (or ``F_GETPATH``) and must still lie within the root.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager

from . import messages
from .errors import MemoryToolError
from .paths import is_within

DIR_MODE = 0o700
# O_NONBLOCK everywhere: opening a FIFO planted (or swapped in) anywhere in the tree must
# not hang the tool while it holds the root's lock.
DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
NODE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class MissingPathError(MemoryToolError):
    """A component does not exist (or a parent is a file); callers may reword it."""

    def __init__(self, display: str) -> None:
        super().__init__(messages.NOT_FOUND_FOR_VIEW.format(path=display))


class SymlinkRefusedError(MemoryToolError):
    """A component is a symbolic link; the tool never follows one."""

    def __init__(self) -> None:
        super().__init__(messages.SYMLINK_ESCAPES)


def prepare_root(root: str | os.PathLike[str], *, create: bool) -> str:
    """Return the resolved root directory, creating it (mode 0700) if asked."""
    real_root = os.path.realpath(root)
    try:
        if create:
            os.makedirs(real_root, mode=DIR_MODE, exist_ok=True)
        if not os.path.isdir(real_root):
            raise MemoryToolError(
                messages.ROOT_UNUSABLE.format(root=real_root, reason="not a directory")
            )
    except OSError as err:
        raise MemoryToolError(
            messages.ROOT_UNUSABLE.format(root=real_root, reason=err.strerror or str(err))
        ) from err
    return real_root


@contextmanager
def open_root(real_root: str) -> Iterator[int]:
    """Descriptor of the root directory for the duration of one command."""
    try:
        fd = os.open(real_root, os.O_RDONLY | os.O_DIRECTORY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise MemoryToolError(
            messages.ROOT_UNUSABLE.format(root=real_root, reason=err.strerror or str(err))
        ) from err
    try:
        yield fd
    finally:
        os.close(fd)


def lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    """``lstat`` of ``name`` in ``dir_fd``; None if it does not exist."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _refusal_for(dir_fd: int, name: str, err: OSError, display: str) -> MemoryToolError | None:
    """Turn an open() failure into a model-facing refusal, or None to re-raise it."""
    if err.errno == errno.ENOENT:
        return MissingPathError(display)
    if err.errno in (errno.ENOTDIR, errno.ELOOP):
        info = lstat_at(dir_fd, name)
        if info is not None and stat.S_ISLNK(info.st_mode):
            return SymlinkRefusedError()
        if info is None or err.errno == errno.ENOTDIR:
            return MissingPathError(display)
    return None


def _open_at(dir_fd: int, name: str, flags: int, display: str) -> int:
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as err:
        refusal = _refusal_for(dir_fd, name, err, display)
        if refusal is None:
            raise
        raise refusal from err


def _open_child_directory(parent_fd: int, name: str, *, create: bool, display: str) -> int:
    if not create or lstat_at(parent_fd, name) is not None:
        return _open_at(parent_fd, name, DIRECTORY_FLAGS, display)
    try:
        os.mkdir(name, DIR_MODE, dir_fd=parent_fd)
    except FileExistsError:
        return _open_at(parent_fd, name, DIRECTORY_FLAGS, display)  # made concurrently
    fd = _open_at(parent_fd, name, DIRECTORY_FLAGS, display)
    os.fchmod(fd, DIR_MODE)  # exact mode whatever the umask
    return fd


def opened_path(fd: int) -> str | None:
    """Where ``fd`` really is now, or None if the platform cannot tell."""
    proc_link = f"/proc/self/fd/{fd}"
    if os.path.isdir("/proc/self/fd"):
        return os.readlink(proc_link)
    get_path = getattr(fcntl, "F_GETPATH", None)
    if get_path is not None:
        return os.fsdecode(fcntl.fcntl(fd, get_path, b"\0" * 1024).rstrip(b"\0"))
    return None


def check_contained(fd: int, real_root: str) -> None:
    """Refuse if the directory behind ``fd`` is not inside the root (defence in depth)."""
    where = opened_path(fd)
    if where is not None and not is_within(real_root, where):
        raise SymlinkRefusedError()


@contextmanager
def open_directory(
    root_fd: int,
    real_root: str,
    parts: tuple[str, ...],
    *,
    display: str,
    create: bool = False,
) -> Iterator[int]:
    """Descriptor of the directory ``parts`` below the root, never via a symlink.

    With ``create`` missing directories are made with mode 0700 (like
    ``mkdir -p``). ``display`` is the model-facing path used in errors.
    """
    fd = os.dup(root_fd)
    try:
        for name in parts:
            child = _open_child_directory(fd, name, create=create, display=display)
            os.close(fd)
            fd = child
        check_contained(fd, real_root)
        yield fd
    finally:
        os.close(fd)


@contextmanager
def open_node(dir_fd: int, name: str, *, display: str) -> Iterator[tuple[int, os.stat_result]]:
    """Open ``name`` (file or directory) read-only without following a symlink."""
    fd = _open_at(dir_fd, name, NODE_FLAGS, display)
    try:
        yield fd, os.fstat(fd)
    finally:
        os.close(fd)
