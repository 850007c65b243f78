"""Reads and writes the embedding cache file; the cache itself is pure (core)."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq

from membench.core.embedding_cache import CACHE_SCHEMA, EmbeddingCache


def load_cache(path: Path | str) -> EmbeddingCache:
    """The cache stored at path, or an empty one if the file does not exist yet."""
    path = Path(path)
    if not path.exists():
        return EmbeddingCache()
    return EmbeddingCache.from_table(pq.read_table(path, schema=CACHE_SCHEMA))


def save_cache(path: Path | str, cache: EmbeddingCache) -> None:
    """Write atomically (temp file then rename), so a killed run leaves the old cache."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    pq.write_table(cache.to_table(), temporary)
    os.replace(temporary, path)
