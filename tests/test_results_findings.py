"""The results table and the declared findings: counts equal the committed metrics (written
by the counters the table replaced), a finding without its premise says it was not
measured, and the retrieval table picks up a newly registered retrieval policy."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from membench.commands.inmemory import run_in_memory
from membench.memory.policies import POLICIES, RetrievalPolicy, register_policy
from membench.reporting.findings import FINDINGS, RETRIEVAL_FINDINGS, finding_paragraphs
from membench.reporting.report import ReportInputs, render_report
from membench.reporting.retrieval_tables import retrieval_section
from membench.scoring import metrics
from membench.scoring.results import ResultsTable


def _report(run, labels=None) -> str:
    s = run.scenario
    labels = labels or {p.id: p.label for p in run.policies}
    manifest = {"sessions": s.sessions, "exchanges": len(s.exchanges), "facts": len(s.facts),
                "probe_days": list(s.probe_days), "seed": s.seed}
    return render_report(ReportInputs(header=[("Measured", "test")], manifest=manifest,
                                      labels=labels, result=run.result,
                                      exchanges=s.exchanges, article={},
                                      trace_fact="node_version"))


def _paragraph(text: str, headline: str) -> str:
    return next(line for line in text.splitlines() if f"**{headline}**" in line)


def test_counts_equal_the_committed_metrics(default_run, repo_root):
    """reports/metrics.json was written by the four counters this table replaced."""
    committed = json.loads((repo_root / "reports/metrics.json").read_text(encoding="utf-8"))
    ids = [p.id for p in default_run.policies]
    last = max(default_run.scenario.probe_days)
    ours = metrics.detailed(ResultsTable(default_run.result), ids, last)
    assert ours == {p: committed[p] for p in ids}


@pytest.fixture(scope="module")
def day_ten_run(default_params, repo_root):
    """Probes on day 10 only, top-1 retrieval: no fact has changed or been deleted yet."""
    p = default_params
    params = replace(p, scenario=replace(p.scenario, probe_days=(10,)),
                     policies=replace(p.policies, retrieval_top_k=1))
    return run_in_memory(params, root=repo_root)


def test_a_finding_without_its_premise_says_it_does_not_apply(day_ten_run):
    table = ResultsTable(day_ten_run.result)
    assert not table.probed(changed=True) and not table.probed(deleted=True)
    text = _report(day_ten_run)
    assert "0 of the 0" not in text
    findings = [line for line in text.splitlines() if line[:1].isdigit() or "**" in line]
    assert findings and not any(" of 0 " in line for line in findings)
    assert "no probe on a changed fact still live or on a deleted fact" in \
        _paragraph(text, "Keeping everything.")
    assert "Does not apply to this run: no probe on a deleted fact." in \
        _paragraph(text, "Redaction.")
    assert "Not measured" not in _paragraph(text, "Short-term memory alone.")


def test_a_policy_left_out_of_the_run_is_named(default_run):
    labels = {p.id: p.label for p in default_run.policies if p.id != "fact_log"}
    paragraphs = finding_paragraphs(ResultsTable(default_run.result), labels)
    keep = next(p for p in paragraphs if p.startswith("**Keeping everything.**"))
    assert keep == "**Keeping everything.** Not measured in this run: `fact_log` not in this run."
    assert sum("Not measured" in p for p in paragraphs) == 1


def test_no_finding_calls_recall_the_current_value(default_run):
    text = "\n".join(finding_paragraphs(ResultsTable(default_run.result),
                                        {p.id: p.label for p in default_run.policies},
                                        FINDINGS + RETRIEVAL_FINDINGS))
    assert "brought back the current value" not in text
    assert "top-k (recall@k) for 36 of 37 and 5 of 37" in text


@pytest.fixture
def extra_retriever(monkeypatch):
    """bm25_transcript again under another id, registered in a copy of the registry."""
    monkeypatch.setattr(POLICIES, "_entries", dict(POLICIES._entries))
    declared = POLICIES["bm25_transcript"]
    again = RetrievalPolicy("test_bm25_again", declared.store, declared.retriever,
                            declared.describes)
    register_policy(order=1_000)(again)
    return again.id


def test_a_new_retrieval_policy_joins_the_retrieval_table(extra_retriever, default_params,
                                                          repo_root):
    run = run_in_memory(default_params, root=repo_root)
    assert extra_retriever in [p.id for p in run.policies]
    table = ResultsTable(run.result)
    labels = {p.id: p.label for p in run.policies}
    section = "\n\n".join(retrieval_section(table, labels, run.scenario.exchanges,
                                            "node_version", 30))
    row = next(line for line in section.splitlines() if f"`{extra_retriever}`" in line)
    assert row == next(line for line in section.splitlines()
                       if line.startswith("| `bm25_transcript`")).replace(
                           "bm25_transcript", extra_retriever)
    assert "`session_buffer`" not in section
