"""Where a hit in an SQLite database's files is held: the WAL or journal is the log, a
page on the freelist is free space, a page of an index or of a virtual table's index
shadow tables is the index, and a data table's page holds live rows (or, once the value
is gone from the store, free space inside a live page: read from the page's header)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from membench.backends.base import FREE, INDEX, LIVE, LOG, Located
from membench.backends.pages import (
    UNALLOCATED, sqlite_free_pages, sqlite_page, sqlite_region)

LOG_SUFFIXES = ("-wal", "-journal", "-shm")


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


def connect(path: Path, *, extensions: bool = False):
    """An SQLite connection; with extensions, one that can load them (the standard
    library's when Python was built with loadable extensions, else pysqlite3-binary's,
    from the `stores` extra)."""
    if extensions and not hasattr(sqlite3.Connection, "enable_load_extension"):
        from pysqlite3 import dbapi2  # the `stores` extra

        return dbapi2.connect(path, isolation_level=None, check_same_thread=False)
    return sqlite3.connect(path, isolation_level=None, check_same_thread=False)


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
