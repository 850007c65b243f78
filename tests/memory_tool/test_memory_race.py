"""A directory swapped for a symlink mid-command must not redirect any write.

A background thread keeps replacing ``root/d`` (a real directory) with a
symlink to the outside directory and back, while the main thread creates and
edits files through ``/memories/d``. Bounded by an iteration count, not time.
"""

from __future__ import annotations

import os
import threading

from conftest import SECRET, Sandbox

from membench.memory_tool import MemoryToolError, MemoryToolHandler

ITERATIONS = 300


def _swap_forever(sandbox: Sandbox, stop: threading.Event, errors: list[OSError]) -> None:
    """Park the real ``d``, put a symlink to outside in its place, then restore ``d``.

    ``create`` may re-make a missing ``d`` (mkdir -p) while it is parked; such a
    fresh directory is moved aside, still inside the root, before restoring.
    """
    target, parked = sandbox.root / "d", sandbox.root / "d-parked"
    aside = 0
    try:
        while not stop.is_set():
            os.rename(target, parked)
            try:
                os.symlink(sandbox.outside, target)
            except FileExistsError:
                pass
            else:
                os.unlink(target)
            while True:
                try:
                    os.rename(parked, target)
                    break
                except OSError:
                    aside += 1
                    os.rename(target, sandbox.root / f"d-made-{aside}")
    except OSError as err:  # surfaced by the test, not lost in the thread
        errors.append(err)


def test_symlink_swap_race_never_writes_outside(sandbox: Sandbox) -> None:
    handler = MemoryToolHandler(sandbox.root)
    handler.execute({"command": "create", "path": "/memories/d/seed.md", "file_text": SECRET})
    before = sandbox.snapshot_outside()
    stop = threading.Event()
    errors: list[OSError] = []
    swapper = threading.Thread(
        target=_swap_forever, args=(sandbox, stop, errors), daemon=True
    )
    swapper.start()
    outcomes = {"ok": 0, "refused": 0}
    try:
        for i in range(ITERATIONS):
            commands = [
                {"command": "create", "path": f"/memories/d/new-{i}.md", "file_text": "PWNED"},
                {"command": "str_replace", "path": "/memories/d/seed.md",
                 "old_str": "SECRET", "new_str": "SECRET"},
                {"command": "insert", "path": "/memories/d/sentinel.txt", "insert_line": 0,
                 "insert_text": "PWNED"},
            ]
            for command in commands:
                try:
                    handler.execute(command)
                    outcomes["ok"] += 1
                except MemoryToolError:
                    outcomes["refused"] += 1
    finally:
        stop.set()
        swapper.join(timeout=10)
    assert not swapper.is_alive()
    assert errors == []
    assert sandbox.snapshot_outside() == before
    assert (sandbox.outside / "sentinel.txt").read_text() == SECRET
    assert outcomes["ok"] > 0  # the race was real: some commands went through the real dir
