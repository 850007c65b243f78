"""`membench remeasure`: the yearly re-measurement, so CI stays a thin wrapper.

Due when report.measured is 12 months old or more (or --force): dates params.yaml today,
reruns the pipeline from scratch (`--force` reruns every stage, `--no-run-cache` stops DVC
restoring outputs of earlier identical runs), and writes a Markdown summary of what changed
against the committed baseline (git `--baseline`, default HEAD)."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
from pathlib import Path
from typing import Annotated

import typer
import yaml

from membench.commands.common import PARAMS_FILE, ParamsFile, fails_cleanly
from membench.commands.parameters import read_params
from membench.io import environment
from membench.reporting import remeasure as logic

REPRO = ("dvc", "repro", "--force", "--no-run-cache")


def run_pipeline() -> None:
    """The whole pipeline from scratch; tests replace this function."""
    done = subprocess.run(REPRO, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"`{' '.join(REPRO)}` failed with exit status {done.returncode}")


def committed(ref: str, path: str) -> str | None:
    """The file as committed at `ref`, or None when that revision does not hold it (a file
    added since, e.g. the first re-measurement after a new metric file)."""
    if subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
                      capture_output=True, check=False).returncode != 0:
        raise ValueError(f"--baseline {ref!r} is not a git revision here")
    done = subprocess.run(["git", "show", f"{ref}:{path}"], capture_output=True, text=True,
                          check=False)
    return done.stdout if done.returncode == 0 else None


def metrics_of(read, metric_files: list[str]) -> dict[str, float]:
    """Every number of the metric files, named `file:dotted.path`; absent files add none."""
    out: dict[str, float] = {}
    for path in metric_files:
        text = read(path)
        if text is None:
            continue
        flat = logic.flatten(json.loads(text))
        out.update({f"{Path(path).name}:{name}": value for name, value in flat.items()})
    return out


def read_pipeline(path: Path) -> dict:
    if not path.is_file():
        raise FileNotFoundError(f"pipeline {path} is missing: run from the project's root")
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


def _date(value: str | None) -> dt.date:
    try:
        return dt.date.fromisoformat(value) if value else dt.date.today()
    except ValueError:
        raise typer.BadParameter(f"expected YYYY-MM-DD, got {value!r}",
                                 param_hint="'--today'") from None


def _signal_github(remeasured: bool) -> None:
    output = os.environ.get("GITHUB_OUTPUT")
    if output:
        with open(output, "a", encoding="utf-8") as sink:
            sink.write(f"remeasured={'true' if remeasured else 'false'}\n")


@fails_cleanly
def remeasure(
    params: ParamsFile = PARAMS_FILE,
    today: Annotated[str | None, typer.Option(help="Today's date (YYYY-MM-DD); "
                                              "default: the clock.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Re-measure even if not due.")] = False,
    check: Annotated[bool, typer.Option("--check", help="Only report whether one is due; "
                                        "prints a GitHub ::warning:: line when it is.")] = False,
    baseline: Annotated[str, typer.Option(help="Git revision holding the baseline.")] = "HEAD",
    summary: Annotated[Path, typer.Option(help="Where to write the Markdown summary.")] =
        Path("remeasure-summary.md"),
    pipeline: Annotated[Path, typer.Option(help="The DVC pipeline whose metric files and "
                                           "report are compared.")] = Path("dvc.yaml"),
) -> None:
    """Re-measure when the committed measurement is 12 months old (or --force)."""
    day = _date(today)
    measured = dt.date.fromisoformat(read_params(params).measured)
    due = logic.is_due(measured, day)
    if check:
        if due:
            typer.echo(f"::warning::The committed measurement ({measured}) is 12 months old "
                       f"or more (due {logic.due_date(measured)}): run the remeasure workflow.")
        else:
            typer.echo(f"measurement of {measured} is current; next due "
                       f"{logic.due_date(measured)}")
        return
    if not (due or force):
        typer.echo(f"not due: measured {measured}, next due {logic.due_date(measured)}")
        _signal_github(False)
        return
    metric_files, report_file = logic.tracked_results(read_pipeline(pipeline))
    old_metrics = metrics_of(lambda path: committed(baseline, path), metric_files)
    old_header = logic.header_fields(committed(baseline, report_file) or "")
    original = params.read_text(encoding="utf-8")
    params.write_text(logic.set_measured(original, day), encoding="utf-8")
    try:
        run_pipeline()
    except (RuntimeError, OSError) as error:
        params.write_text(original, encoding="utf-8")
        typer.echo(f"membench remeasure: error: {error}", err=True)
        raise typer.Exit(1) from None
    new_metrics = metrics_of(lambda path: Path(path).read_text(encoding="utf-8"), metric_files)
    new_header = logic.header_fields(Path(report_file).read_text(encoding="utf-8"))
    text = logic.render_summary(measured.isoformat(), day.isoformat(),
                                logic.metric_changes(old_metrics, new_metrics),
                                logic.environment_changes(old_header, new_header),
                                environment.machine())
    summary.write_text(text, encoding="utf-8")
    typer.echo(text)
    _signal_github(True)
