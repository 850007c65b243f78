"""Embedding the texts a cache lacks, fanned out over a cluster when there is one.

In the stage's process the encoder already keeps every core busy (threads over batches),
so a private cluster would only add its start: chunks go to Dask workers when Dask's
configuration names a cluster or MEMBENCH_WORKERS asks for local workers. The vectors are
the same bytes either way (rounded to a grid: membench.retrieval.embedding), and each is
cached per text as before."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from membench.execution.executor import executor
from membench.execution.placement import configured_workers, placement_for
from membench.retrieval import embedding
from membench.retrieval.embedding_cache import EmbeddingCache

CHUNK_TEXTS = 128  # texts per unit: tens of seconds of work on one core, far above a task's overhead


@functools.lru_cache(maxsize=2)
def _model(model_id: str) -> embedding.EmbeddingModel:
    return embedding.load_model(model_id)  # once per worker process


def embed_chunk(settings: tuple[str, int], texts: Sequence[str]):
    """One chunk's vectors on a worker (one encoder thread: a worker per core)."""
    model_id, batch_size = settings
    return embedding.embed(texts, _model(model_id), batch_size=batch_size, threads=1)


def embed_missing(cache: EmbeddingCache, model_id: str, texts: Sequence[str],
                  batch_size: int, say: Callable[[str], None]) -> None:
    """The texts the cache lacks, embedded into it: on the cluster if one is configured."""
    missing = cache.missing(model_id, texts)
    if not missing:
        return
    chunks = [missing[start:start + CHUNK_TEXTS]
              for start in range(0, len(missing), CHUNK_TEXTS)]
    if not placement_for(len(chunks)).existing and not configured_workers():
        embedding.embed_missing(cache, model_id, missing, batch_size)
        return
    embedding.load_model(model_id)  # a missing model is this machine's error, said here
    with executor("embedding", len(chunks), say) as where:
        vectors = where.map(embed_chunk, (model_id, batch_size), chunks, label="embedding",
                            name=lambda chunk: f"{len(chunk)} texts")
    for chunk, chunk_vectors in zip(chunks, vectors, strict=True):
        for text, vector in zip(chunk, chunk_vectors, strict=True):
            cache.put(model_id, text, vector)
