"""Stage extract: turns exchanges into fact records with the configured extractor."""

from __future__ import annotations

from pathlib import Path

import typer

from membench.core.extract import EXTRACTORS
from membench.outputs import staged_outputs
from membench.stages.common import (
    PARAMS_OPTION,
    SCENARIO_DIR,
    fails_cleanly,
    read_params,
    read_scenario,
)
from membench.tables import records_table

RECORDS_PATH = Path("data/fact_records.parquet")


@fails_cleanly
def extract(params: Path = PARAMS_OPTION,
            scenario: Path = typer.Option(SCENARIO_DIR, help="Scenario tables directory."),
            out: Path = typer.Option(RECORDS_PATH, help="Fact records (Parquet).")) -> None:
    """Extract fact records (key, value or delete, day, source exchange)."""
    p = read_params(params)
    built = read_scenario(scenario)
    records = EXTRACTORS[p.extractor](built)
    with staged_outputs() as outputs:
        outputs.parquet(out, records_table(records))
    typer.echo(f"extract: {len(records)} records with the {p.extractor} extractor", err=True)
