"""Files a memory system wrote outside its own directory.

A system promises to write only under the directory it is given. Before it runs, the
watcher notes every file under the working directory (the repository, where a relative path
lands) and the names at the top of the home directory (where libraries put their
`~/.name` folders); after, anything new or changed there, or any name in the run's own
work directory that is neither a system's directory nor a remedy's copy, is a write
outside. Version-control and DVC folders are not watched (DVC writes there itself).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

SKIPPED = frozenset({".git", ".dvc", "__pycache__", ".pytest_cache", ".ruff_cache", ".hypothesis"})


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """relative path -> (size, mtime in ns) of every file under root, SKIPPED left out."""
    found: dict[str, tuple[int, int]] = {}
    for folder, names, files in os.walk(root):
        names[:] = [n for n in names if n not in SKIPPED]
        for name in files:
            path = Path(folder) / name
            try:
                stat = path.stat()
            except OSError:  # gone between the listing and the stat
                continue
            found[path.relative_to(root).as_posix()] = (stat.st_size, stat.st_mtime_ns)
    return found


def _top(root: Path) -> set[str]:
    try:
        return {entry.name for entry in os.scandir(root)}
    except OSError:
        return set()


@dataclass
class WriteWatch:
    """Snapshot of the working tree and the home directory's top names."""

    cwd: Path
    home: Path
    files: dict[str, tuple[int, int]]
    home_names: set[str]

    @classmethod
    def start(cls, cwd: Path | None = None, home: Path | None = None) -> WriteWatch:
        cwd = (cwd or Path.cwd()).resolve()
        home = (home or Path.home()).resolve()
        return cls(cwd, home, _tree(cwd), _top(home))

    def written(self, workdir: Path, allowed: set[str]) -> list[str]:
        """Paths written since start outside the allowed names of workdir, sorted.
        workdir itself may sit under the working tree or home; it is not counted there."""
        workdir = workdir.resolve()
        outside = []
        for relative, stat in _tree(self.cwd).items():
            path = self.cwd / relative
            if self.files.get(relative) != stat and not path.is_relative_to(workdir):
                outside.append(str(path))
        for name in _top(self.home) - self.home_names:
            if not workdir.is_relative_to(self.home / name):
                outside.append(str(self.home / name))
        outside += [str(workdir / name) for name in _top(workdir) - allowed]
        return sorted(outside)
