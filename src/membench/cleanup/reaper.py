"""The watchdog that removes what a membench process could not: run as
`python -m membench.cleanup.reaper`, in a session of its own, by membench.cleanup.private_temp.

It reads lines on stdin from the process that started it (a forked child closes its
copy of the pipe): `dir+ PATH`, `dir- PATH`, `pid+ PID START`, `pid- PID`. When stdin
reaches end of file, that process has exited, however it exited (SIGKILL included):
it then kills each server still listed and its children (if the pid is still the one
listed: same start time) and removes each directory (or staged file) still listed. Imports nothing of membench's, so that it starts quickly and always can.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time


def process_start(pid: int) -> str | None:
    """The process's start time (clock ticks since boot), None if it is gone or a zombie;
    "" where /proc is missing (then a pid that exists is taken as the same process)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except FileNotFoundError:
        if not os.path.isdir("/proc/self"):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return None
            except PermissionError:
                return ""
            return ""
        return None
    except OSError:
        return None
    if fields[0] in (b"Z", b"X"):
        return None
    return fields[19].decode()


def _children(pid: int) -> list[tuple[int, str]]:
    """(pid, start) of the process's children (a postmaster's children each lead a
    session of their own, so its process group does not hold them)."""
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] not in (b"Z", b"X"):
            found.append((int(name), fields[19].decode()))
    return found


def _kill(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def kill_server(pid: int, start: str) -> None:
    """SIGKILL to the server and its children, if the pid is still the server's (same
    start time); then waits, briefly, until they are gone."""
    if process_start(pid) != start:
        return
    children = _children(pid)
    _kill(pid)
    for child, child_start in children:
        if process_start(child) == child_start:
            _kill(child)
    deadline = time.monotonic() + 10
    for process, process_started in [(pid, start), *children]:
        while process_start(process) == process_started and time.monotonic() < deadline:
            time.sleep(0.02)


def remove_tree(path: str) -> None:
    """Removes a directory (or a file: a staged output's temporary); retried, as a process
    killed a moment ago may have been writing in it."""
    for _ in range(5):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass
        if not os.path.lexists(path):
            return
        time.sleep(0.05)


def main() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)  # only end of file ends it
    directories: dict[str, None] = {}
    servers: dict[int, str] = {}
    for raw in sys.stdin.buffer:
        verb, _, rest = raw.rstrip(b"\n").partition(b" ")
        if verb == b"dir+":
            directories[os.fsdecode(rest)] = None
        elif verb == b"dir-":
            directories.pop(os.fsdecode(rest), None)
        elif verb == b"pid+":
            pid, _, start = rest.decode().partition(" ")
            servers[int(pid)] = start
        elif verb == b"pid-":
            servers.pop(int(rest.decode()), None)
    for pid, start in servers.items():
        kill_server(pid, start)
    for path in reversed(list(directories)):
        remove_tree(path)


if __name__ == "__main__":
    main()
