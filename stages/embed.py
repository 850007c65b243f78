"""Stage embed: vectors for every text a dense policy can see, and for every probe.

The policies stage then ranks with integer arithmetic on these vectors and loads no model.
Vectors are also kept in a per-text cache (model id + text SHA-256) that DVC persists
between runs, so a rerun embeds only texts it has not seen, and loads no model at all
when there are none. Both files record the encoder version (ENCODER_METADATA): a cache
written by another encoder (such as the torch one before it) is dropped, with a message,
rather than mixing its vectors with this encoder's.
"""

from __future__ import annotations

import typer

from membench.commands.common import (
    PARAMS_FILE,
    OutFile,
    ParamsFile,
    RecordsFile,
    ScenarioDir,
    fails_cleanly,
    progress,
)
from membench.commands.embedding_cache_files import CacheFile, embeddings_table
from membench.commands.parameters import read_params
from membench.execution.embedding import embed_missing
from membench.io.embedding_files import load_encoder_cache, with_encoder
from membench.io.inputs import read_parquet, read_scenario
from membench.io.outputs import staged_outputs
from membench.io.tables import records_from_table
from membench.memory.indexing import embedding_texts
from membench.memory.policies import build_policies, embedded_stores


@fails_cleanly
def embed(scenario: ScenarioDir, records: RecordsFile, out: OutFile, cache_file: CacheFile,
          params: ParamsFile = PARAMS_FILE) -> None:
    """Embed every document dense retrieval can see, and every probe question."""
    from membench.retrieval import embedding

    p = read_params(params)
    model_id = p.embedding.model
    weights = embedding.weights_sha256(model_id)  # also fails early if not installed
    built = read_scenario(scenario)
    fact_records = records_from_table(read_parquet(records))
    texts = embedding_texts(built, fact_records, embedded_stores(build_policies(p.policies)))
    cache = load_encoder_cache(cache_file, warn=lambda text: typer.echo(f"embed: {text}",
                                                                        err=True))
    missing = cache.missing(model_id, texts)
    typer.echo(f"embed: {len(texts)} texts, {len(texts) - len(missing)} cached, "
               f"{len(missing)} to embed with {model_id}", err=True)
    embed_missing(cache, model_id, missing, p.embedding.batch_size, progress)
    with staged_outputs() as outputs:
        outputs.parquet(out, embeddings_table(cache, model_id, texts, weights))
        outputs.parquet(cache_file, with_encoder(cache.to_table()))

