"""A throwaway PostgreSQL server: initdb on a temporary data directory, started on a unix
socket only (no TCP port), as an unprivileged user, stopped and deleted on close.

Binaries: the server that the PyPI package pgserver ships inside its wheel (PostgreSQL
16 with pgvector, in the `stores` extra), else the machine's own (pg_config --bindir,
Debian's /usr/lib/postgresql/*/bin). Run as root (CI, containers), every server command
runs as the user `nobody` through runuser, and the data directory is owned by it:
PostgreSQL refuses to run as root. Where `nobody` cannot reach the binaries (pgserver
installed under root's own home, as with a pyenv Python in /root), the installation is
copied once per process to a temporary directory it can read. Anything that stops the server from starting raises
BackendUnavailableError with the server's own log, never a silent skip.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from membench.backends.base import BackendUnavailableError

UNPRIVILEGED = "nobody"
SUPERUSER = "membench"
# What is on disk must not depend on the machine's speed: no autovacuum (it would clean
# dead tuples whenever it ran; the remedies run VACUUM explicitly), no background writer
# and no timed checkpoint (they write pages at times of their own). A backend's settle()
# runs CHECKPOINT before each scan instead: the disk then holds every committed page.
SETTINGS = ("autovacuum=off", "bgwriter_lru_maxpages=0", "checkpoint_timeout=1d",
            "max_wal_size=1GB", "listen_addresses=''", "fsync=off")


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


INITDB = ("-A", "trust", "-U", SUPERUSER, "-E", "UTF8", "--locale=C", "--no-sync")
_templates: dict[Path, Path] = {}  # bindir -> a never-started initdb cluster
_templates_lock = threading.Lock()


def _chown_tree(root: Path, user: str) -> None:
    shutil.chown(root, user)
    for path in root.rglob("*"):
        shutil.chown(path, user)


def _remove_templates() -> None:
    for template in _templates.values():
        shutil.rmtree(template.parent, ignore_errors=True)


_reachable: dict[Path, Path] = {}  # bindir -> itself, or a copy of it that `nobody` can run
_copies: list[Path] = []


def _reachable_bindir(bindir: Path) -> Path:
    """`bindir`, or a copy of its installation (bin, lib, share) that `nobody` can run."""
    with _templates_lock:
        if bindir in _reachable:
            return _reachable[bindir]
        probe = subprocess.run(["runuser", "-u", UNPRIVILEGED, "--", "test", "-x",
                                str(bindir / "initdb")], capture_output=True, check=False)
        if probe.returncode == 0:
            _reachable[bindir] = bindir
            return bindir
        root = Path(tempfile.mkdtemp(prefix="membench-pg-install-"))
        try:
            _copy_installation(bindir.parent, root)
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        if not _copies:
            atexit.register(_remove_copies)
        _copies.append(root)
        _reachable[bindir] = root / _COPY_LAYOUT / bindir.parent.name / bindir.name
        return _reachable[bindir]


_COPY_LAYOUT = Path("site-packages") / "package"


def _copy_installation(install: Path, root: Path) -> None:
    """The installation keeps its place relative to the wheel's vendored libraries
    (auditwheel's `<package>.libs` beside the package, reached through the binaries'
    RPATH `$ORIGIN/../../../<package>.libs`): both are copied in the same layout."""
    os.chmod(root, 0o755)
    site = root / _COPY_LAYOUT.parent
    shutil.copytree(install, root / _COPY_LAYOUT / install.name, symlinks=True,
                    ignore=shutil.ignore_patterns("include"))
    for libs in sorted(install.parent.parent.glob("*.libs")):
        shutil.copytree(libs, site / libs.name, symlinks=True)
    for path in [root, *root.rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            os.chmod(path, 0o755)


def _remove_copies() -> None:
    for root in _copies:
        shutil.rmtree(root, ignore_errors=True)


class PostgresServer:
    """Started by the constructor, stopped by close(); `data` is the directory to scan.

    The data directory is a copy of one initdb cluster per process, never started:
    initdb writes the same files every time (bar the random system identifier and the
    creation time in pg_control and the WAL's page headers), so a copy is a fresh
    cluster, at a fraction of initdb's time."""

    def __init__(self) -> None:
        self._as_root = os.geteuid() == 0
        self.bindir = find_bindir()
        self.root = Path(tempfile.mkdtemp(prefix="membench-pg-"))
        self.data = self.root / "data"
        self.socket_dir = self.root
        try:
            if self._as_root:
                self.bindir = _reachable_bindir(self.bindir)
            self._own(self.root)
            shutil.copytree(self._template(), self.data, symlinks=True)
            if self._as_root:
                _chown_tree(self.data, UNPRIVILEGED)
            options = " ".join(f"-c {setting}" for setting in SETTINGS)
            self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"),
                      "-o", f"-k {self.socket_dir} {options}", "-w", "-t", "60", "start")
        except BaseException:
            self.close()
            raise

    def _own(self, directory: Path) -> None:
        if self._as_root:
            os.chmod(directory, 0o755)
            shutil.chown(directory, UNPRIVILEGED)

    def _template(self) -> Path:
        with _templates_lock:
            if self.bindir not in _templates:
                root = Path(tempfile.mkdtemp(prefix="membench-pg-template-"))
                try:
                    self._own(root)
                    self._run("initdb", "-D", str(root / "data"), *INITDB)
                except BaseException:
                    shutil.rmtree(root, ignore_errors=True)
                    raise
                if not _templates:
                    atexit.register(_remove_templates)
                _templates[self.bindir] = root / "data"
            return _templates[self.bindir]

    def _run(self, program: str, *args: str) -> None:
        command = [str(self.bindir / program), *args]
        if self._as_root:
            command = ["runuser", "-u", UNPRIVILEGED, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            log = self.root / "server.log"
            detail = log.read_text(errors="replace")[-2000:] if log.is_file() else ""
            raise BackendUnavailableError(
                f"PostgreSQL {program} failed ({done.returncode}): "
                f"{(done.stderr or done.stdout).strip()[-2000:]} {detail}".strip())

    def conninfo(self, database: str = "postgres") -> str:
        return f"host={self.socket_dir} user={SUPERUSER} dbname={database}"

    def close(self) -> None:
        if (self.data / "postmaster.pid").is_file():
            try:
                self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
            except BackendUnavailableError:
                pass
        shutil.rmtree(self.root, ignore_errors=True)
