"""A stopped PostgreSQL server's directory made a fresh cluster again in place
(membench.backends.fresh_copy), and the next server of the process started in it: no
byte of the first's data left, its files' inodes reused. Real files, a real server."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from interrupt_helpers import private_tmp

from membench.backends.fresh_copy import refresh


def _tree(root: Path) -> dict[str, tuple[str, int, bytes]]:
    found = {}
    for path in sorted(root.rglob("*")):
        mode = stat.S_IMODE(path.lstat().st_mode)
        found[str(path.relative_to(root))] = (
            ("dir", mode, b"") if path.is_dir() else ("file", mode, path.read_bytes()))
    return found


def _template(root: Path) -> Path:
    (root / "base" / "1").mkdir(parents=True)
    (root / "pg_wal").mkdir()
    (root / "base" / "1" / "1259").write_bytes(b"catalog" * 100)
    (root / "pg_wal" / "000000010000000000000001").write_bytes(b"\0" * 4096)
    (root / "PG_VERSION").write_bytes(b"16\n")
    os.chmod(root / "PG_VERSION", 0o600)
    os.chmod(root / "base", 0o700)
    return root


EDITS = st.lists(st.sampled_from(
    ["grow", "shrink", "rewrite", "add_file", "add_dir", "remove_file", "remove_dir",
     "chmod", "file_for_dir"]), max_size=8)


@settings(max_examples=40, deadline=None)
@given(edits=EDITS)
def test_refresh_gives_back_the_template_whatever_the_server_did(edits):
    tmp = Path(tempfile.mkdtemp())
    try:
        template = _template(tmp / "template")
        copy = tmp / "copy"
        shutil.copytree(template, copy)
        kept = copy / "base" / "1" / "1259"
        inode = kept.stat().st_ino
        for edit in edits:
            if edit == "grow":
                with open(kept, "ab") as file:
                    file.write(b"secret value" * 50)
            elif edit == "shrink":
                os.truncate(kept, 3)
            elif edit == "rewrite":
                kept.write_bytes(b"secret value")
            elif edit == "add_file":
                (copy / "base" / "1" / "16384").write_bytes(b"secret value")
            elif edit == "add_dir":
                (copy / "base" / "16385" / "deep").mkdir(parents=True, exist_ok=True)
                (copy / "base" / "16385" / "deep" / "x").write_bytes(b"secret value")
            elif edit == "remove_file" and (copy / "PG_VERSION").exists():
                (copy / "PG_VERSION").unlink()
            elif edit == "remove_dir" and (copy / "pg_wal").is_dir():
                shutil.rmtree(copy / "pg_wal")
            elif edit == "chmod":
                os.chmod(copy / "base", 0o755)
            elif edit == "file_for_dir" and (copy / "pg_wal").is_dir():
                shutil.rmtree(copy / "pg_wal")
                (copy / "pg_wal").write_bytes(b"secret value")
        refresh(copy, template)
        assert _tree(copy) == _tree(template)
        assert kept.stat().st_ino == inode  # written in place, not a new file
    finally:
        shutil.rmtree(tmp)


def test_a_symlink_in_the_template_is_refused(tmp_path):
    template = _template(tmp_path / "template")
    (template / "link").symlink_to(template / "PG_VERSION")
    with pytest.raises(ValueError, match="symlink"):
        refresh(tmp_path, template)


psycopg = pytest.importorskip("psycopg")


def test_the_next_server_starts_in_the_last_one_s_directory_with_none_of_its_data():
    from membench.backends.postgres_server import PostgresServer

    tmp = private_tmp()
    before, tempfile.tempdir = tempfile.tempdir, str(tmp)
    marker = "value-the-user-asked-to-forget-7f3a"
    try:
        first = PostgresServer()
        root, data = first.root, first.data
        with psycopg.connect(first.conninfo(), autocommit=True) as connection:
            connection.execute("CREATE TABLE facts (value text)")
            connection.execute("INSERT INTO facts VALUES (%s)", (marker,))
            connection.execute("CHECKPOINT")
        catalog_inode = (data / "global" / "pg_control").stat().st_ino
        assert any(marker.encode() in path.read_bytes()
                   for path in data.rglob("*") if path.is_file())
        first.close()
        assert not any(marker.encode() in path.read_bytes()
                       for path in root.rglob("*") if path.is_file())
        second = PostgresServer()
        try:
            assert second.root == root
            assert (data / "global" / "pg_control").stat().st_ino == catalog_inode
            with psycopg.connect(second.conninfo()) as connection:
                assert connection.execute(
                    "SELECT to_regclass('facts')").fetchone() == (None,)
        finally:
            second.close()
    finally:
        tempfile.tempdir = before
        shutil.rmtree(tmp, ignore_errors=True)


def test_a_template_made_again_is_not_given_the_last_template_s_directories():
    """A new template has a new password: a directory refreshed from the old one would
    start a server the run's password cannot enter."""
    from membench.backends.postgres_server import PostgresServer

    tmp = private_tmp()
    before, tempfile.tempdir = tempfile.tempdir, str(tmp)
    try:
        first = PostgresServer()
        old_template, old_root = first._template_dir, first.root
        first.close()
        shutil.rmtree(old_template.parent)  # as a test's temp directory going away would
        second = PostgresServer()
        try:
            assert second._template_dir != old_template and second.root != old_root
            with psycopg.connect(second.conninfo()) as connection:
                assert connection.execute("SELECT 1").fetchone() == (1,)
        finally:
            second.close()
    finally:
        tempfile.tempdir = before
        shutil.rmtree(tmp, ignore_errors=True)
