"""Every built-in backend, registered in BACKENDS on import (each module imports its
database library only when a backend is opened, so this import needs no extra)."""

from __future__ import annotations

from membench.backends import (  # noqa: F401  (registration)
    lancedb_store,
    langgraph_stores,
    postgres_store,
    sqlite_fts,
    sqlite_vec_store,
)
from membench.backends.base import BACKENDS

__all__ = ["BACKENDS"]
