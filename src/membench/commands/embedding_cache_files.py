"""The per-text vector cache as the embedding stages (embed, embed_turns) read and write it:
the cache file's option, dropping a cache another encoder wrote, and the run's table."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import pyarrow as pa
import pyarrow.parquet as pq
import typer

from membench.io.embedding_files import ENCODER_METADATA, load_cache, with_encoder
from membench.retrieval.embedding import ENCODER_VERSION  # cheap: loads no model or tokenizer
from membench.retrieval.embedding_cache import EmbeddingCache

CacheFile = Annotated[Path, typer.Option("--cache", help="Per-text vector cache (Parquet).")]


def load_encoder_cache(path: Path) -> EmbeddingCache:
    """The cache at path if this encoder wrote it; otherwise an empty one, said on stderr."""
    cache = load_cache(path)
    if not len(cache):
        return cache
    stored = (pq.read_schema(path).metadata or {}).get(ENCODER_METADATA, b"").decode()
    if stored != ENCODER_VERSION:
        typer.echo(f"embed: dropping {len(cache)} cached vectors made by encoder "
                   f"{stored or 'unversioned (torch)'!r}, not {ENCODER_VERSION!r}", err=True)
        return EmbeddingCache()
    return cache


def embeddings_table(cache: EmbeddingCache, model_id: str, texts: list[str],
                     weights_sha256: str) -> pa.Table:
    """Only this run's texts, sorted by hash, with the model, its weights' hash and the
    encoder version."""
    return with_encoder(cache.subset(model_id, texts).to_table(), {
        "membench.embedding_model": model_id,
        "membench.embedding_weights_sha256": weights_sha256,
    })
