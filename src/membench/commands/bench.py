"""`membench bench`: the whole bench in memory, printing the article's raw table."""

from __future__ import annotations

from typing import Annotated

import typer

from membench.commands.common import (
    PARAMS_FILE,
    ParamsFile,
    VocabularyFile,
    fails_cleanly,
    progress,
    read_params,
)
from membench.commands.inmemory import run_in_memory
from membench.scoring.results import ResultsTable
from membench.scoring.summary import raw_table


@fails_cleanly
def bench(params: ParamsFile = PARAMS_FILE, vocabulary: VocabularyFile = None,
          quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
          dense: Annotated[bool, typer.Option(
              "--dense", help="Also run the policies that need embeddings (loads the model, "
                              "about 20 s more).")] = False) -> None:
    """Run every stage in memory (no DVC, no files written) and print the raw table."""
    p = read_params(params)
    run = run_in_memory(p, vocabulary=vocabulary, progress=None if quiet else progress,
                        dense=dense)
    s, last = run.scenario, max(run.scenario.probe_days)
    changed = sum(len(f.versions) > 1 for f in s.facts)
    deleted = sum(f.deletion is not None for f in s.facts)
    typer.echo(f"scenario: {s.sessions} sessions, {len(s.exchanges)} exchanges, "
               f"{len(s.facts)} facts, {changed} updated, {deleted} deleted on request")
    table = ResultsTable(run.result)
    typer.echo(f"transcript at day {last}: {table.transcript_tokens(last)} tokens\n")
    typer.echo(raw_table(table, {pol.id: pol.label for pol in run.policies}, last))
