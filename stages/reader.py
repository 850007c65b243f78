"""Stage reader: the optional model answers each probe from exactly the context a policy
injected (reader.policies); every answer comes from the committed response cache, or from
the model params name, whose answers join the cache (docs/model.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from membench.commands.common import (
    PARAMS_FILE,
    ContextsFile,
    OutcomesFile,
    OutFile,
    ParamsFile,
    ScenarioDir,
    fails_cleanly,
    progress,
)
from membench.commands.model_calls import model_answers
from membench.commands.parameters import read_params
from membench.io.answer_tables import answers_table, reader_items
from membench.io.inputs import read_scenario
from membench.io.model_cache import cache_text, read_cache
from membench.io.outputs import staged_outputs
from membench.scoring.answers import ReaderSettings, answer_summary, read_answers

CacheFile = Annotated[Path, typer.Option(
    "--cache", help="The response cache (JSON Lines), read and extended; commit it.")]
SummaryFile = Annotated[Path, typer.Option("--summary", help="Answers per policy (JSON).")]


@fails_cleanly
def reader(scenario: ScenarioDir, outcomes: OutcomesFile, contexts: ContextsFile,
           cache: CacheFile, out: OutFile, summary: SummaryFile, params: ParamsFile = PARAMS_FILE) -> None:
    """Have the model answer each probe from the injected context, and classify answers."""
    p = read_params(params)
    built = read_scenario(scenario)
    read = reader_items(outcomes, contexts, p.reader.policies, p.reader.max_context_tokens)
    known = read.policies
    unknown = [name for name in p.reader.policies if name not in known]
    if unknown:
        raise typer.BadParameter(f"reader.policies names {', '.join(unknown)}, not in "
                                 f"{outcomes} (known: {', '.join(sorted(known))})",
                                 param_hint="'--params'")
    settings = ReaderSettings(p.reader.policies, p.reader.max_tokens,
                              p.reader.max_context_tokens, p.model.seed)
    responses = read_cache(cache)
    progress(f"reader: {len(p.reader.policies)} policies, {len(responses)} cached responses")
    with model_answers(p.model, responses, cache, "reader") as answer_all:
        rows = read_answers(read.items, {f.key: f for f in built.facts}, settings,
                            answer_all)
    with staged_outputs() as outputs:
        outputs.parquet(out, answers_table(rows))
        outputs.json(summary, {"model": p.model.name, "policies": answer_summary(rows)})
        outputs.text(cache, cache_text(responses))
    typer.echo(f"reader: {len(rows)} answers", err=True)
