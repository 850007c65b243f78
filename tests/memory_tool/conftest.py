"""Shared fixtures: a memory root next to an "outside" directory holding secrets.

Every escape test compares a snapshot of everything outside the root before and
after, so "nothing outside changed" is checked the same way everywhere.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

import pytest

from membench.memory_tool import MemoryToolHandler

SECRET = "SECRET: do not touch\n"


def snapshot_tree(top: Path) -> dict[str, tuple[str, str]]:
    """Kind and content hash (or link target) of every entry under ``top``, no links followed."""
    result: dict[str, tuple[str, str]] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            relative = os.path.relpath(full, top)
            info = os.lstat(full)
            if stat.S_ISLNK(info.st_mode):
                result[relative] = ("link", os.readlink(full))
            elif stat.S_ISDIR(info.st_mode):
                result[relative] = ("dir", oct(info.st_mode))
            else:
                digest = hashlib.sha256(Path(full).read_bytes()).hexdigest()
                result[relative] = ("file", f"{digest}:{oct(info.st_mode)}")
    return result


@dataclass
class Sandbox:
    """``base`` holds ``root`` (the memory root) and ``outside`` (must never change)."""

    base: Path
    root: Path
    outside: Path

    def snapshot_outside(self) -> tuple[dict[str, tuple[str, str]], list[str]]:
        return snapshot_tree(self.outside), sorted(os.listdir(self.base))

    def plant_escape_hatches(self) -> None:
        """Symlinks, a loop and a hard link inside the root that lead outside."""
        hatches = {
            "link_dir": str(self.outside),
            "link_file": str(self.outside / "sentinel.txt"),
            "link_up": "..",
            "link_abs_root": "/",
            "loop": "loop",
            "dangling": str(self.outside / "created-through-dangling.txt"),
        }
        for name, target in hatches.items():
            if not os.path.lexists(self.root / name):
                os.symlink(target, self.root / name)
        if not os.path.lexists(self.root / "hard"):
            os.link(self.outside / "sentinel.txt", self.root / "hard")


def make_sandbox(base: Path) -> Sandbox:
    root, outside = base / "root", base / "outside"
    root.mkdir()
    (outside / "sub").mkdir(parents=True)
    (outside / "sentinel.txt").write_text(SECRET)
    (outside / "sub" / "seed.md").write_text(SECRET)
    (outside / "seed.md").write_text(SECRET)
    return Sandbox(base, root, outside)


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return make_sandbox(tmp_path)


@pytest.fixture
def handler(sandbox: Sandbox) -> MemoryToolHandler:
    return MemoryToolHandler(sandbox.root)
