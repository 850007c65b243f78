"""Temporary directories and servers that only this account sees and that never outlive
the run, however it ends.

Every temporary directory membench makes comes from `private_dir()`: `membench-<kind>-*`
in the temp directory, mode 0700, holding an owner file (`.membench-owner`: the pid, its
start time and pid namespace) so a later run can tell a dead run's leftovers from a live
run's. It is removed by `remove()`, else at this process's exit (atexit, and the exit of
a forked multiprocessing worker, which skips atexit), else by the reaper
(membench.cleanup.reaper: a watchdog process that sees this process's pipe close, even after
a SIGKILL), else by `sweep_stale()` at the start of the next membench command. Servers
(`started_server()`) are killed the same ways. `run_secret()` makes a server's
password for this run; it is kept in memory only.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from membench.cleanup.interrupts import deferred, ignored
from membench.cleanup.reaper import kill_server, process_start, remove_tree

PREFIX = "membench-"
OWNER_FILE = ".membench-owner"
SERVER_FILE = ".membench-server"  # in the server's own private directory: "PID START"

_lock = threading.RLock()
_directories: dict[Path, int] = {}  # path -> pid of the process that made it
_servers: dict[int, tuple[str, int]] = {}  # server pid -> (start, pid of its starter)
_exit_hooks_in: set[int] = set()  # processes whose exit removes their own
_reaper: subprocess.Popen | None = None
_reaper_fd: int | None = None
_reaper_owner = 0  # the pid that started the reaper
_inherited: list[subprocess.Popen] = []  # a parent's reaper, in a forked child


def run_secret() -> str:
    """A password for a server of this run: random, never written to a log or an output."""
    return secrets.token_urlsafe(32)


def _namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def _owner_line(pid: int) -> str:
    return f"{pid} {process_start(pid) or ''} {_namespace()}\n"


def _write_private_file(path: Path, text: str) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)


def _start_reaper() -> None:
    """The watchdog of this process, started on first use."""
    global _reaper, _reaper_fd, _reaper_owner
    with _lock:
        if _reaper_fd is None or _reaper_owner != os.getpid():
            _reaper = subprocess.Popen(
                [sys.executable, "-m", "membench.cleanup.reaper"], stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL, start_new_session=True)
            _reaper_fd, _reaper_owner = _reaper.stdin.fileno(), os.getpid()


def _tell_reaper(line: str) -> None:
    """One line to the watchdog; a single write below PIPE_BUF is atomic, so threads can
    share the pipe."""
    with _lock:
        _start_reaper()
        try:
            os.write(_reaper_fd, line.encode("utf-8", "surrogateescape"))
        except OSError:
            pass  # the reaper is gone: the exit hooks and the next run's sweep remain


def _forget_parent_s_reaper() -> None:
    """In a forked child: the parent's pipe closed, so that the parent's reaper sees end of
    file as soon as the parent exits (not when the last worker does); the child starts its
    own reaper if it makes a directory."""
    global _reaper, _reaper_fd, _lock
    _lock = threading.RLock()  # another thread of the parent may have held it at the fork
    if _reaper is not None and _reaper_owner != os.getpid():
        try:
            _reaper.stdin.close()  # this process's copy of the descriptor only
        except OSError:
            pass
        _inherited.append(_reaper)  # not this process's child: never waited for here
        _reaper, _reaper_fd = None, None


os.register_at_fork(after_in_child=_forget_parent_s_reaper)


def _at_exit() -> None:
    """This process's directories and servers; then the reaper, told it is done."""
    global _reaper_fd
    pid = os.getpid()
    with ignored():
        for server, (start, starter) in list(_servers.items()):
            if starter == pid:
                kill_server(server, start)
                forget_server(server)
        for path, maker in reversed(list(_directories.items())):
            if maker == pid:
                remove(path)
        if _reaper is not None and _reaper_owner == pid and _reaper_fd is not None:
            _reaper.stdin.close()
            _reaper_fd = None
            try:
                _reaper.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass


def _hook_exit() -> None:
    pid = os.getpid()
    if pid in _exit_hooks_in:
        return
    _exit_hooks_in.add(pid)
    atexit.register(_at_exit)
    from multiprocessing import util  # a forked worker ends with os._exit, after these

    util.Finalize(None, _at_exit, exitpriority=100)


