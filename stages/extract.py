"""Stage extract: turns exchanges into fact records with the configured extractor."""

from __future__ import annotations

import typer

from membench.commands.common import (
    PARAMS_FILE,
    OutFile,
    ParamsFile,
    ScenarioDir,
    TurnsFile,
    fails_cleanly,
)
from membench.commands.parameters import read_params
from membench.extraction.extractors import extractor_for, reads_turn_vectors
from membench.io.embedding_files import vectors_from_table
from membench.io.inputs import read_parquet, read_scenario
from membench.io.outputs import staged_outputs
from membench.io.tables import records_table


@fails_cleanly
def extract(scenario: ScenarioDir, turns: TurnsFile, out: OutFile,
            params: ParamsFile = PARAMS_FILE) -> None:
    """Extract fact records (key, value or delete, day, source exchange)."""
    p = read_params(params)
    built = read_scenario(scenario)
    vectors = vectors_from_table(read_parquet(turns), p.embedding.model) \
        if reads_turn_vectors(p.extractor, p.extraction) else None
    records = extractor_for(p.extractor, p.extraction, vectors)(built)
    with staged_outputs() as outputs:
        outputs.parquet(out, records_table(records))
    typer.echo(f"extract: {len(records)} records with the {p.extractor} extractor", err=True)
