"""Stage embed_turns: vectors of the users' turns, for an extractor that compares meanings.

The consolidating extractor compares each candidate turn with the memories it keeps by
MiniLM cosine; it runs before the embed stage (which embeds what the extracted records
made), so the turns are embedded here, on the same grid and with the same per-text cache
mechanism, in a cache of their own. Every distinct user turn is embedded, whatever the
extractor: a few dozen short texts on the default story."""

from __future__ import annotations

import typer

from membench.commands.common import (
    PARAMS_FILE,
    OutFile,
    ParamsFile,
    ScenarioDir,
    fails_cleanly,
    progress,
)
from membench.commands.embedding_cache_files import CacheFile, embeddings_table
from membench.commands.parameters import read_params
from membench.execution.embedding import embed_missing
from membench.io.embedding_files import load_encoder_cache, with_encoder
from membench.io.inputs import read_scenario
from membench.io.outputs import staged_outputs


@fails_cleanly
def embed_turns(scenario: ScenarioDir, out: OutFile, cache_file: CacheFile,
                params: ParamsFile = PARAMS_FILE) -> None:
    """Embed every distinct user turn of the scenario (for the consolidating extractor)."""
    from membench.retrieval import embedding

    p = read_params(params)
    model_id = p.embedding.model
    weights = embedding.weights_sha256(model_id)
    texts = list(dict.fromkeys(e.user for e in read_scenario(scenario).exchanges))
    cache = load_encoder_cache(cache_file, warn=lambda text: typer.echo(
        f"embed_turns: {text}", err=True))
    missing = cache.missing(model_id, texts)
    typer.echo(f"embed_turns: {len(texts)} turns, {len(missing)} to embed", err=True)
    embed_missing(cache, model_id, missing, p.embedding.batch_size, progress)
    with staged_outputs() as outputs:
        outputs.parquet(out, embeddings_table(cache, model_id, texts, weights))
        outputs.parquet(cache_file, with_encoder(cache.to_table()))
