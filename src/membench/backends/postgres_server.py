"""A throwaway PostgreSQL server: initdb on a temporary data directory, started on a unix
socket only (no TCP port), as an unprivileged user, stopped and deleted on close.

Only the account running membench gets in: the socket is in a 0700 directory
(membench.cleanup.private_temp), the socket itself is 0700, and the superuser's password
(scram-sha-256, every connection) is made per run and kept in memory only: initdb reads it
from a 0600 file deleted at once, and psycopg gets it in the conninfo. The postmaster is
started directly (no pg_ctl daemon), leads its own session, and is recorded with the
private_temp reaper: it dies with the stage even when the stage is killed by SIGKILL.

Binaries: the server that the PyPI package pgserver ships inside its wheel (PostgreSQL
16 with pgvector, in the `stores` extra), else the machine's own (pg_config --bindir,
Debian's /usr/lib/postgresql/*/bin). Run as root (CI, containers), the server runs as
the user `nobody` (postgres through setpriv, initdb through runuser), and its directory is
owned by it: PostgreSQL refuses to run as root. Where `nobody` cannot reach the binaries
(pgserver installed under root's own home, as with a pyenv Python in /root), the
installation is copied once per process to a private directory it owns. Anything that
stops the server from starting raises BackendUnavailableError with the server's own log,
never a silent skip.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from membench.backends.base import BackendUnavailableError
from membench.backends.fresh_copy import refresh
from membench.cleanup.interrupts import deferred
from membench.cleanup.private_temp import (
    OWNER_FILE,
    private_dir,
    remove,
    run_secret,
    started_server,
    stop_server,
)

UNPRIVILEGED = "nobody"
SUPERUSER = "membench"
# What is on disk must not depend on the machine's speed: no autovacuum (it would clean
# dead tuples whenever it ran; the remedies run VACUUM explicitly), no background writer
# and no timed checkpoint (they write pages at times of their own). A backend's settle()
# runs CHECKPOINT before each scan instead: the disk then holds every committed page.
SETTINGS = ("autovacuum=off", "bgwriter_lru_maxpages=0", "checkpoint_timeout=1d",
            "max_wal_size=1GB", "listen_addresses=", "fsync=off",
            "unix_socket_permissions=0700")
STARTUP_SECONDS = 60
STOP_SECONDS = 30


def _bundled_bindir() -> Path | None:
    spec = importlib.util.find_spec("pgserver")  # not imported: its import has side effects
    if spec is None or spec.origin is None:
        return None
    bindir = Path(spec.origin).parent / "pginstall" / "bin"
    return bindir if (bindir / "postgres").is_file() else None


def _system_bindir() -> Path | None:
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        if out.returncode == 0 and (Path(out.stdout.strip()) / "initdb").is_file():
            return Path(out.stdout.strip())
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return candidates[-1].parent if candidates else None


def find_bindir() -> Path:
    bindir = _bundled_bindir() or _system_bindir()
    if bindir is None:
        raise BackendUnavailableError(
            "no PostgreSQL server binaries: install the `stores` extra (pgserver ships "
            "them) or Debian's postgresql package")
    return bindir


INITDB = ("-A", "scram-sha-256", "-U", SUPERUSER, "-E", "UTF8", "--locale=C", "--no-sync")
PASSWORD_FILE = "password"  # initdb --pwfile, in the template's directory, deleted at once
_templates: dict[Path, tuple[Path, str]] = {}  # bindir -> (an initdb cluster, its password)
_templates_lock = threading.Lock()


class _StoppedServers:
    """Directories of this process's stopped servers, each a fresh cluster again, by the
    template it copies (a template made again has another path, and another password)
    and the temp directory it is in; removed with the process (private_dir)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.roots: dict[tuple[Path, str], list[Path]] = {}

    def take(self, template: Path) -> Path | None:
        with self.lock:
            roots = self.roots.get((template, tempfile.gettempdir()), [])
            while roots:
                root = roots.pop()
                if (root / "data").is_dir():
                    return root
                remove(root)  # removed from outside meanwhile: forgotten
            return None

    def give(self, template: Path, root: Path) -> None:
        with self.lock:
            self.roots.setdefault((template, str(root.parent)), []).append(root)


