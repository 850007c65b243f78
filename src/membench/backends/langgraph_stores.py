"""LangGraph's long-term memory stores, with their semantic index embedding through
membench's vectors (the `embed` function looks each text's vector up; no model runs):
InMemoryStore (nothing at rest), SqliteStore (a file in SQLite's default rollback-journal
mode, as LangGraph leaves it; its vectors in store_vectors) and PostgresStore (a real
server, pgvector HNSW).

One item per document: namespace ("membench", "memory"), key the exchange index, value
{"text": ...}, the text field indexed. LangGraph has no lexical search; its semantic
search is the native vector ranking. Remedies are the databases' own (LangGraph documents
none): SQLite's VACUUM with and without secure_delete, PostgreSQL's VACUUM FULL and WAL
switch; LangGraph's stores expose their connection for them.
"""

from __future__ import annotations

from pathlib import Path

from membench.backends.base import BACKENDS, NO_REMEDY, Embed, Located, StoreBackend
from membench.backends.postgres_server import PostgresServer
from membench.backends.postgres_store import EF_SEARCH, VACUUM_FULL, WAL, PostgresServerFiles
from membench.backends.sqlite_files import SqliteWal, connect, copy_database, locate_sqlite
from membench.backends.sqlite_fts import SECURE_DELETE, VACUUM
from membench.retrieval.retrievers import Document

NAMESPACE = ("membench", "memory")
FIELD = "text"
SQLITE_FILE = "langgraph.db"
SECURE_VACUUM = "secure_delete+vacuum"


class LangGraphBackend(StoreBackend):
    semantic = "LangGraph store search(query=...)"

    def _index(self) -> dict:
        dims = self.embed.dims
        return {"dims": dims, "fields": [FIELD],
                "embed": lambda texts: [self.embed(t).tolist() for t in texts]}

    def upsert(self, key, text):
        self.store.put(NAMESPACE, str(key), {FIELD: text}, index=[FIELD])

    def delete(self, key):
        self.store.delete(NAMESPACE, str(key))

    def _items(self, **query):
        return self.store.search(NAMESPACE, limit=1_000_000, **query)

    def documents(self):
        return sorted((Document(int(item.key), item.value[FIELD]) for item in self._items()),
                      key=lambda d: d.source)

    def vector_search(self, question, k):
        found = self.store.search(NAMESPACE, query=question, limit=k)
        return [int(item.key) for item in found]


class LangGraphMemory(LangGraphBackend):
    """InMemoryStore: a dict in the process; it writes no file, so nothing is at rest."""

    relative_cost = 1.0
    # its search turns every stored vector into a numpy array again (0.9 s of 1.3 in
    # docs/backends.md's table): 11 minutes at a thousand sessions
    scanning_search_share = 0.7

    def __init__(self, directory: Path, embed: Embed, remedy: str = NO_REMEDY) -> None:
        super().__init__(directory, embed, remedy)
        from langgraph.store.memory import InMemoryStore  # the `stores` extra

        self.store = InMemoryStore(index=self._index())

    def files_root(self):
        return None

    def locate(self, relative, blob, offset, live):
        raise AssertionError("InMemoryStore writes no file")


class LangGraphSqlite(SqliteWal, LangGraphBackend):
    remedies = (VACUUM, SECURE_DELETE, SECURE_VACUUM)
    forks = True
    relative_cost = 22.0
    database = SQLITE_FILE

    def __init__(self, directory: Path, embed: Embed, remedy: str = NO_REMEDY) -> None:
        super().__init__(directory, embed, remedy)
        from langgraph.store.sqlite import SqliteStore  # the `stores` extra

        directory.mkdir(parents=True, exist_ok=True)
        self.connection = connect(directory / SQLITE_FILE, extensions=True)
        secure = self.opening(remedy)  # explicit: builds differ
        self.connection.execute(f"PRAGMA secure_delete={'ON' if secure else 'OFF'}")
        self.store = SqliteStore(self.connection, index=self._index())
        self.store.setup()  # on an existing store, reads its migrations: writes nothing

    @classmethod
    def opening(cls, remedy):
        return remedy in (SECURE_DELETE, SECURE_VACUUM)

    def fork(self, directory, remedy):
        return type(self)(copy_database(self.directory, directory, self.database),
                          self.embed, remedy)

    def apply_remedy(self):
        if self.remedy in (VACUUM, SECURE_VACUUM):
            self.connection.execute("VACUUM")
            self.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def locate(self, relative, blob, offset, live) -> Located:
        return locate_sqlite(relative, blob, offset,
                             self._owners,
                             frozenset({"store", "store_vectors"}))

    def close(self):
        self.connection.close()


class LangGraphPostgres(PostgresServerFiles, LangGraphBackend):
    remedies = (VACUUM, VACUUM_FULL, WAL)
    relative_cost = 35.0

    def __init__(self, directory: Path, embed: Embed, remedy: str = NO_REMEDY) -> None:
        super().__init__(directory, embed, remedy)
        import psycopg  # the `stores` extra
        from langgraph.store.postgres import PostgresStore
        from psycopg.rows import dict_row

        self.server = PostgresServer()
        try:
            self.connection = psycopg.connect(self.server.conninfo(),
                                              autocommit=True, prepare_threshold=0,
                                              row_factory=dict_row)
            self.store = PostgresStore(self.connection, index=self._index())
            self.store.setup()
            self.connection.execute(EF_SEARCH)
        except BaseException:
            self.close()
            raise

    def relation_kinds(self):
        rows = self.connection.execute(
            "SELECT pg_relation_filepath(c.oid) AS path, c.relname, c.relkind FROM pg_class c "
            "WHERE pg_relation_filepath(c.oid) IS NOT NULL").fetchall()
        return {row["path"]: (row["relname"], row["relkind"]) for row in rows}

    def files_root(self):
        return self.server.data

    def apply_remedy(self):
        tables = ("store", "store_vectors")
        for table in tables:
            if self.remedy == VACUUM:
                self.connection.execute(f"VACUUM {table}")
            if self.remedy in (VACUUM_FULL, WAL):
                self.connection.execute(f"VACUUM FULL {table}")
        if self.remedy == WAL:
            self.connection.execute("CHECKPOINT")
            self.connection.execute("SELECT pg_switch_wal()")
            self.connection.execute("CHECKPOINT")

    def close(self):
        if getattr(self, "connection", None) is not None:
            self.connection.close()
        if hasattr(self, "server"):
            self.server.close()


BACKENDS.add("langgraph_memory", LangGraphMemory, order=30)
BACKENDS.add("langgraph_sqlite", LangGraphSqlite, order=31)
BACKENDS.add("langgraph_postgres", LangGraphPostgres, order=32)
