"""Where a hit in an SQLite database's files is held: the WAL or journal is the log, a
page on the freelist is free space, a page of an index or of a virtual table's index
shadow tables is the index, and a data table's page holds live rows (or, once the value
is gone from the store, free space inside a live page: read from the page's header)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from membench.backends.base import FREE, INDEX, LIVE, LOG, Located
from membench.backends.pages import UNALLOCATED, sqlite_free_pages, sqlite_page, sqlite_region

LOG_SUFFIXES = ("-wal", "-journal", "-shm")
SYNCHRONOUS = "OFF"


def page_owners(database: Path) -> dict[int, str]:
    """Page number -> the table or index it belongs to, from SQLite's dbstat table over
    the database file as it is on disk (immutable: no lock taken, the WAL is not read or
    checkpointed, so looking does not change what is scanned)."""
    connection = sqlite3.connect(f"file:{database}?mode=ro&immutable=1", uri=True)
    try:
        return {page: name for name, page in
                connection.execute("SELECT name, pageno FROM dbstat")}
    finally:
        connection.close()


class SqliteWal:
    """For a backend with an SQLite `connection` in WAL mode on `directory / database`."""

    def settle(self):
        """A passive checkpoint copies the WAL's pages into the database file, as SQLite
        itself does every 1000 pages: the file then holds every committed page, and the
        WAL's frames are the log's copies (the WAL is reused, not truncated)."""
        self.connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
        self._owners = page_owners(self.directory / self.database)  # once per scan


def copy_database(source: Path, target: Path, database: str) -> Path:
    """A byte copy of an open database's file, WAL and its index (-shm), taken between
    transactions: a connection to the copy continues from the very same state."""
    target.mkdir(parents=True, exist_ok=True)
    for suffix in ("", *LOG_SUFFIXES):
        if (source / f"{database}{suffix}").is_file():
            shutil.copyfile(source / f"{database}{suffix}", target / f"{database}{suffix}")
    return target


def connect(path: Path, *, extensions: bool = False):
    """An SQLite connection; with extensions, one that can load them (the standard
    library's when Python was built with loadable extensions, else pysqlite3-binary's,
    from the `stores` extra).

    synchronous=OFF: SQLite does not wait for fsync() after each commit. It writes the
    same bytes to the same files either way (the database pages, the WAL frames, the
    rollback journal deleted at commit); only their durability against a power cut
    changes, which a throwaway replay does not need (tests/test_backends_fast.py
    compares the files). The waits were most of the SQLite backends' time."""
    if extensions and not hasattr(sqlite3.Connection, "enable_load_extension"):
        from pysqlite3 import dbapi2  # the `stores` extra

        connection = dbapi2.connect(path, isolation_level=None, check_same_thread=False)
    else:
        connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    connection.execute(f"PRAGMA synchronous={SYNCHRONOUS}")
    return connection


def locate_sqlite(relative: str, blob: bytes, offset: int,
                  owners: dict[int, str], data_tables: frozenset[str]) -> Located:
    if relative.endswith(LOG_SUFFIXES):
        return Located(LOG, relative)
    page = sqlite_page(blob, offset)
    if page in sqlite_free_pages(blob):
        return Located(FREE, relative)
    owner = owners.get(page)
    if owner is None:  # past the last page dbstat knows: not part of the b-tree
        return Located(FREE, relative)
    if owner not in data_tables:
        return Located(INDEX, relative)
    return Located(FREE if sqlite_region(blob, offset) == UNALLOCATED else LIVE, relative)
