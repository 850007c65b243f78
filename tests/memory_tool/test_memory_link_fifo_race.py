"""Races an outside review won: a hard link flickered into the root, a FIFO swapped in.

Each attacker is a separate process looping as fast as it can for a few seconds while
this process runs commands; the tests count what got through (reads of the outside
file, copies of it, commands that never returned), they do not sleep and hope.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

from conftest import SECRET, Sandbox

from membench.memory_tool import MemoryToolError, MemoryToolHandler

RACE_SECONDS = 3.0
HANG_SECONDS = 2.0

# Links the outside file into the root and unlinks it again, in a tight loop.
FLICKER_LINK = """
import os, sys, time
outside, name, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
deadline = time.monotonic() + seconds
while time.monotonic() < deadline:
    try:
        os.link(outside, name)
    except FileExistsError:
        pass
    try:
        os.unlink(name)
    except FileNotFoundError:
        pass
"""

# Swaps a directory and a FIFO under one name with renameat2(RENAME_EXCHANGE), so the
# name is always one or the other; whatever a delete removed is made again.
FLICKER_FIFO = """
import ctypes, os, sys, time
name, spare, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
deadline = time.monotonic() + seconds
while time.monotonic() < deadline:
    if libc.renameat2(AT_FDCWD, name.encode(), AT_FDCWD, spare.encode(), RENAME_EXCHANGE):
        for make in (os.mkdir, os.mkfifo):
            for path in (name, spare):
                try:
                    make(path)
                    break
                except FileExistsError:
                    pass
"""

# Deletes /memories/v over and over, printing one line per finished command.
DELETE_LOOP = """
import sys, time
from membench.memory_tool import MemoryToolError, MemoryToolHandler
handler = MemoryToolHandler(sys.argv[1])
deadline = time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline:
    try:
        handler.execute({"command": "delete", "path": "/memories/v"})
    except MemoryToolError:
        pass
    print("done", flush=True)
print("finished", flush=True)
"""


def _python(script: str, *args: object) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return subprocess.Popen([sys.executable, "-c", script, *map(str, args)], env=env,
                            stdout=subprocess.PIPE, text=True)


def _outside_content_seen(sandbox: Sandbox, command: dict[str, object]) -> int:
    """Run ``command`` while the outside file flickers in; count results that got its data."""
    attacker = _python(FLICKER_LINK, sandbox.outside / "sentinel.txt", sandbox.root / "x",
                       RACE_SECONDS)
    handler = MemoryToolHandler(sandbox.root)
    seen = 0
    deadline = time.monotonic() + RACE_SECONDS
    while time.monotonic() < deadline:
        try:
            result = handler.execute(command)
        except MemoryToolError:
            continue
        # view returns the content; a successful edit copied it into a root file
        seen += "SECRET" in result or command["command"] != "view"
    attacker.wait(timeout=30)
    return seen


def test_view_never_returns_a_hard_link_flickered_in(sandbox: Sandbox) -> None:
    assert _outside_content_seen(sandbox, {"command": "view", "path": "/memories/x"}) == 0


def test_insert_never_copies_a_hard_link_flickered_in(sandbox: Sandbox) -> None:
    command = {"command": "insert", "path": "/memories/x", "insert_line": 0,
               "insert_text": "note"}
    assert _outside_content_seen(sandbox, command) == 0
    assert (sandbox.outside / "sentinel.txt").read_text() == SECRET


def test_str_replace_never_copies_a_hard_link_flickered_in(sandbox: Sandbox) -> None:
    command = {"command": "str_replace", "path": "/memories/x", "old_str": "SECRET",
               "new_str": "SECRET"}
    assert _outside_content_seen(sandbox, command) == 0


def _read_line(stream, seconds: float) -> str | None:
    ready, _, _ = select.select([stream], [], [], seconds)
    return stream.readline() if ready else None


def test_delete_never_hangs_on_a_directory_swapped_for_a_fifo(sandbox: Sandbox) -> None:
    attacker = _python(FLICKER_FIFO, sandbox.root / "v", sandbox.root / ".spare", RACE_SECONDS)
    deleter = _python(DELETE_LOOP, sandbox.root, RACE_SECONDS)
    deletes, hung = 0, False
    try:
        while True:
            line = _read_line(deleter.stdout, HANG_SECONDS)
            if line is None:
                hung = True  # one delete ran for HANG_SECONDS: blocked on a FIFO open
                break
            if line != "done\n":
                break
            deletes += 1
    finally:
        deleter.kill()
        deleter.wait()
        attacker.wait(timeout=30)
    assert not hung, f"delete hung after {deletes} commands"
    assert deletes > 0


def test_race_helpers_really_flicker(sandbox: Sandbox) -> None:
    """The attackers do create what they race with (else the tests above prove nothing)."""
    attacker = _python(FLICKER_LINK, sandbox.outside / "sentinel.txt", sandbox.root / "x", 1.0)
    saw_link = False
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline and not saw_link:
        saw_link = Path(sandbox.root / "x").exists()
    attacker.wait(timeout=30)
    assert saw_link
