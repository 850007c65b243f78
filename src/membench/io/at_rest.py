"""Reads every file a backend wrote, for the at-rest scanner (membench.backends.scanner
is pure: it gets the bytes from here)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path


def backend_files(root: Path | None) -> Iterator[tuple[str, bytes]]:
    """(path relative to root, bytes) of every regular file under root, in path order;
    nothing for None (a backend that writes no file)."""
    if root is None:
        return
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        try:
            blob = path.read_bytes()
        except (FileNotFoundError, PermissionError):  # a server's transient or locked file
            continue
        yield path.relative_to(root).as_posix(), blob


def tree_bytes(root: Path | None) -> dict[str, bytes]:
    return dict(backend_files(root))