def private_dir(kind: str, parent: Path | None = None) -> Path:
    """A new directory `membench-<kind>-*` (mode 0700) with its owner file, removed at the
    latest when this process ends."""
    # The reaper started first: between the directory's making and the reaper hearing of
    # it, a SIGKILL then has one write to cut in, not a process's start (a killed stage's
    # Dask worker left its first directory behind).
    _start_reaper()
    with deferred():  # made and registered, or neither
        path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-", dir=parent))
        os.chmod(path, 0o700)
        with _lock:
            _hook_exit()
            _directories[path] = os.getpid()
        _tell_reaper(f"dir+ {path}\n")
        _write_private_file(path / OWNER_FILE, _owner_line(os.getpid()))
    return path


def remove(path: Path) -> None:
    """Removes a private directory (not cut in half by a signal) and forgets it."""
    with deferred():
        remove_tree(str(path))
        with _lock:
            _directories.pop(path, None)
        _tell_reaper(f"dir- {path}\n")


@contextlib.contextmanager
def native_temp_inside(directory: Path) -> Iterator[None]:
    """Native libraries (LanceDB's Rust `tempfile`) make temporary directories of their own
    in $TMPDIR, not through Python's tempfile; pointed at a private directory, what they
    leave when the process is killed goes with it. Python's own temp directory is kept."""
    tempfile.gettempdir()  # cached before the variable changes
    before = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(directory)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = before


def track_file(path: Path) -> None:
    """A file this process is writing (a staged output's temporary): the reaper removes it
    if the process is killed before `untrack_file()`."""
    _tell_reaper(f"dir+ {path}\n")


def untrack_file(path: Path) -> None:
    _tell_reaper(f"dir- {path}\n")


def started_server(pid: int, directory: Path) -> None:
    """Records a server this process started (the leader of its own process group), in
    memory, with the reaper, and in `directory` (a private one) for a later sweep."""
    start = process_start(pid) or ""
    with _lock:
        _hook_exit()
        _servers[pid] = (start, os.getpid())
    _tell_reaper(f"pid+ {pid} {start}\n")
    _write_private_file(directory / f"{SERVER_FILE}-{pid}", f"{pid} {start}\n")


def stop_server(process: subprocess.Popen, signum: int, seconds: float) -> None:
    """Stops a server started_server() recorded: `signum` (its own clean shutdown), then
    SIGKILL to its process group if it has not exited within `seconds`; then forgets it."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signum)
        try:
            process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    forget_server(process.pid)


def forget_server(pid: int) -> None:
    """The server has stopped."""
    with _lock:
        _servers.pop(pid, None)
    _tell_reaper(f"pid- {pid}\n")


def _read_own_file(path: Path) -> list[str] | None:
    """The words of a file this account wrote (a file the server's account could have
    replaced is not trusted: it could name any process)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(descriptor) as file:
        if os.fstat(file.fileno()).st_uid != os.geteuid():
            return None
        return file.read().split()


def _owner_gone(directory: Path) -> bool:
    words = _read_own_file(directory / OWNER_FILE)
    if not words or not words[0].isdigit():
        return False  # not ours, or its owner has not written the file yet
    start = words[1] if len(words) > 1 and words[1].isdigit() else ""
    namespace = words[2] if len(words) > 2 else ""
    if namespace != _namespace():
        return False  # another container's run: its pids are not ours to judge
    return process_start(int(words[0])) != start


def sweep_stale(temp: Path | None = None) -> list[Path]:
    """Removes the private directories whose owner process is gone (a run killed by
    SIGKILL, or whose reaper was killed too), after killing the servers listed in them."""
    root = Path(temp or tempfile.gettempdir())
    removed = []
    try:
        candidates = sorted(root.glob(f"{PREFIX}*"))
    except OSError:
        return removed
    for directory in candidates:
        if directory.is_symlink() or not directory.is_dir() or not _owner_gone(directory):
            continue
        with deferred():
            for record in directory.glob(f"{SERVER_FILE}-*"):
                words = _read_own_file(record)
                if words and words[0].isdigit():
                    kill_server(int(words[0]), words[1] if len(words) > 1 else "")
            remove_tree(str(directory))
        removed.append(directory)
    return removed


def die_with_parent(parent: int) -> None:
    """In a forked worker: SIGKILL when `parent` (the process that forked it) dies
    (Linux), so a killed stage leaves no worker waiting forever on its queue."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before prctl
        os._exit(1)
