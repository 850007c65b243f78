"""SQLite from the standard library: rows in a table, FTS5 for lexical search, vectors as
BLOBs ranked exactly in membench (SQLite has no vector search of its own).

WAL journal mode, as most applications run SQLite. secure_delete is always set
explicitly: SQLite's documented default is OFF, but some builds (Debian's libsqlite3,
which Python may link) turn it ON at compile time, and the results must not depend on it. Remedies, from SQLite's documentation:
PRAGMA secure_delete (deleted content is overwritten with zeros; set before deleting),
VACUUM (rebuilds the file), FTS5's 'optimize' (merges the index segments that still list
deleted rows), and a WAL checkpoint in TRUNCATE mode (empties the log).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from membench.backends.base import BACKENDS, NO_REMEDY, Embed, Located, StoreBackend
from membench.backends.sqlite_files import SqliteWal, connect, copy_database, locate_sqlite
from membench.retrieval.dense import DenseIndex
from membench.retrieval.retrievers import Document
from membench.scenario.text import tokens

SECURE_DELETE, VACUUM, ALL = "secure_delete", "vacuum", "secure_delete+optimize+vacuum"
DATABASE = "store.db"


def fts_query(question: str) -> str | None:
    """Any of the question's tokens, each quoted (FTS5 syntax); None when it has none."""
    words = list(dict.fromkeys(tokens(question)))
    return " OR ".join(f'"{w}"' for w in words) if words else None


class SqliteBackend(SqliteWal, StoreBackend):
    lexical = "FTS5 bm25()"
    semantic = "exact cosine over the BLOBs, in membench"
    remedies = (SECURE_DELETE, VACUUM, ALL)
    forks = True
    relative_cost = 7.0
    data_tables = frozenset({"docs", "docs_fts_content"})
    extensions = False
    database = DATABASE

    def __init__(self, directory: Path, embed: Embed, remedy: str = NO_REMEDY, *,
                 existing: bool = False) -> None:
        super().__init__(directory, embed, remedy)
        directory.mkdir(parents=True, exist_ok=True)
        self.connection = connect(directory / DATABASE, extensions=self.extensions)
        self.connection.execute("PRAGMA journal_mode=WAL")
        secure = self.opening(remedy)
        self.connection.execute(f"PRAGMA secure_delete={'ON' if secure else 'OFF'}")
        self._load()
        if not existing:
            self._create()
        self._exact: tuple[list[int], DenseIndex] | None = None  # until the next write

    @classmethod
    def opening(cls, remedy):
        """secure_delete: set at open, it only affects later deletes."""
        return remedy in (SECURE_DELETE, ALL)

    def fork(self, directory, remedy):
        copy_database(self.directory, directory, self.database)
        return type(self)(directory, self.embed, remedy, existing=True)

    def _load(self) -> None:
        """Loads the extensions the tables need (none here)."""

    def _create(self) -> None:
        self.connection.executescript(
            "CREATE TABLE docs(key INTEGER PRIMARY KEY, text TEXT NOT NULL, vector BLOB);"
            "CREATE VIRTUAL TABLE docs_fts USING fts5(text);")

    def upsert(self, key, text):
        vector = np.asarray(self.embed(text), dtype="<f4").tobytes()
        self._exact = None
        with self.connection:
            self.connection.execute("BEGIN")
            self.connection.execute("DELETE FROM docs_fts WHERE rowid = ?", (key,))
            self.connection.execute("INSERT OR REPLACE INTO docs VALUES (?, ?, ?)",
                                    (key, text, vector))
            self.connection.execute("INSERT INTO docs_fts(rowid, text) VALUES (?, ?)",
                                    (key, text))

    def delete(self, key):
        self._exact = None
        with self.connection:
            self.connection.execute("BEGIN")
            self.connection.execute("DELETE FROM docs WHERE key = ?", (key,))
            self.connection.execute("DELETE FROM docs_fts WHERE rowid = ?", (key,))

    def documents(self):
        return [Document(key, text) for key, text in
                self.connection.execute("SELECT key, text FROM docs ORDER BY key")]

    def lexical_search(self, question, k):
        query = fts_query(question)
        if query is None:
            return []
        return [key for (key,) in self.connection.execute(
            "SELECT rowid FROM docs_fts WHERE docs_fts MATCH ? "
            "ORDER BY bm25(docs_fts), rowid LIMIT ?", (query, k))]

    def stored_vectors(self) -> tuple[list[int], np.ndarray]:
        return self._keyed_vectors("SELECT key, vector FROM docs ORDER BY key")

    def _keyed_vectors(self, query: str) -> tuple[list[int], np.ndarray]:
        """(keys, vectors) of (key, float32 BLOB) rows; none in an empty store."""
        rows = self.connection.execute(query).fetchall()
        vectors = [np.frombuffer(blob, dtype="<f4") for _, blob in rows]
        return ([key for key, _ in rows],
                np.stack(vectors) if vectors else np.zeros((0, self.embed.dims), "<f4"))

    def vector_search(self, question, k):
        """Exact: the BLOBs read back and ranked by membench's integer cosine; read once
        between writes (a probe day asks hundreds of questions of one store's rows)."""
        if self._exact is None:
            keys, vectors = self.stored_vectors()
            self._exact = keys, DenseIndex(vectors) if keys else None
        keys, index = self._exact
        if not keys:
            return []
        return [keys[i] for i in index.top_k(self.embed(question), k)]

    def apply_remedy(self):
        self._exact = None
        if self.remedy == ALL:
            self.connection.execute("INSERT INTO docs_fts(docs_fts) VALUES ('optimize')")
        if self.remedy in (VACUUM, ALL):
            self.connection.execute("VACUUM")
            self.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def locate(self, relative, blob, offset, live) -> Located:
        return locate_sqlite(relative, blob, offset,
                             self._owners, self.data_tables)

    def close(self):
        self.connection.close()


BACKENDS.add("sqlite", SqliteBackend, order=10)
