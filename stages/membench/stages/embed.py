"""Stage embed: vectors for every text a dense policy can see, and for every probe.

The policies stage then ranks with integer arithmetic on these vectors and loads no model.
Vectors are also kept in a per-text cache (model id + text SHA-256) that DVC persists
between runs, so a rerun embeds only texts it has not seen, and loads no model at all
when there are none. Both files record the encoder version (ENCODER_METADATA): a cache
written by another encoder (such as the torch one before it) is dropped, with a message,
rather than mixing its vectors with this encoder's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import pyarrow as pa
import pyarrow.parquet as pq
import typer

from membench.core.embedding_cache import CACHE_SCHEMA, EmbeddingCache
from membench.embedding import ENCODER_VERSION  # cheap: loads no model or tokenizer
from membench.core.indexing import embedding_texts
from membench.embedding_files import load_cache
from membench.outputs import staged_outputs
from membench.core.policies import build_policies, embedded_stores
from membench.stages.common import (
    PARAMS_FILE,
    RECORDS_PATH,
    SCENARIO_DIR,
    OutFile,
    ParamsFile,
    RecordsFile,
    ScenarioDir,
    fails_cleanly,
    read_params,
    read_parquet,
    read_scenario,
)
from membench.tables import records_from_table

EMBEDDINGS_PATH = Path("data/embeddings.parquet")
EMBEDDING_CACHE_PATH = Path("data/embedding_cache.parquet")
EmbeddingsFile = Annotated[Path, typer.Option("--embeddings", help="Vectors (Parquet).")]
CacheFile = Annotated[Path, typer.Option("--cache", help="Per-text vector cache (Parquet).")]
ENCODER_METADATA = b"membench.embedding_encoder"


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


def _with_encoder(table: pa.Table, metadata: dict[str, str] | None = None) -> pa.Table:
    return table.replace_schema_metadata(
        {**(metadata or {}), ENCODER_METADATA.decode(): ENCODER_VERSION})


def embeddings_table(cache: EmbeddingCache, model_id: str, texts: list[str],
                     weights_sha256: str) -> pa.Table:
    """Only this run's texts, sorted by hash, with the model, its weights' hash and the
    encoder version."""
    return _with_encoder(cache.subset(model_id, texts).to_table(), {
        "membench.embedding_model": model_id,
        "membench.embedding_weights_sha256": weights_sha256,
    })


@fails_cleanly
def embed(params: ParamsFile = PARAMS_FILE, scenario: ScenarioDir = SCENARIO_DIR,
          records: RecordsFile = RECORDS_PATH, out: OutFile = EMBEDDINGS_PATH,
          cache_file: CacheFile = EMBEDDING_CACHE_PATH) -> None:
    """Embed every document dense retrieval can see, and every probe question."""
    from membench import embedding

    p = read_params(params)
    model_id = p.embedding.model
    weights = embedding.weights_sha256(model_id)  # also fails early if not installed
    built = read_scenario(scenario)
    fact_records = records_from_table(read_parquet(records))
    texts = embedding_texts(built, fact_records, embedded_stores(build_policies(p.policies)))
    cache = load_encoder_cache(cache_file)
    missing = cache.missing(model_id, texts)
    typer.echo(f"embed: {len(texts)} texts, {len(texts) - len(missing)} cached, "
               f"{len(missing)} to embed with {model_id}", err=True)
    if missing:
        model = embedding.load_model(model_id)
        cache.embed(model_id, missing, lambda batch: embedding.embed(
            batch, model, batch_size=p.embedding.batch_size, progress=True))
    with staged_outputs() as outputs:
        outputs.parquet(out, embeddings_table(cache, model_id, texts, weights))
        outputs.parquet(cache_file, _with_encoder(cache.to_table()))


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
