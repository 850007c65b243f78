"""The report's answer to the article's open retrieval question: how much of the paraphrase
gap do stemming, dense embeddings and their fusion close, and at what cost?"""

from __future__ import annotations

from collections.abc import Sequence

from membench.core.model import Exchange
from membench.core.report_parts import OutcomeCounts, fmt, trace
from membench.core.summary import FORMS

COMPARED = ("bm25_transcript", "bm25_stemmed_transcript", "dense_transcript",
            "hybrid_transcript", "bm25_fact_log", "dense_fact_log", "profile_bm25_unextracted",
            "profile_dense_unextracted", "profile_hybrid_unextracted")


def _row(counts: OutcomeCounts, policy: str) -> str:
    live = [counts.n(policy, f, deleted=False) for f in FORMS]
    current = [counts.n(policy, f, outcome="current") for f in FORMS]
    conflict = sum(counts.n(policy, f, outcome="conflict") for f in FORMS)
    stale = sum(counts.n(policy, f, outcome="stale") for f in FORMS)
    recall = []
    for form in FORMS:
        rows = [r for r in counts.select(policy, form) if r.gold_retrieved is not None]
        recall.append(f"{sum(r.gold_retrieved for r in rows)}" if rows else "–")
    leaked = counts.n(policy, outcome="leaked")
    tokens = " / ".join(fmt(counts.mean_tokens(policy, f)) for f in FORMS)
    return (f"| `{policy}` | {current[0]} of {live[0]} | {current[1]} of {live[1]} | "
            f"{conflict} | {stale} | {recall[0]} / {recall[1]} | {leaked} | {tokens} |")


def _sentences(counts: OutcomeCounts, present: set[str]) -> list[str]:
    out = []
    trio = ("bm25_transcript", "dense_transcript", "hybrid_transcript")
    if set(trio) <= present:
        live = counts.n("bm25_transcript", "paraphrase", deleted=False)
        bm25, dense, hybrid = (counts.n(p, "paraphrase", outcome="current") for p in trio)
        gap = live - bm25
        closed = f"{dense - bm25} of those {gap}" if gap else "none (there was no gap)"
        out.append(
            f"**The paraphrase gap.** Over the transcript, BM25 returned only the current value "
            f"for {bm25} of {live} paraphrased questions; dense retrieval for {dense} "
            f"(closing {closed}) and BM25 + dense fusion for {hybrid}.")
        conflicts = [sum(counts.n(p, f, outcome="conflict") for f in FORMS) for p in trio]
        leaks = [counts.n(p, outcome="leaked") for p in trio]
        deletion = counts.n("bm25_transcript", deleted=True)
        out.append(
            f"**Conflicts and leaks come back with recall.** Conflicts over both forms: BM25 "
            f"{conflicts[0]}, dense {conflicts[1]}, fusion {conflicts[2]}; deleted data leaked "
            f"on {leaks[0]}, {leaks[1]} and {leaks[2]} of {deletion} deletion probes. A "
            f"retriever that finds the statement of a fact also finds the statements it "
            f"superseded, and a reworded question about a deleted detail finds it too.")
    if {"bm25_transcript", "bm25_stemmed_transcript"} <= present:
        plain = counts.n("bm25_transcript", outcome="stale")
        stemmed = counts.n("bm25_stemmed_transcript", outcome="stale")
        out.append(
            f"**Stemming and the stale hit.** Stale outcomes over both forms: plain BM25 "
            f"{plain}, stemmed BM25 {stemmed}.")
    unextracted = [p for p in ("profile_bm25_unextracted", "profile_dense_unextracted",
                               "profile_hybrid_unextracted") if p in present]
    if unextracted:
        listed = "; ".join(
            f"`{p}` {sum(counts.n(p, f, outcome='current') for f in FORMS)} current, "
            f"{sum(counts.n(p, f, outcome='conflict') for f in FORMS)} conflicts, "
            f"{fmt(counts.mean_tokens(p))} tokens" for p in unextracted)
        out.append(f"**With facts in the profile only**, the retriever no longer decides "
                   f"recall: {listed}.")
    return out


def retrieval_section(counts: OutcomeCounts, exchanges: Sequence[Exchange], trace_fact: str,
                      last_day: int) -> list[str]:
    present = {r.policy for r in counts.rows}
    compared = [p for p in COMPARED if p in present]
    if not compared:
        return []
    table = [("| Policy | Current only, literal | Current only, paraphrase | Conflicts | Stale | "
             "recall@k literal / paraphrase | Leaked | Mean tokens literal / paraphrase |"),
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    table += [_row(counts, p) for p in compared]
    parts = [
        "## Stemming, dense retrieval and fusion",
        ("The article measured BM25 only. Dense retrieval here is all-MiniLM-L6-v2 (see the "
         "header) with exact cosine search; it returns the top k whatever the scores, since "
         "cosine similarity has no natural zero. Fusion is reciprocal rank fusion (k = 60) of "
         "BM25's and dense's top-k lists. Stemmed BM25 uses the Snowball English stemmer."),
        "\n".join(table),
        "\n\n".join(_sentences(counts, present)),
    ]
    for policy in ("bm25_transcript", "bm25_stemmed_transcript"):
        if policy in present:
            parts.append(trace(counts, exchanges, policy, trace_fact, last_day))
    return parts
