"""Each real store on a few rows: a deleted secret is retained somewhere on disk, and the
backend's documented remedy clears it (or, where it does not, the test says what stays).
Real databases and a real PostgreSQL server, never mocks."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from backend_helpers import EMBED, SECRET, remember_and_forget, where

from membench.backends.base import (
    BACKENDS,
    FREE,
    LIVE,
    LOG,
    NO_REMEDY,
    OLD,
    BackendUnavailableError,
)
from membench.backends.scanner import TOKENS, VALUE, VECTOR
from membench.plugins import load_plugins

load_plugins("backends")

NOWHERE: set = set()


def _after(name: str, tmp_path, remedy: str = NO_REMEDY) -> set[tuple[str, str]]:
    try:
        backend = BACKENDS[name](tmp_path / remedy, EMBED, remedy)
    except BackendUnavailableError as error:  # the `stores` extra ships every server
        pytest.fail(f"{name} cannot run here: {error}")
    try:
        remember_and_forget(backend)
        backend.apply_remedy()
        return where(backend)
    finally:
        backend.close()


def test_sqlite_keeps_a_deleted_text_in_free_space_and_vacuum_clears_it(tmp_path):
    kept = _after("sqlite", tmp_path)
    assert {(VALUE, FREE), (VECTOR, FREE)} <= kept
    assert (VALUE, LOG) in kept  # the WAL still holds the page images
    assert _after("sqlite", tmp_path, "secure_delete") == {
        (VALUE, LOG), (TOKENS, LOG), (VECTOR, LOG)}  # zeroed in the file, not in the WAL
    assert _after("sqlite", tmp_path, "vacuum") == NOWHERE


def test_sqlite_vec_keeps_the_vector_and_vacuum_clears_it(tmp_path):
    kept = _after("sqlite_vec", tmp_path)
    assert any(form == VECTOR for form, _ in kept)
    assert _after("sqlite_vec", tmp_path, "secure_delete+optimize+vacuum") == NOWHERE


def test_langgraph_sqlite_keeps_a_deleted_item_s_embedding_as_a_live_row(tmp_path):
    """Its store_vectors rows reference store with ON DELETE CASCADE, but SQLite does not
    enforce foreign keys unless asked: the embedding outlives the item, and no remedy
    that rewrites pages removes a live row. VACUUM clears the text."""
    assert (VECTOR, LIVE) in _after("langgraph_sqlite", tmp_path)
    assert _after("langgraph_sqlite", tmp_path, "secure_delete+vacuum") == {(VECTOR, LIVE)}


def test_langgraph_memory_writes_nothing_at_rest(tmp_path):
    backend = BACKENDS["langgraph_memory"](tmp_path, EMBED)
    remember_and_forget(backend)
    assert backend.files_root() is None and where(backend) == NOWHERE
    assert 100 not in backend.vector_search(SECRET, 5)


def test_lancedb_keeps_old_versions_until_cleanup(tmp_path):
    assert {(VALUE, OLD), (VECTOR, OLD)} <= _after("lancedb", tmp_path)
    assert (VALUE, OLD) in _after("lancedb", tmp_path, "optimize")  # 7-day retention
    assert _after("lancedb", tmp_path, "optimize+cleanup_old_versions") == NOWHERE


@pytest.mark.parametrize("name", ["postgres", "langgraph_postgres"])
def test_postgres_keeps_a_deleted_row_until_vacuum_full_and_the_wal_after(name, tmp_path):
    """In the table as a dead tuple, or as free space once a read pruned the page."""
    kept = _after(name, tmp_path)
    assert (VALUE, LOG) in kept
    assert {(VALUE, OLD), (VALUE, FREE)} & kept
    cured = _after(name, tmp_path, "vacuum_full")
    assert {place for _, place in cured} == {LOG}  # tables rewritten; the WAL remains


def test_a_server_that_cannot_start_is_a_clear_error_and_leaves_nothing(tmp_path, monkeypatch):
    from membench.backends import postgres_server

    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "initdb").write_text("#!/bin/sh\necho 'initdb: no space left' >&2\nexit 1\n")
    (bindir / "initdb").chmod(0o755)
    monkeypatch.setattr(postgres_server, "find_bindir", lambda: bindir)
    temp = Path(tempfile.gettempdir())
    before = _server_directories(temp)
    with pytest.raises(BackendUnavailableError, match="PostgreSQL initdb failed"):
        postgres_server.PostgresServer()
    assert _server_directories(temp) <= before  # its temporary directory is gone


def _server_directories(temp: Path) -> set[Path]:
    """A server's own directories; not the per-process copy of an unreachable install."""
    return set(temp.glob("membench-pg-*")) - set(temp.glob("membench-pg-install-*"))


@pytest.mark.skipif(os.geteuid() != 0, reason="only root drops to `nobody` to run the server")
def test_as_root_a_server_installed_where_nobody_cannot_reach_still_starts(tmp_path, monkeypatch):
    """CI's Python lives in /root (mode 700): `nobody` cannot run pgserver's binaries there."""
    from membench.backends import postgres_server

    psycopg = pytest.importorskip("psycopg")
    installed = postgres_server.find_bindir()
    site = installed.parent.parent.parent  # pgserver's site-packages: bin/pginstall/pgserver
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / "site").symlink_to(site, target_is_directory=True)
    bindir = private / "site" / installed.relative_to(site)
    monkeypatch.setattr(postgres_server, "find_bindir", lambda: bindir)
    unreachable = subprocess.run(["runuser", "-u", "nobody", "--", "test", "-x",
                                  str(bindir / "initdb")], check=False)
    assert unreachable.returncode != 0
    server = postgres_server.PostgresServer()
    try:
        assert not server.bindir.is_relative_to(private)
        with psycopg.connect(server.conninfo()) as connection:
            assert connection.execute("SELECT 1 + 1").fetchone() == (2,)
    finally:
        server.close()


def test_no_server_binaries_is_a_clear_error(monkeypatch):
    from membench.backends import postgres_server

    monkeypatch.setattr(postgres_server, "_bundled_bindir", lambda: None)
    monkeypatch.setattr(postgres_server, "_system_bindir", lambda: None)
    with pytest.raises(BackendUnavailableError, match="no PostgreSQL server binaries"):
        postgres_server.find_bindir()
