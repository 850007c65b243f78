"""A LangGraph store as an agent's long-term memory, written through its own API per turn:
`SqliteStore` in a file under the system's directory, one namespace per user
(("memories", user_id)), one item per turn, its text indexed for LangGraph's semantic
search with membench's vectors (no model). LangMem's memory manager, which writes the
same store through a model, is membench.systems.langmem_system.

`context` is `store.search(namespace, query=..., limit=k)`; `forget` deletes, with
`store.delete`, every item of the user that states one of the fact's values; the remedy is
SQLite's own VACUUM through the store's connection (LangGraph documents none).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from membench.backends.sqlite_files import connect
from membench.scenario.text import has
from membench.systems.base import (
    Forget,
    MemorySystem,
    SystemUnavailable,
    Turn,
    register_system,
)

INSTALL = "pip install -e '.[stores]'  (or scripts/install)"
DATABASE = "langgraph.db"
FIELD = "text"
LIST_LIMIT = 1_000_000
SCORE_DIGITS = 6  # as mem0's: ties then go by text, on any machine


@register_system(order=30)
class LangGraphSqliteMemory(MemorySystem):
    id, label = "langgraph_sqlite", "LangGraph SqliteStore as long-term memory"
    install = INSTALL
    remedies = ("vacuum",)
    DIMENSIONS = 384
    index_fields: tuple[str, ...] = (FIELD,)  # the value's paths LangGraph embeds

    required_modules: tuple[str, ...] = ("langgraph.store.sqlite", "sqlite_vec")

    @classmethod
    def check_installed(cls) -> None:
        for module in cls.required_modules:
            try:
                found = importlib.util.find_spec(module)
            except ModuleNotFoundError:
                found = None
            if found is None:
                raise SystemUnavailable(f"{module} is not installed: {cls.install}")

    def __init__(self, directory: Path, embed) -> None:
        super().__init__(directory, embed)
        from langgraph.store.sqlite import SqliteStore

        self.connection = connect(directory / DATABASE, extensions=True)
        self.store = SqliteStore(self.connection, index={
            # SqliteStore reads "text_fields" (its docstring says "fields", which it ignores
            # and then embeds the whole JSON value); both given, so either reading holds.
            "dims": self.DIMENSIONS, "fields": list(self.index_fields),
            "text_fields": list(self.index_fields),
            "embed": lambda texts: [row.tolist() for row in embed(list(texts))]})
        self.store.setup()

    @staticmethod
    def _namespace(user_id: str) -> tuple[str, str]:
        return ("memories", user_id)

    def observe(self, turn: Turn) -> None:
        self.store.put(self._namespace(turn.user_id), f"{turn.exchange:08d}-{turn.role}",
                       {FIELD: turn.text, "role": turn.role, "day": turn.day})

    def context(self, user_id: str, question: str, k: int) -> list[str]:
        found = self.store.search(self._namespace(user_id), query=question, limit=k)
        ranked = sorted(found, key=lambda item: (-round(float(item.score or 0.0), SCORE_DIGITS),
                                                 self.text_of(item.value)))
        return [self.text_of(item.value) for item in ranked]

    def text_of(self, value: dict) -> str:
        """An item's text, as the model would be shown it."""
        return value[FIELD]

    def forget(self, request: Forget) -> None:
        namespace = self._namespace(request.user_id)
        for item in self.store.search(namespace, limit=LIST_LIMIT):
            if any(has(self.text_of(item.value), value) for value in request.values):
                self.store.delete(namespace, item.key)

    def apply_remedy(self, remedy: str, user_id: str) -> None:
        """VACUUM rewrites the whole file: the same for every user that asks."""
        if remedy != "vacuum":
            super().apply_remedy(remedy, user_id)
        self.connection.execute("VACUUM")

    def place(self, relative: str) -> str:
        if relative == DATABASE:
            return "store database"
        if relative.startswith(DATABASE):
            return "journal"
        return super().place(relative)

    def close(self) -> None:
        self.connection.close()
