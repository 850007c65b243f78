"""Stage index: tokenizes every retrieval corpus at every probe day."""

from __future__ import annotations

from pathlib import Path

import typer

from membench.core.indexing import tokenized_corpora
from membench.core.policies import build_policies, retrieval_corpora
from membench.outputs import staged_outputs
from membench.stages.common import (
    PARAMS_OPTION,
    SCENARIO_DIR,
    fails_cleanly,
    read_params,
    read_parquet,
    read_scenario,
)
from membench.stages.extract import RECORDS_PATH
from membench.tables import index_table, records_from_table

INDEX_PATH = Path("data/index.parquet")


@fails_cleanly
def index(params: Path = PARAMS_OPTION,
          scenario: Path = typer.Option(SCENARIO_DIR, help="Scenario tables directory."),
          records: Path = typer.Option(RECORDS_PATH, help="Fact records (Parquet)."),
          out: Path = typer.Option(INDEX_PATH, help="Tokenized corpora (Parquet).")) -> None:
    """Build the BM25 corpora each retrieval policy searches."""
    p = read_params(params)
    built = read_scenario(scenario)
    fact_records = records_from_table(read_parquet(records))
    stores = retrieval_corpora(build_policies(p.policies))
    entries = tokenized_corpora(built, fact_records, stores)
    with staged_outputs() as outputs:
        outputs.parquet(out, index_table(entries))
    typer.echo(f"index: {len(entries)} documents in {len(stores)} corpora x "
               f"{len(built.probe_days)} days", err=True)
