"""The per-text vector cache as the embedding stages (embed, embed_turns, users) write it:
the cache file's option and the run's table (membench.io.embedding_files reads it)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import pyarrow as pa
import typer

from membench.io.embedding_files import with_encoder
from membench.retrieval.embedding_cache import EmbeddingCache

CacheFile = Annotated[Path, typer.Option("--cache", help="Per-text vector cache (Parquet).")]


def embeddings_table(cache: EmbeddingCache, model_id: str, texts: list[str],
                     weights_sha256: str) -> pa.Table:
    """Only this run's texts, sorted by hash, with the model, its weights' hash and the
    encoder version."""
    return with_encoder(cache.subset(model_id, texts).to_table(), {
        "membench.embedding_model": model_id,
        "membench.embedding_weights_sha256": weights_sha256,
    })
