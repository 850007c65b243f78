"""Stage report: writes reports/report.md and reports/metrics.json from the outcomes."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated

import typer

from membench import environment
from membench.core.report import ReportInputs, render_report
from membench.core.summary import stored_tokens, summarize
from membench.core.tokenizer import O200K_SHA256
from membench.outputs import staged_outputs
from membench.policy_set import build_policies
from membench.stages.common import (
    AUDIT_PATH,
    OUTCOMES_PATH,
    PARAMS_FILE,
    SCENARIO_DIR,
    STORED_PATH,
    AuditFile,
    OutcomesFile,
    OutFile,
    ParamsFile,
    ScenarioDir,
    StoredFile,
    fails_cleanly,
    read_json,
    read_params,
    read_parquet,
    read_scenario,
)
from membench.tables import audit_from_table, result_from_tables

ARTICLE_PATH = Path("data/article.toml")
REPORT_PATH = Path("reports/report.md")
METRICS_PATH = Path("reports/metrics.json")
TRACE_FACT = "node_version"
ArticleFile = Annotated[Path, typer.Option("--article", help="The article's published table.")]
MetricsFile = Annotated[Path, typer.Option("--metrics", help="Metrics (JSON).")]


def metrics(result, policy_ids: list[str], last_day: int) -> dict:
    """Per policy and form: outcome counts and mean injected tokens; stored tokens per policy."""
    data: dict[str, dict] = {}
    for s in summarize(result, policy_ids):
        entry = data.setdefault(s.policy, {"stored_tokens": stored_tokens(result, s.policy,
                                                                          last_day)})
        entry[s.form] = {**s.counts, "mean_injected_tokens": round(s.mean_injected_tokens, 1)}
    return data


def header(p, manifest: dict) -> list[tuple[str, str]]:
    return [
        ("Measured", p.measured),
        *environment.describe(),
        ("Tokenizer", f"o200k_base vocabulary (SHA-256 {O200K_SHA256}) through tiktoken"),
        ("Corpus", (f"{manifest['corpus_root']} {manifest['corpus_glob']}, "
                    f"{manifest['corpus_files']} files, SHA-256 {manifest['corpus_sha256']}")),
        ("Scenario", (f"{manifest['scenario_file']} "
                      f"(SHA-256 {manifest['scenario_file_sha256']}), "
                      f"{manifest['sessions']} sessions, {manifest['exchanges']} exchanges, "
                      f"filler replies quote {manifest['lines_per_reply']} lines, "
                      f"seed {manifest['seed']}")),
        ("Extractor", p.extractor),
    ]


@fails_cleanly
def report(params: ParamsFile = PARAMS_FILE, scenario: ScenarioDir = SCENARIO_DIR,
           outcomes: OutcomesFile = OUTCOMES_PATH, stored: StoredFile = STORED_PATH,
           article: ArticleFile = ARTICLE_PATH, out: OutFile = REPORT_PATH,
           metrics_out: MetricsFile = METRICS_PATH, audit: AuditFile = AUDIT_PATH) -> None:
    """Write the Markdown report and the metrics file."""
    p = read_params(params)
    manifest = read_json(scenario / "manifest.json")
    built = read_scenario(scenario)
    result = result_from_tables(read_parquet(outcomes), read_parquet(stored))
    try:
        published = tomllib.loads(article.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ValueError(f"cannot read the article's table {article}: {error}") from None
    labels = {policy.id: policy.label for policy in build_policies(p.policies)}
    text = render_report(ReportInputs(
        header=header(p, manifest), manifest=manifest, labels=labels, result=result,
        exchanges=built.exchanges, article=published, trace_fact=TRACE_FACT,
        audit=audit_from_table(read_parquet(audit)),
    ))
    with staged_outputs() as outputs:
        outputs.text(out, text)
        outputs.json(metrics_out, metrics(result, list(labels), max(manifest["probe_days"])))
    typer.echo(f"report: wrote {out} and {metrics_out}", err=True)
