"""Reads the embedding cache file (the embed stage writes it with staged_outputs); the
cache itself is pure (core)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from membench.core.embedding_cache import CACHE_SCHEMA, EmbeddingCache


def load_cache(path: Path | str) -> EmbeddingCache:
    """The cache stored at path, or an empty one if the file does not exist yet."""
    path = Path(path)
    if not path.exists():
        return EmbeddingCache()
    return EmbeddingCache.from_table(pq.read_table(path, schema=CACHE_SCHEMA))

