"""Only the account running membench gets into the servers it starts: the PostgreSQL
socket in a 0700 directory, the socket itself 0700, and scram-sha-256 with a password made
for the run that no file or log holds. A real server, real accounts (as root: `daemon`,
and `nobody`, the server's own), real clients; never mocks."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest
from interrupt_helpers import private_tmp

from membench.backends.postgres_server import SUPERUSER, PostgresServer

psycopg = pytest.importorskip("psycopg")
AS_ROOT = os.geteuid() == 0
PSQL = shutil.which("psql")


@pytest.fixture(scope="module")
def server():
    """In a temp directory of its own, so that only this server's directories count."""
    tmp = private_tmp()
    before, tempfile.tempdir = tempfile.tempdir, str(tmp)
    try:
        started = PostgresServer()
        yield started
        started.close()
    finally:
        tempfile.tempdir = before
        shutil.rmtree(tmp, ignore_errors=True)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_the_socket_directory_and_the_socket_are_the_account_s_only(server):
    assert _mode(server.socket_dir) == 0o700
    assert _mode(server.socket_dir / ".s.PGSQL.5432") == 0o700
    made = [*server.socket_dir.parent.glob("membench-*"),
            *[p for p in server.bindir.parents if p.name.startswith("membench-pg-install-")]]
    for directory in made:
        assert _mode(directory) == 0o700, directory  # the template and install copy too


def test_the_run_s_password_gets_in_and_nothing_else_does(server):
    with psycopg.connect(server.conninfo()) as connection:
        assert connection.execute("SELECT current_user").fetchone() == (SUPERUSER,)
        methods = connection.execute(
            "SELECT DISTINCT auth_method FROM pg_hba_file_rules").fetchall()
    assert methods == [("scram-sha-256",)]
    password = server.conninfo().rsplit("password=", 1)[1]
    for conninfo in (f"host={server.socket_dir} user={SUPERUSER} dbname=postgres",
                     f"host={server.socket_dir} user={SUPERUSER} dbname=postgres "
                     f"password={password[::-1]}"):
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(conninfo)


def test_the_password_is_in_no_file_or_log(server):
    """Not in the server's directory (its log, the data directory: pg_authid holds a salted
    verifier), nor anywhere in the temp directory membench wrote."""
    with psycopg.connect(server.conninfo()) as connection:
        connection.execute("CHECKPOINT")
    password = server.conninfo().rsplit("password=", 1)[1].encode()
    for directory in server.socket_dir.parent.glob("membench-*"):
        for path in directory.rglob("*"):
            if path.is_file() and not path.is_symlink() and not path.is_socket():
                assert password not in path.read_bytes(), path


def _psql_as(account: str, server: PostgresServer, password: str | None):
    env = {"PATH": os.environ.get("PATH", ""), "PGCONNECT_TIMEOUT": "5"}
    if password is not None:
        env["PGPASSWORD"] = password
    return subprocess.run(
        ["runuser", "-u", account, "--", PSQL, "-w", "-h", str(server.socket_dir), "-U",
         SUPERUSER, "-d", "postgres", "-c", "SELECT 1"],
        capture_output=True, text=True, env=env, timeout=60, cwd="/")


@pytest.mark.skipif(not AS_ROOT or PSQL is None,
                    reason="needs root (to act as other accounts) and psql")
def test_another_account_cannot_connect_even_with_the_password(server):
    """`daemon` cannot reach the socket; `nobody`, the account the server runs as, reaches
    it but needs the password, which only the membench process holds."""
    password = server.conninfo().rsplit("password=", 1)[1]
    for secret in (None, password):
        denied = _psql_as("daemon", server, secret)
        assert denied.returncode != 0
        assert "Permission denied" in denied.stderr, denied.stderr
    denied = _psql_as("nobody", server, None)
    assert denied.returncode != 0 and "password" in denied.stderr, denied.stderr
    allowed = _psql_as("nobody", server, password)  # the check above can fail: it connects
    assert allowed.returncode == 0, allowed.stderr


def test_the_server_leads_its_own_session_and_is_recorded(server):
    """A signal to the stage's process group does not reach it (the stage stops it), and
    its pid is recorded beside it for the reaper and a later run's sweep."""
    pid = server._process.pid
    assert os.getsid(pid) == pid
    records = list(server.root.glob(".membench-server-*"))
    assert [r.read_text().split()[0] for r in records] == [str(pid)]
