"""Stage report: writes reports/report.md, reports/summary.json (the DVC metric) and
reports/metrics.json (every count, not a DVC metric) from the outcomes."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated

import typer

from membench.commands.common import (
    PARAMS_FILE,
    AuditFile,
    ContextsFile,
    EmbeddingsFile,
    OutcomesFile,
    OutFile,
    ParamsFile,
    ScenarioDir,
    StoredFile,
    fails_cleanly,
)
from membench.commands.parameters import read_params
from membench.io import environment
from membench.io.datasets import read_user_batches
from membench.io.inputs import (
    BATCH_ROWS,
    read_json,
    read_outcomes,
    read_parquet,
    read_scenario,
)
from membench.io.outputs import staged_outputs
from membench.io.tables import (
    USER_OUTCOMES_SCHEMA,
    audit_from_table,
    result_from_tables,
    user_outcome_summary,
)
from membench.memory.policies import build_policies, without_embeddings
from membench.reporting.charts import report_images
from membench.reporting.extraction_tables import extraction_metrics
from membench.reporting.recency_tables import recency_effects
from membench.reporting.report import ReportInputs, render_report
from membench.reporting.story import TRACED_OUTCOMES, is_article_story
from membench.scoring.metrics import detailed, summary
from membench.scoring.multiseed import counts_from_json
from membench.scoring.results import ResultsTable
from membench.tokenizer import O200K_SHA256

TRACE_FACT = "node_version"
MultiseedFile = Annotated[Path, typer.Option("--multiseed", help="Multi-seed counts (JSON).")]
ArticleFile = Annotated[Path, typer.Option("--article", help="The article's published table.")]
ExtractionFile = Annotated[Path, typer.Option(
    "--extraction", help="Extraction quality and sweep (JSON, from the extraction stage).")]
MetricsFile = Annotated[Path, typer.Option("--metrics", help="Detailed metrics (JSON).")]
UsersFile = Annotated[Path, typer.Option(
    "--users", help="Multi-user outcomes (a Parquet dataset; no rows for one user).")]
SummaryFile = Annotated[Path, typer.Option("--summary", help="DVC metric (JSON).")]
ChartsFile = Annotated[Path, typer.Option(
    "--charts", help="The file whose `plots:` list declares the charts the report shows "
    "(dvc.yaml); each chart's SVG sits beside its data file.")]
TemplatesDir = Annotated[Path, typer.Option(
    "--templates", help="Directory that must hold every chart's Vega-Lite template.")]
# Untracked by git and DVC (not a stage output): the machine differs between runs, the
# committed bytes must not. dvc.yaml passes its path like every other one; the report's
# header names it.
BackendsFile = Annotated[Path | None, typer.Option(
    "--backends", help="The backends stage's summary (JSON); its section is left out without.")]
SystemsFile = Annotated[Path | None, typer.Option(
    "--systems", help="The systems stage's summary (JSON); its section is left out without.")]
AnswersFile = Annotated[Path | None, typer.Option(
    "--answers", help="The reader stage's summary (JSON); its section is left out without.")]
EnvironmentFile = Annotated[Path, typer.Option(
    "--environment", help="Where to describe this machine (JSON, not committed).")]


def header(p, manifest: dict, embeddings: dict[bytes, bytes],
           environment_file: Path) -> list[tuple[str, str]]:
    return [
        ("Measured", p.measured),
        ("Machine", f"see {environment_file.as_posix()} (written by each run, never committed)"),
        ("Packages", environment.package_versions()),
        ("Tokenizer", f"o200k_base vocabulary (SHA-256 {O200K_SHA256}) through tiktoken"),
        ("Corpus", (f"{manifest['corpus_root']} {manifest['corpus_glob']}, "
                    f"{manifest['corpus_files']} files, SHA-256 {manifest['corpus_sha256']}")),
        ("Scenario", (f"{manifest['scenario_file']} "
                      f"(SHA-256 {manifest['scenario_file_sha256']}), "
                      f"{manifest['sessions']} sessions, {manifest['exchanges']} exchanges, "
                      f"filler replies quote {manifest['lines_per_reply']} lines, "
                      f"seed {manifest['seed']}")),
        ("Embeddings", (f"{embeddings.get(b'membench.embedding_model', b'').decode()} "
                        f"(weights SHA-256 "
                        f"{embeddings.get(b'membench.embedding_weights_sha256', b'').decode()}"
                        f", encoder {embeddings.get(b'membench.embedding_encoder', b'').decode()})"
                        f", exact cosine search on the grid")),
        ("Extractor", p.extractor),
    ]


@fails_cleanly
def report(scenario: ScenarioDir, outcomes: OutcomesFile, contexts: ContextsFile,
           stored: StoredFile, audit: AuditFile, embeddings: EmbeddingsFile,
           multiseed: MultiseedFile, article: ArticleFile, out: OutFile, metrics_out: MetricsFile,
           summary_out: SummaryFile, environment_out: EnvironmentFile, charts: ChartsFile,
           templates: TemplatesDir, users: UsersFile, extraction: ExtractionFile,
           params: ParamsFile = PARAMS_FILE, backends: BackendsFile = None,
           systems: SystemsFile = None, answers: AnswersFile = None) -> None:
    """Write the Markdown report, the summary metric and the detailed metrics file."""
    p = read_params(params)
    manifest = read_json(scenario / "manifest.json")
    built = read_scenario(scenario)
    result = result_from_tables(read_outcomes(outcomes, contexts, TRACED_OUTCOMES),
                                read_parquet(stored))
    try:
        published = tomllib.loads(article.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ValueError(f"cannot read the article's table {article}: {error}") from None
    policies = build_policies(p.policies)
    labels = {policy.id: policy.label for policy in policies}
    lexical = [policy.id for policy in without_embeddings(policies)]
    per_seed = counts_from_json(read_json(multiseed), lexical)
    user_summary = user_outcome_summary(read_user_batches(users, USER_OUTCOMES_SCHEMA,
                                                          BATCH_ROWS))
    extracted = read_json(extraction)
    text = render_report(ReportInputs(
        header=header(p, manifest, read_parquet(embeddings).schema.metadata or {},
                      environment_out),
        manifest=manifest, labels=labels, result=result,
        exchanges=built.exchanges, article=published, trace_fact=TRACE_FACT,
        multiseed=per_seed, images=report_images(out, charts, templates), audit=audit_from_table(read_parquet(audit)),
        user_outcomes=user_summary,
        article_story=is_article_story(built.facts, published, manifest.get("format") == 2),
        facts=built.facts, extractor=p.extractor,
        extraction=extracted,
        backends=read_json(backends) if backends else None,
        systems=read_json(systems) if systems else None,
        answers=read_json(answers) if answers else None,
    ))
    with staged_outputs() as outputs:
        outputs.text(out, text)
        table = ResultsTable(result)
        metrics = {**detailed(table, list(labels), max(manifest["probe_days"])),
                   "extraction": extraction_metrics(extracted),
                   "recency_readers": recency_effects(result.outcomes)}
        if user_summary:  # multi-user runs only, so a single-user file keeps its bytes
            metrics["multi_user"] = user_summary.counts
        outputs.json(metrics_out, metrics)
        outputs.json(summary_out, summary(table, list(labels)))
        outputs.json(environment_out, environment.machine())
    typer.echo(f"report: wrote {out}, {summary_out} and {metrics_out}", err=True)
