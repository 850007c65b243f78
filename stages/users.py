"""Stage users: a deployment of several users, each policy with namespaced and with shared
stores, and the cross-user leaks (an empty table for a single-user story).

With users.dense (the default) the dense policies run too: every text they can see in
either mode is embedded, cached per text in the stage's own persistent cache (the embed
stage's texts are the first user's without the name in front, so none are shared)."""

from __future__ import annotations

from pathlib import Path

import typer

from membench.commands.common import (
    PARAMS_FILE,
    CorpusSnapshot,
    OutFile,
    ParamsFile,
    fails_cleanly,
    progress,
)
from membench.commands.embedding_cache_files import CacheFile
from membench.commands.parameters import read_parameters_and_corpus
from membench.execution.embedding import embed_missing
from membench.execution.executor import executor
from membench.extraction.extractors import extractor_for, reads_turn_vectors
from membench.io.embedding_files import load_encoder_cache, with_encoder
from membench.io.outputs import staged_outputs
from membench.io.scenario_file import read_scenario_source
from membench.io.tables import user_outcomes_table
from membench.memory.policies import build_policies, embedded_stores, without_embeddings
from membench.scenario.deployment import build_user_scenarios
from membench.scenario.spec import ScenarioSpec
from membench.scoring.users import (
    build_deployment,
    deployment_texts,
    deployment_units,
    run_deployment,
)


@fails_cleanly
def users(corpus: CorpusSnapshot, out: OutFile, cache_file: CacheFile,
          params: ParamsFile = PARAMS_FILE) -> None:
    """Run every policy per user and on one shared store (dense ones if users.dense)."""
    p, files = read_parameters_and_corpus(params, corpus)
    spec = read_scenario_source(Path(p.scenario.file))
    others = spec.users if isinstance(spec, ScenarioSpec) else ()  # format 2: one user
    cache = load_encoder_cache(cache_file, warn=lambda text: typer.echo(f"users: {text}",
                                                                         err=True))
    rows = []
    if others:
        scenarios = build_user_scenarios(spec, files, p.scenario.shape())
        turn_vectors = None
        if reads_turn_vectors(p.extractor, p.extraction):  # every user's turns, embedded
            turns = list(dict.fromkeys(e.user for u in scenarios for e in u.scenario.exchanges))
            embed_missing(cache, p.embedding.model, turns, p.embedding.batch_size, progress)
            turn_vectors = cache.vectors(p.embedding.model)
        deployment = build_deployment(
            scenarios, extractor_for(p.extractor, p.extraction, turn_vectors))
        policies = build_policies(p.policies)
        vectors = None
        if p.users.dense:
            texts = deployment_texts(deployment, embedded_stores(policies))
            missing = cache.missing(p.embedding.model, texts)
            typer.echo(f"users: {len(texts)} texts for the dense policies, {len(missing)} "
                       f"to embed with {p.embedding.model}", err=True)
            embed_missing(cache, p.embedding.model, missing, p.embedding.batch_size, progress)
            vectors = cache.vectors(p.embedding.model)
        else:
            policies = without_embeddings(policies)
        units = deployment_units(deployment)
        with executor("users", len(units), progress) as where:  # membench.execution
            rows = run_deployment(
                deployment, policies, progress=progress, vectors=vectors,
                map_units=lambda function, run, units: where.map(
                    function, run, units, label="users", name=lambda u: f"{u[0]} {u[1]}"))
    with staged_outputs() as outputs:
        outputs.parquet(out, user_outcomes_table(rows))
        outputs.parquet(cache_file, with_encoder(cache.to_table()))
    typer.echo(f"users: {1 + len(others)} user(s), {len(rows)} probe outcomes", err=True)
