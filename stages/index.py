"""Stage index: tokenizes every retrieval corpus at every probe day."""

from __future__ import annotations

import typer

from membench.commands.common import (
    PARAMS_FILE,
    OutFile,
    ParamsFile,
    RecordsFile,
    ScenarioDir,
    fails_cleanly,
)
from membench.commands.parameters import read_params
from membench.io.inputs import read_parquet, read_scenario
from membench.io.outputs import staged_outputs
from membench.io.tables import index_table, records_from_table
from membench.memory.indexing import tokenized_corpora
from membench.memory.policies import build_policies, tokenized_stores


@fails_cleanly
def index(scenario: ScenarioDir, records: RecordsFile, out: OutFile,
          params: ParamsFile = PARAMS_FILE) -> None:
    """Build the BM25 corpora each retrieval policy searches."""
    p = read_params(params)
    built = read_scenario(scenario)
    fact_records = records_from_table(read_parquet(records))
    stores = tokenized_stores(build_policies(p.policies))
    entries = tokenized_corpora(built, fact_records, stores)
    with staged_outputs() as outputs:
        outputs.parquet(out, index_table(entries))
    typer.echo(f"index: {len(entries)} documents in {len(stores)} corpora x "
               f"{len(built.probe_days)} days", err=True)
