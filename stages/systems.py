"""Stage systems: real memory systems (membench.systems: mem0, ...) driven through their own
write path, turn by turn, in both forget modes; their outcomes scored like the policies',
and their files audited at rest before and after each of their remedies.

A system whose package is not installed is reported as not run, with its install command.
The texts the systems embed are cached per text in the stage's own persistent cache.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from membench.commands.common import (
    PARAMS_FILE,
    CorpusSnapshot,
    OutFile,
    ParamsFile,
    ScenarioDir,
    VocabularyFile,
    fails_cleanly,
    progress,
)
from membench.commands.embedding_cache_files import CacheFile
from membench.commands.model_calls import model_answers
from membench.commands.parameters import read_parameters_and_corpus
from membench.commands.systems_run import check_names, deployment_users, run_named_systems
from membench.io.embedding_files import load_encoder_cache, with_encoder
from membench.io.inputs import read_scenario
from membench.io.model_cache import cache_text, read_cache
from membench.io.outputs import staged_outputs
from membench.io.system_tables import system_at_rest_table, system_outcomes_table
from membench.io.tables import OUTCOMES_SCHEMA, user_outcomes_table
from membench.io.vocabulary import load_token_counter
from membench.systems.summary import summary

AtRestFile = Annotated[Path, typer.Option("--at-rest", help="At-rest audit (Parquet).")]
UsersOut = Annotated[Path, typer.Option(
    "--users-out", help="The generated deployment's outcomes per user (Parquet).")]
SummaryFile = Annotated[Path, typer.Option("--summary", help="The report's tables (JSON).")]
ModelCache = Annotated[Path, typer.Option(
    "--model-cache", help="The response cache of systems that ask the model (JSON Lines), "
                          "read and extended; commit it.")]


@fails_cleanly
def systems(scenario: ScenarioDir, corpus: CorpusSnapshot, out: OutFile, users_out: UsersOut,
            at_rest: AtRestFile, summary_file: SummaryFile, cache_file: CacheFile,
            model_cache: ModelCache, vocabulary: VocabularyFile = None,
            params: ParamsFile = PARAMS_FILE) -> None:
    """Drive each memory system through the story and a generated deployment of several
    users, score them, audit their files at rest."""
    p, files = read_parameters_and_corpus(params, corpus)
    check_names(p.systems.names)
    built = read_scenario(scenario)
    counter = load_token_counter(vocabulary)
    cache = load_encoder_cache(cache_file, warn=lambda text: typer.echo(f"systems: {text}",
                                                                         err=True))
    users = deployment_users(p, files)
    responses = read_cache(model_cache)
    with model_answers(p.model, responses, model_cache, "systems") as ask:
        done = run_named_systems(p, built, counter.count_lines, cache, progress, users, ask)
    deleted = sum(f.deleted_at is not None for f in built.facts)
    users_deleted = sum(f.deleted_at is not None for u in users for f in u.scenario.facts)
    with staged_outputs() as outputs:
        outputs.parquet(out, system_outcomes_table(done.runs, OUTCOMES_SCHEMA))
        outputs.parquet(users_out, user_outcomes_table(
            [row for run in done.deployment for row in run.rows]))
        outputs.parquet(at_rest, system_at_rest_table(
            [row for run in done.runs for row in run.at_rest],
            [row for run in done.deployment for row in run.at_rest]))
        outputs.json(summary_file, summary(done.entries, deleted, done.users, users_deleted))
        outputs.parquet(cache_file, with_encoder(cache.to_table()))
        outputs.text(model_cache, cache_text(responses))
    ran = sum(entry["ran"] for entry in done.entries)
    typer.echo(f"systems: {ran} of {len(done.entries)} system(s) ran, "
               f"{sum(len(r.result.outcomes) for r in done.runs)} probe outcomes", err=True)
