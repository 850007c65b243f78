"""SQLite with the sqlite-vec extension: vectors in a vec0 virtual table, ranked by its
KNN query (float32 cosine distance), text and FTS5 as in the stdlib backend.

vec0 keeps vectors in fixed-size chunk BLOBs (its shadow tables, reported here as the
index); a DELETE is reported to clear only the row's validity bit in the chunk.
"""

from __future__ import annotations

import numpy as np

from membench.backends.base import BACKENDS
from membench.backends.sqlite_fts import SqliteBackend


class SqliteVecBackend(SqliteBackend):
    semantic = "vec0 KNN (float32 cosine distance)"
    extensions = True
    relative_cost = 6.0

    def _load(self) -> None:
        import sqlite_vec  # the `stores` extra

        self.connection.enable_load_extension(True)
        sqlite_vec.load(self.connection)
        self.connection.enable_load_extension(False)

    def _create(self) -> None:
        dims = self.embed.dims
        self.connection.executescript(
            "CREATE TABLE docs(key INTEGER PRIMARY KEY, text TEXT NOT NULL, vector BLOB);"
            "CREATE VIRTUAL TABLE docs_fts USING fts5(text);"
            f"CREATE VIRTUAL TABLE vec USING vec0(embedding float[{dims}] "
            "distance_metric=cosine);")

    def upsert(self, key, text):
        vector = np.asarray(self.embed(text), dtype="<f4").tobytes()
        with self.connection:
            self.connection.execute("BEGIN")
            self.connection.execute("DELETE FROM docs_fts WHERE rowid = ?", (key,))
            self.connection.execute("DELETE FROM vec WHERE rowid = ?", (key,))
            self.connection.execute("INSERT OR REPLACE INTO docs VALUES (?, ?, NULL)",
                                    (key, text))
            self.connection.execute("INSERT INTO docs_fts(rowid, text) VALUES (?, ?)",
                                    (key, text))
            self.connection.execute("INSERT INTO vec(rowid, embedding) VALUES (?, ?)",
                                    (key, vector))

    def delete(self, key):
        with self.connection:
            self.connection.execute("BEGIN")
            self.connection.execute("DELETE FROM docs WHERE key = ?", (key,))
            self.connection.execute("DELETE FROM docs_fts WHERE rowid = ?", (key,))
            self.connection.execute("DELETE FROM vec WHERE rowid = ?", (key,))

    def stored_vectors(self):
        return self._keyed_vectors("SELECT rowid, embedding FROM vec ORDER BY rowid")

    def vector_search(self, question, k):
        query = np.asarray(self.embed(question), dtype="<f4").tobytes()
        found = self.connection.execute(
            "SELECT rowid, distance FROM vec WHERE embedding MATCH ? AND k = ? "
            "ORDER BY distance", (query, k)).fetchall()
        return [key for key, _ in sorted(found, key=lambda row: (row[1], row[0]))]


BACKENDS.add("sqlite_vec", SqliteVecBackend, order=20)
