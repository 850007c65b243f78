"""The report's answer to the article's open retrieval question: how much of the paraphrase
gap do stemming, dense embeddings and their fusion close, and at what cost?"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from membench.reporting.findings import RETRIEVAL_FINDINGS, finding_paragraphs
from membench.reporting.parts import fmt, trace
from membench.scenario.model import Exchange
from membench.scoring.results import FORMS, ResultsTable


def _row(table: ResultsTable, policy: str) -> str:
    live = [table.n(policy, f, deleted=False) for f in FORMS]
    current = [table.n(policy, f, outcome="current") for f in FORMS]
    recall = [table.recall(policy, f) for f in FORMS]
    hits = " / ".join("–" if r is None else str(r.hits) for r in recall)
    tokens = " / ".join(fmt(round(table.mean_tokens(policy, f))) for f in FORMS)
    return (f"| `{policy}` | {current[0]} of {live[0]} | {current[1]} of {live[1]} | "
            f"{table.n(policy, outcome='conflict')} | {table.n(policy, outcome='stale')} | "
            f"{hits} | {table.n(policy, outcome='leaked')} | {tokens} |")


def retrieval_section(table: ResultsTable, labels: Mapping[str, str],
                      exchanges: Sequence[Exchange], trace_fact: str | None,
                      last_day: int) -> list[str]:
    """Every policy of the run that retrieves gets a row, so a new retriever is compared
    without an edit here."""
    compared = table.retrieval_policies(list(labels))
    if not compared:
        return []
    rows = [("| Policy | Current only, literal | Current only, paraphrase | Conflicts | Stale | "
             "recall@k literal / paraphrase | Leaked | Mean tokens literal / paraphrase |"),
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    rows += [_row(table, p) for p in compared]
    parts = [
        "## Stemming, dense retrieval and fusion",
        ("The article measured BM25 only. Dense retrieval here is all-MiniLM-L6-v2 (see the "
         "header) with exact cosine search; it returns the top k whatever the scores, since "
         "cosine similarity has no natural zero. Fusion is reciprocal rank fusion (k = 60) of "
         "BM25's and dense's top-k lists. Stemmed BM25 uses the Snowball English stemmer."),
        "\n".join(rows),
        "\n\n".join(finding_paragraphs(table, labels, RETRIEVAL_FINDINGS)),
    ]
    for policy in ("bm25_transcript", "bm25_stemmed_transcript"):
        if policy in compared and trace_fact is not None:  # the article's story only
            parts.append(trace(table, exchanges, policy, trace_fact, last_day))
    return parts
