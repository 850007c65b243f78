"""The ``view`` result for a directory, read through directory descriptors.

Matches the SDK's listing: two levels deep, sorted by name, hidden entries
(names starting with ``.``) skipped, directories suffixed with ``/``, sizes in
the SDK's human format. Unlike the SDK, symlinks and other special files are
left out instead of followed, and so are hard-linked files: their size may be an
outside file's. A name that is not UTF-8 is shown with its bytes escaped
(``caf\\xe9.md``), never as lone surrogates, which are not valid text for the model.
"""

from __future__ import annotations

import os
import stat

from . import messages
from .dirfd import DIRECTORY_FLAGS

MAX_DEPTH = 2
_SIZE_UNITS = ("B", "K", "M", "G")


def format_size(size: int) -> str:
    """Bytes as the SDK prints them: ``0B``, ``512B``, ``4.0K``, ``1.5M``."""
    if size == 0:
        return "0B"
    exponent = min((size.bit_length() - 1) // 10, len(_SIZE_UNITS) - 1)
    scaled = size / (1024**exponent)
    if scaled == int(scaled):
        return f"{int(scaled)}{_SIZE_UNITS[exponent]}"
    return f"{scaled:.1f}{_SIZE_UNITS[exponent]}"


def shown_name(name: str) -> str:
    """A file name as valid text: bytes that are not UTF-8 become ``\\xNN`` escapes."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _collect(dir_fd: int, prefix: str, depth: int, out: list[tuple[str, str]]) -> None:
    try:
        names = sorted(os.listdir(dir_fd))
    except OSError:
        return
    for name in names:
        if name.startswith("."):
            continue
        relative = f"{prefix}{shown_name(name)}"
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode):
            out.append((format_size(info.st_size), f"{relative}/"))
            if depth < MAX_DEPTH:
                _collect_child(dir_fd, name, f"{relative}/", depth + 1, out)
        elif stat.S_ISREG(info.st_mode) and info.st_nlink == 1:
            out.append((format_size(info.st_size), relative))


def _collect_child(
    dir_fd: int, name: str, prefix: str, depth: int, out: list[tuple[str, str]]
) -> None:
    try:
        child_fd = os.open(name, DIRECTORY_FLAGS, dir_fd=dir_fd)
    except OSError:
        return  # vanished or swapped for a symlink since the stat: skip it
    try:
        _collect(child_fd, prefix, depth, out)
    finally:
        os.close(child_fd)


def render_directory(dir_fd: int, dir_size: int, header_path: str, display: str) -> str:
    """Listing of the directory open at ``dir_fd`` (``display`` is its canonical path)."""
    entries: list[tuple[str, str]] = []
    _collect(dir_fd, "", 1, entries)
    lines = [f"{format_size(dir_size)}\t{display}"]
    lines.extend(f"{size}\t{display}/{relative}" for size, relative in entries)
    header = messages.DIR_VIEW_HEADER.format(path=header_path)
    return header + "\n" + "\n".join(lines)
