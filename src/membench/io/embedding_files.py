"""Reads the embedding files (the embed stage writes them with staged_outputs), tagged with
the encoder that made them; the cache itself is pure (core). The embed stage writes these
files, the policies and report stages read them: what they share lives here, not in a stage."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from membench.retrieval.embedding import ENCODER_VERSION  # cheap: loads no model or tokenizer
from membench.retrieval.embedding_cache import CACHE_SCHEMA, EmbeddingCache

ENCODER_METADATA = b"membench.embedding_encoder"


def load_cache(path: Path | str) -> EmbeddingCache:
    """The cache stored at path, or an empty one if the file does not exist yet."""
    path = Path(path)
    if not path.exists():
        return EmbeddingCache()
    return EmbeddingCache.from_table(pq.read_table(path, schema=CACHE_SCHEMA))


def load_encoder_cache(path: Path, warn: Callable[[str], None]) -> EmbeddingCache:
    """The cache at path if this encoder wrote it; otherwise an empty one, said by warn."""
    cache = load_cache(path)
    if not len(cache):
        return cache
    stored = (pq.read_schema(path).metadata or {}).get(ENCODER_METADATA, b"").decode()
    if stored != ENCODER_VERSION:
        warn(f"dropping {len(cache)} cached vectors made by encoder "
             f"{stored or 'unversioned (torch)'!r}, not {ENCODER_VERSION!r}")
        return EmbeddingCache()
    return cache


def with_encoder(table: pa.Table, metadata: dict[str, str] | None = None) -> pa.Table:
    """The table tagged with this encoder's version (and any other metadata)."""
    return table.replace_schema_metadata(
        {**(metadata or {}), ENCODER_METADATA.decode(): ENCODER_VERSION})


def vectors_from_table(table: pa.Table, model_id: str) -> dict:
    """text SHA-256 -> vector for the configured model, for the policies stage."""
    if not table.schema.equals(CACHE_SCHEMA, check_metadata=False):
        raise ValueError("embeddings do not have the expected schema: rerun the embed stage")
    stored = (table.schema.metadata or {}).get(b"membench.embedding_model", b"").decode()
    if stored != model_id:
        raise ValueError(f"embeddings were made with {stored!r}, params say {model_id!r}: "
                         "rerun the embed stage")
    encoder = (table.schema.metadata or {}).get(ENCODER_METADATA, b"").decode()
    if encoder != ENCODER_VERSION:
        raise ValueError(f"embeddings were made by encoder {encoder or 'unversioned'!r}, "
                         f"not {ENCODER_VERSION!r}: rerun the embed stage")
    return EmbeddingCache.from_table(table.replace_schema_metadata(None)).vectors(model_id)
