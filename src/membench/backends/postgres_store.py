"""PostgreSQL, a real server (membench.backends.postgres_server): a table with a
generated tsvector under a GIN index for lexical search (ts_rank), a pgvector column under
an HNSW index for vector search (approximate: the index, not the table, is searched).

Remedies, from PostgreSQL's documentation: VACUUM (dead tuples' space made reusable),
VACUUM FULL (the table and its indexes rewritten into new files), and VACUUM FULL then a
WAL switch and CHECKPOINT (old WAL segments recycled: renamed for reuse, not zeroed).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from membench.backends.base import (
    BACKENDS,
    FREE,
    INDEX,
    LIVE,
    LOG,
    NO_REMEDY,
    OLD,
    Embed,
    Located,
    StoreBackend,
)
from membench.backends.pages import DEAD_TUPLE, LIVE_CELL, postgres_region
from membench.backends.postgres_server import PostgresServer
from membench.retrieval.retrievers import Document
from membench.scenario.text import tokens

# HNSW's candidate list as long as pgvector allows: its graph is built with random levels,
# so a short list could rank differently from run to run; this long, the search visits
# every document of a store this size and the ranking repeats.
EF_SEARCH = "SET hnsw.ef_search = 1000"
VACUUM, VACUUM_FULL, WAL = "vacuum", "vacuum_full", "vacuum_full+checkpoint+wal_switch"


def pg_vector(vector: np.ndarray) -> str:
    """pgvector's text form; float32 values print exactly (repr round-trips)."""
    values = np.asarray(vector, dtype=np.float32).astype(np.float64).tolist()
    return "[" + ",".join(map(repr, values)) + "]"


def tsquery(question: str) -> str | None:
    words = list(dict.fromkeys(tokens(question)))
    return " | ".join(words) if words else None


class PostgresServerFiles:
    """Places in a PostgreSQL data directory: pg_wal is the log; a relation's file is
    looked up by its filenode: an index's file is the index; in a table's (or its TOAST
    table's) page, the line pointers and tuple headers say whether the bytes are a live
    row, a dead tuple (an old row version MVCC keeps until VACUUM) or free space."""

    server: PostgresServer
    connection: object
    failing_packages = ("psycopg",)  # the server killed or gone: a lost connection

    def settle(self) -> None:
        self.connection.execute("CHECKPOINT")
        self._relations = self.relation_kinds()  # one catalog read per scan, not per hit

    def relation_kinds(self) -> dict[str, tuple[str, str]]:
        rows = self.connection.execute(
            "SELECT pg_relation_filepath(c.oid), c.relname, c.relkind FROM pg_class c "
            "WHERE pg_relation_filepath(c.oid) IS NOT NULL").fetchall()
        return {path: (name, kind) for path, name, kind in rows}

    def locate(self, relative, blob, offset, live) -> Located:
        if relative.startswith("pg_wal/"):
            return Located(LOG, "pg_wal")
        base = relative.split(".")[0].removesuffix("_fsm").removesuffix("_vm")
        name, kind = self._relations.get(base, (relative, "?"))
        if name.startswith("pg_toast_"):
            name = "TOAST"
        if kind == "i":
            return Located(INDEX, name)
        region = postgres_region(blob, offset)
        return Located({LIVE_CELL: LIVE, DEAD_TUPLE: OLD}.get(region, FREE), name)


class PostgresBackend(PostgresServerFiles, StoreBackend):
    lexical = "tsvector + ts_rank"
    semantic = "pgvector HNSW (approximate, cosine)"
    remedies = (VACUUM, VACUUM_FULL, WAL)
    relative_cost = 50.0

    def __init__(self, directory: Path, embed: Embed, remedy: str = NO_REMEDY) -> None:
        super().__init__(directory, embed, remedy)
        import psycopg  # the `stores` extra

        self.server = PostgresServer()
        try:
            self.connection = psycopg.connect(self.server.conninfo(),
                                              autocommit=True)
            dims = embed.dims
            self.connection.execute("CREATE EXTENSION vector")
            self.connection.execute(EF_SEARCH)
            self.connection.execute(
                "CREATE TABLE docs(key integer PRIMARY KEY, text text NOT NULL, "
                f"embedding vector({dims}) NOT NULL, words tsvector GENERATED ALWAYS AS "
                "(to_tsvector('simple', text)) STORED)")
            self.connection.execute("CREATE INDEX docs_words ON docs USING gin (words)")
            self.connection.execute(
                "CREATE INDEX docs_embedding ON docs USING hnsw (embedding vector_cosine_ops)")
        except BaseException:
            self.close()
            raise

    def files_root(self):
        return self.server.data

    def upsert(self, key, text):
        self.connection.execute(
            "INSERT INTO docs(key, text, embedding) VALUES (%s, %s, %s) ON CONFLICT (key) "
            "DO UPDATE SET text = excluded.text, embedding = excluded.embedding",
            (key, text, pg_vector(self.embed(text))))

    def delete(self, key):
        self.connection.execute("DELETE FROM docs WHERE key = %s", (key,))

    def documents(self):
        return [Document(key, text) for key, text in
                self.connection.execute("SELECT key, text FROM docs ORDER BY key")]

    def lexical_search(self, question, k):
        query = tsquery(question)
        if query is None:
            return []
        return [key for (key,) in self.connection.execute(
            "SELECT key FROM docs WHERE words @@ to_tsquery('simple', %s) "
            "ORDER BY ts_rank(words, to_tsquery('simple', %s)) DESC, key LIMIT %s",
            (query, query, k))]

    def vector_search(self, question, k):
        return [key for (key,) in self.connection.execute(
            "SELECT key FROM docs ORDER BY embedding <=> %s::vector LIMIT %s",
            (pg_vector(self.embed(question)), k))]

    def apply_remedy(self):
        if self.remedy == VACUUM:
            self.connection.execute("VACUUM docs")
        if self.remedy in (VACUUM_FULL, WAL):
            self.connection.execute("VACUUM FULL docs")
        if self.remedy == WAL:
            self.connection.execute("CHECKPOINT")
            self.connection.execute("SELECT pg_switch_wal()")
            self.connection.execute("CHECKPOINT")

    def close(self):
        connection = getattr(self, "connection", None)
        if connection is not None:
            connection.close()
        if hasattr(self, "server"):
            self.server.close()


BACKENDS.add("postgres", PostgresBackend, order=50)
