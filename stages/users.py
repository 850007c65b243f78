"""Stage users: a deployment of several users, each policy with namespaced and with shared
stores, and the cross-user leaks (an empty table for a single-user story).

With users.dense (the default) the dense policies run too: every text they can see in
either mode is embedded, cached per text in the stage's own persistent cache (the embed
stage's texts are the first user's without the name in front, so none are shared)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import pyarrow as pa
import typer

from membench.commands.common import (
    PARAMS_FILE,
    CorpusSnapshot,
    ParamsFile,
    fails_cleanly,
    progress,
)
from membench.commands.embedding_cache_files import CacheFile
from membench.commands.parameters import read_parameters_and_corpus
from membench.execution.embedding import embed_missing
from membench.execution.executor import executor
from membench.extraction.extractors import extractor_for, reads_turn_vectors
from membench.io.datasets import user_partitions
from membench.io.embedding_files import load_encoder_cache, with_encoder
from membench.io.outputs import staged_outputs
from membench.io.scenario_file import read_scenario_source
from membench.io.tables import USER_OUTCOMES_FILE_SCHEMA, user_outcomes_table
from membench.memory.policies import build_policies, embedded_stores, without_embeddings
from membench.scenario.deployment import build_user_scenarios
from membench.scenario.spec import ScenarioSpec
from membench.scoring.users import (
    DeploymentRun,
    Unit,
    build_deployment,
    deployment_texts,
    deployment_units,
    in_output_order,
    run_deployment_unit,
    unit_sizes,
)

UsersDataset = Annotated[Path, typer.Option(
    "--out", help="The outcomes, a Parquet dataset partitioned by seed and user (a directory).")]


@fails_cleanly
def users(corpus: CorpusSnapshot, out: UsersDataset, cache_file: CacheFile,
          params: ParamsFile = PARAMS_FILE) -> None:
    """Run every policy per user and on one shared store (dense ones if users.dense)."""
    p, files = read_parameters_and_corpus(params, corpus)
    spec = read_scenario_source(Path(p.scenario.file))
    others = spec.users if isinstance(spec, ScenarioSpec) else ()  # format 2: one user
    cache = load_encoder_cache(cache_file, warn=lambda text: typer.echo(f"users: {text}",
                                                                         err=True))
    parts = [user_outcomes_table([])]
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
        progress(f"{len(deployment.users)} users namespaced, shared on days "
                 f"{list(scenarios[0].scenario.probe_days)}: {len(policies)} policies")
        with executor("users", len(units), progress) as where:  # membench.execution
            done = where.map(unit_tables, DeploymentRun(deployment, tuple(policies), vectors),
                             units, label="users", name=lambda unit: f"{unit[0]} {unit[1]}",
                             sizes=unit_sizes(deployment, units))
        parts = in_output_order(deployment, units, done)
    with staged_outputs() as outputs:
        rows = outputs.dataset(out, USER_OUTCOMES_FILE_SCHEMA,
                               user_partitions(parts, p.scenario.seed))
        outputs.parquet(cache_file, with_encoder(cache.to_table()))
    typer.echo(f"users: {1 + len(others)} user(s), {rows} probe outcomes", err=True)


def unit_tables(run: DeploymentRun, unit: Unit) -> dict[int, pa.Table]:
    """One unit's rows as a table per day: columns travel back from a worker, and are held
    until the end, in a fraction of the rows' memory."""
    return {day: user_outcomes_table(rows)
            for day, rows in run_deployment_unit(run, unit).items()}