_stopped = _StoppedServers()


_reachable: dict[Path, Path] = {}  # bindir -> itself, or a copy of it that `nobody` can run


def _reachable_bindir(bindir: Path) -> Path:
    """`bindir`, or a copy of its installation (bin, lib, share) that `nobody` can run."""
    with _templates_lock:
        if bindir in _reachable and (_reachable[bindir] / "initdb").is_file():
            return _reachable[bindir]  # (a copy removed from outside is made again)
        probe = subprocess.run(["runuser", "-u", UNPRIVILEGED, "--", "test", "-x",
                                str(bindir / "initdb")], capture_output=True, check=False)
        if probe.returncode == 0:
            _reachable[bindir] = bindir
            return bindir
        root = private_dir("pg-install")  # removed when the process ends
        try:
            _copy_installation(bindir.parent, root)
        except BaseException:
            remove(root)
            raise
        _reachable[bindir] = root / _COPY_LAYOUT / bindir.parent.name / bindir.name
        return _reachable[bindir]


_COPY_LAYOUT = Path("site-packages") / "package"


def _copy_installation(install: Path, root: Path) -> None:
    """The installation keeps its place relative to the wheel's vendored libraries
    (auditwheel's `<package>.libs` beside the package, reached through the binaries'
    RPATH `$ORIGIN/../../../<package>.libs`): both are copied in the same layout. Inside,
    everything is 0755; `root` stays 0700, owned by `nobody`, so no other account gets in."""
    site = root / _COPY_LAYOUT.parent
    shutil.copytree(install, root / _COPY_LAYOUT / install.name, symlinks=True,
                    ignore=shutil.ignore_patterns("include"))
    for libs in sorted(install.parent.parent.glob("*.libs")):
        shutil.copytree(libs, site / libs.name, symlinks=True)
    for path in [root, *root.rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            os.chmod(path, 0o755)
    os.chmod(root, 0o700)
    shutil.chown(root, UNPRIVILEGED)


class PostgresServer:
    """Started by the constructor, stopped by close(); `data` is the directory to scan.

    The data directory is a copy of one initdb cluster per process, never started:
    initdb writes the same files every time (bar the random system identifier and the
    creation time in pg_control and the WAL's page headers), so a copy is a fresh
    cluster, at a fraction of initdb's time. A stopped server's directory is made that
    copy again at once (membench.backends.fresh_copy: its files rewritten, what the server
    added deleted) and the process's next server starts in it."""

    def __init__(self) -> None:
        self._as_root = os.geteuid() == 0
        self.bindir = find_bindir()
        self._process: subprocess.Popen | None = None
        self.root: Path | None = None
        if self._as_root:
            self.bindir = _reachable_bindir(self.bindir)
        self._template_dir, self._password = self._template()
        # 0700; owned by `nobody` when run as root
        self.root = _stopped.take(self._template_dir) or private_dir("pg")
        self.data = self.root / "data"
        self.socket_dir = self.root
        try:
            self._own(self.root)
            if not self.data.exists():  # else a stopped server's, already fresh
                refresh(self.data, self._template_dir, self._server_account())
            self._start()
        except BaseException:
            self.close()
            raise

    def _server_account(self) -> str | None:
        """Who must own the server's files: `nobody` when run as root, else the caller."""
        return UNPRIVILEGED if self._as_root else None

    def _own(self, directory: Path) -> None:
        """Run as root, the server's account must own its directory (still 0700)."""
        if self._as_root:
            os.chmod(directory, 0o700)
            shutil.chown(directory, UNPRIVILEGED)

    def _template(self) -> tuple[Path, str]:
        with _templates_lock:
            if self.bindir in _templates and not _templates[self.bindir][0].is_dir():
                del _templates[self.bindir]  # removed from outside (a test's temp dir)
            if self.bindir not in _templates:
                root = private_dir("pg-template")  # removed when the process ends
                password = run_secret()
                try:
                    self._own(root)
                    secret = root / PASSWORD_FILE
                    descriptor = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                    with os.fdopen(descriptor, "w") as file:
                        file.write(password + "\n")
                    try:
                        if self._as_root:
                            shutil.chown(secret, UNPRIVILEGED)
                        self._run("initdb", "-D", str(root / "data"), f"--pwfile={secret}",
                                  *INITDB)
                    finally:
                        secret.unlink(missing_ok=True)
                except BaseException:
                    remove(root)
                    raise
                _templates[self.bindir] = (root / "data", password)
            return _templates[self.bindir]

    def _as_server_account(self, command: list[str]) -> list[str]:
        if not self._as_root:
            return command
        account = pwd.getpwnam(UNPRIVILEGED)
        # setpriv execs (runuser forks): the pid started is the postmaster's own
        return ["setpriv", f"--reuid={account.pw_uid}", f"--regid={account.pw_gid}",
                "--clear-groups", "--", *command]

    def _start(self) -> None:
        """The postmaster in a session of its own (a signal to the stage's process group
        does not reach it: the stage stops it), recorded before anything can fail."""
        command = [str(self.bindir / "postgres"), "-D", str(self.data),
                   "-k", str(self.socket_dir)]
        for setting in SETTINGS:
            command += ["-c", setting]
        with deferred(), open(self.root / "server.log", "ab") as log:
            self._process = subprocess.Popen(
                self._as_server_account(command), stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, cwd=self.root, start_new_session=True)
            started_server(self._process.pid, self.root)
        deadline = time.monotonic() + STARTUP_SECONDS
        while not self._ready():
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise BackendUnavailableError(
                    f"PostgreSQL postgres failed to start ({self._process.poll()}): "
                    f"{self._log()}")
            time.sleep(0.02)

    def _ready(self) -> bool:
        """postmaster.pid names this process and says "ready" (what pg_ctl -w waits for)."""
        try:
            lines = (self.data / "postmaster.pid").read_text().splitlines()
        except OSError:
            return False
        return (len(lines) >= 8 and lines[0].strip() == str(self._process.pid)
                and lines[7].strip() == "ready")

    def _log(self) -> str:
        if self.root is None:  # initdb of the template: no server yet
            return ""
        log = self.root / "server.log"
        return log.read_text(errors="replace")[-2000:].strip() if log.is_file() else ""

    def _run(self, program: str, *args: str) -> None:
        command = [str(self.bindir / program), *args]
        if self._as_root:
            command = ["runuser", "-u", UNPRIVILEGED, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise BackendUnavailableError(
                f"PostgreSQL {program} failed ({done.returncode}): "
                f"{(done.stderr or done.stdout).strip()[-2000:]} {self._log()}".strip())

    def conninfo(self, database: str = "postgres") -> str:
        """For psycopg only: it holds the run's password."""
        return (f"host={self.socket_dir} user={SUPERUSER} dbname={database} "
                f"password={self._password}")

    def _stop(self) -> None:
        """A fast shutdown (SIGINT: sessions ended, a checkpoint), SIGKILL to the server's
        process group if it takes too long."""
        process, self._process = self._process, None
        if process is not None:
            stop_server(process, signal.SIGINT, STOP_SECONDS)

    def close(self) -> None:
        """Stops the server and makes its directory a fresh cluster again for the next
        (or removes it), whatever signal arrives meanwhile."""
        with deferred():
            self._stop()
            template = self._template_dir
            try:
                if not self.data.is_dir():
                    raise FileNotFoundError(self.data)
                for entry in self.root.iterdir():  # its log, its record, a killed one's socket
                    if entry.name in (OWNER_FILE, self.data.name):
                        continue
                    if entry.is_dir() and not entry.is_symlink():
                        shutil.rmtree(entry)
                    else:
                        entry.unlink()
                refresh(self.data, template, self._server_account())
            except (OSError, ValueError):  # (a symlink in it: ValueError) not reused
                remove(self.root)
                return
            _stopped.give(template, self.root)
