"""Stage plots: JSON plot data for `dvc plots show` and the same charts as SVG for the
report, drawn from the same dvc.yaml templates, all under reports/plots/ (kept in git, so
the report's images render on GitHub)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from membench.commands.common import (
    PARAMS_FILE,
    OutcomesFile,
    ParamsFile,
    StoredFile,
    fails_cleanly,
)
from membench.commands.parameters import read_params
from membench.io.inputs import read_json, read_outcomes, read_parquet
from membench.io.outputs import staged_outputs
from membench.io.tables import result_from_tables
from membench.memory.policies import build_policies
from membench.reporting import plots as data
from membench.reporting.charts import chart_svg
from membench.reporting.extraction_tables import sweep_bands
from membench.scoring.results import ResultsTable

PlotsDir = Annotated[Path, typer.Option("--out", help="Directory for plot data and SVGs.")]
ChartsFile = Annotated[Path, typer.Option(
    "--charts", help="The file whose `plots:` list defines the charts (dvc.yaml).")]
ExtractionFile = Annotated[Path, typer.Option(
    "--extraction", help="The extraction stage's file (JSON), for the sweep chart.")]
TemplatesDir = Annotated[Path, typer.Option(
    "--templates", help="Directory that must hold every chart's Vega-Lite template.")]


@fails_cleanly
def plots(outcomes: OutcomesFile, stored: StoredFile, out: PlotsDir, charts: ChartsFile,
          templates: TemplatesDir, extraction: ExtractionFile,
          params: ParamsFile = PARAMS_FILE) -> None:
    """Write the cost/quality, outcome-bar, per-day and extraction-sweep chart data and SVGs."""
    p = read_params(params)
    table = ResultsTable(result_from_tables(read_outcomes(outcomes), read_parquet(stored)))
    ids = [policy.id for policy in build_policies(p.policies)]
    points, bars, days = (data.cost_quality(table, ids), data.outcome_bars(table, ids),
                          data.by_day(table, ids))
    sweep = sweep_bands(read_json(extraction)["sweep"])
    if not points:
        raise ValueError(f"{outcomes} holds no outcome: rerun the policies stage")
    with staged_outputs() as outputs:
        outputs.json(out / "cost_quality.json", points)
        outputs.json(out / "outcomes.json", bars)
        outputs.json(out / "by_day.json", days)
        outputs.json(out / "extraction_sweep.json", sweep)
        for name, rows in (("cost_quality", points), ("outcomes", bars), ("by_day", days),
                           ("extraction_sweep", sweep)):
            outputs.text(out / f"{name}.svg",
                         chart_svg(f"{name}.json", rows, charts, templates))
    typer.echo(f"plots: wrote 4 charts under {out}", err=True)
