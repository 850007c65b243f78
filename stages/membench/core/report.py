"""Renders the Markdown report from measured data only: every number in it is computed
here from the bench result or quoted, labelled, from the article's published table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from membench.core.audit import RECORDS, AuditRow
from membench.core.bench import BenchResult
from membench.core.model import Exchange
from membench.core.multiseed import Counts
from membench.core.report_parts import OutcomeCounts, fmt, trace
from membench.core.retrieval_report import retrieval_section
from membench.core.seeds_report import seeds_section
from membench.core.summary import (
    FORMS,
    combined_rows,
    raw_table,
    stored_tokens,
    summarize,
    transcript_tokens,
)

ARTICLE_COLUMNS = ("current", "conflict", "stale", "missing", "leaked", "clean")


@dataclass(frozen=True)
class ReportInputs:
    header: Sequence[tuple[str, str]]  # (label, value) lines for the environment block
    manifest: Mapping  # the scenario stage's manifest
    labels: Mapping[str, str]  # policy id -> label, in row order
    result: BenchResult
    exchanges: Sequence[Exchange]
    article: Mapping  # data/article.toml
    trace_fact: str
    audit: Sequence[AuditRow] = ()
    multiseed: Mapping[int, Counts] | None = None  # seed -> counts, from the multiseed stage
    images: Sequence[tuple[str, str]] = ()  # (caption, path relative to the report)


def _header(inputs: ReportInputs) -> str:
    width = max(len(label) for label, _ in inputs.header)
    lines = [f"{label + ':':<{width + 1}} {value}" for label, value in inputs.header]
    return "```\n" + "\n".join(lines) + "\n```"


def _combined_table(inputs: ReportInputs) -> str:
    out = [("| Policy | Current only | Conflict | Stale or missing | Deleted data leaked | "
           "Mean tokens injected |"), "|---|---:|---:|---:|---:|---:|"]
    for row in combined_rows(inputs.result, list(inputs.labels)):
        tokens = " / ".join(fmt(t) for t in row.mean_tokens)
        out.append(f"| `{row.policy}` | {row.current_only} | {row.conflict} | "
                   f"{row.stale_or_missing} | {row.leaked} of {row.deletion_probes} | {tokens} |")
    return "\n".join(out)


def _delta(ours: float, theirs: float) -> str:
    delta = round(ours) - round(theirs)
    return f"{fmt(ours)} ({theirs:,.0f}, {'+' if delta > 0 else ''}{delta:,})" if delta else \
        f"{fmt(ours)} (=)"


def _article_table(inputs: ReportInputs) -> tuple[str, list[str]]:
    """Our numbers beside the article's, and the ids of rows whose counts differ."""
    published = inputs.article.get("policies", {})
    out = [("| Policy | Form | Current | Conflict | Stale | Missing | Leaked | Clean | "
           "Mean injected | Stored at last day |"), "|---|---|---|---|---|---|---|---|---|---|"]
    differing = []
    summaries = summarize(inputs.result, list(inputs.labels))
    last = max(inputs.manifest["probe_days"])
    for s in summaries:
        theirs = published.get(s.policy)
        if theirs is None:  # a policy the article did not measure: our numbers alone
            cells = [str(s.counts[c]) for c in ARTICLE_COLUMNS]
            cells.append(fmt(s.mean_injected_tokens))
            stored = fmt(stored_tokens(inputs.result, s.policy, last)) \
                if s.form == "literal" else ""
            out.append(f"| `{s.policy}` (not in the article) | {s.form} | "
                       + " | ".join(cells) + f" | {stored} |")
            continue
        values = theirs[s.form]
        cells = [_delta(s.counts[c], values[i]) for i, c in enumerate(ARTICLE_COLUMNS)]
        if any(s.counts[c] != values[i] for i, c in enumerate(ARTICLE_COLUMNS)):
            differing.append(f"`{s.policy}` {s.form}")
        cells.append(_delta(s.mean_injected_tokens, values[6]))
        stored = _delta(stored_tokens(inputs.result, s.policy, last), theirs["stored"]) \
            if s.form == "literal" else ""
        out.append(f"| `{s.policy}` | {s.form} | " + " | ".join(cells) + f" | {stored} |")
    return "\n".join(out), differing


def _findings(inputs: ReportInputs, counts: OutcomeCounts) -> list[str]:
    n = counts.n
    live = n("profile", "literal", deleted=False)
    deleted = n("profile", "literal", deleted=True)
    changed = n("profile", "literal", changed=True, deleted=False)
    findings = []

    sb = [n("session_buffer", f, outcome="current") for f in FORMS]
    window = [n("last_n_exchanges", f, outcome="current") for f in FORMS]
    findings.append(
        f"**Short-term memory alone.** The session buffer returned the current value for "
        f"{sb[0]} of {live} live probes (literal) and {sb[1]} of {live} (paraphrase); "
        f"{inputs.labels['last_n_exchanges']} returned it for {window[0]} and {window[1]}."
    )

    ft_conf = n("full_transcript", "literal", outcome="conflict", changed=True)
    ft_leak = n("full_transcript", "literal", outcome="leaked")
    fl_conf = n("fact_log", "literal", outcome="conflict", changed=True)
    fl_leak = n("fact_log", "literal", outcome="leaked")
    ft_tokens, pr_tokens = counts.mean_tokens("full_transcript"), counts.mean_tokens("profile")
    findings.append(
        f"**Keeping everything kept the old answers too.** The full transcript produced a "
        f"conflict on {ft_conf} of the {changed} probes on changed facts and leaked deleted "
        f"data on {ft_leak} of {deleted} deletion probes per form, at a mean "
        f"{fmt(ft_tokens)} tokens per probe ({ft_tokens / max(pr_tokens, 1):.0f} times the "
        f"profile's {fmt(pr_tokens)}). The append-only fact log: {fl_conf} conflicts and "
        f"{fl_leak} leaks, at {fmt(counts.mean_tokens('fact_log'))} tokens."
    )

    found = [n("bm25_transcript", f, outcome="current") + n("bm25_transcript", f,
             outcome="conflict") for f in FORMS]
    found_log = [n("bm25_fact_log", f, outcome="current") + n("bm25_fact_log", f,
                 outcome="conflict") for f in FORMS]
    empty = sum(1 for r in counts.select("bm25_fact_log", "paraphrase") if not r.retrieved)
    total_para = n("bm25_fact_log", "paraphrase")
    findings.append(
        f"**Lexical retrieval and reworded questions.** {inputs.labels['bm25_transcript']} "
        f"brought back the current value for {found[0]} of {live} literal probes and "
        f"{found[1]} of {live} paraphrases. Over the fact log: {found_log[0]} and "
        f"{found_log[1]}; {empty} of {total_para} paraphrase probes retrieved nothing there, "
        f"injecting a mean {fmt(counts.mean_tokens('bm25_fact_log', 'paraphrase'))} tokens."
    )

    stale = counts.select("bm25_transcript", outcome="stale")
    if stale:
        listed = ", ".join(f"`{r.fact_key}` ({r.form}, day {r.day})" for r in stale)
        findings.append(
            f"**Retrieval ranked an old fact above the new one** {len(stale)} "
            f"{'time' if len(stale) == 1 else 'times'}: "
            f"{listed}. BM25 scores relevance, not recency."
        )
    else:
        findings.append("**No stale hit.** BM25 over the transcript never returned only a "
                        "superseded value.")

    pb_conf = n("profile_bm25", "literal", outcome="conflict")
    pb_leak = sum(n("profile_bm25", f, outcome="leaked") for f in FORMS)
    red_conf = sum(n("profile_bm25_redacted", f, outcome="conflict") for f in FORMS)
    red_leak = sum(n("profile_bm25_redacted", f, outcome="leaked") for f in FORMS)
    un_cur = sum(n("profile_bm25_unextracted", f, outcome="current") for f in FORMS)
    un_leak = sum(n("profile_bm25_unextracted", f, outcome="leaked") for f in FORMS)
    pr_cur = sum(n("profile", f, outcome="current") for f in FORMS)
    pr_bad = sum(n("profile", f, outcome=o) for f in FORMS for o in ("conflict", "leaked"))
    findings.append(
        f"**The common hybrid brought the conflicts back.** The profile alone returned the "
        f"current value on {pr_cur} of {2 * live} live probes with {pr_bad} conflicts or "
        f"leaks. Adding BM25 over the full transcript gave {pb_conf} conflicts on literal "
        f"probes and {pb_leak} leaks over both forms; redacting deleted facts left {red_conf} "
        f"conflicts and {red_leak} leaks. Indexing only what the profile did not extract "
        f"scored {un_cur} of {2 * live} with {un_leak} leaks, at "
        f"{fmt(counts.mean_tokens('profile_bm25_unextracted', 'literal'))} / "
        f"{fmt(counts.mean_tokens('profile_bm25_unextracted', 'paraphrase'))} tokens."
    )
    if "memory_tool_profile" in inputs.labels:
        pairs = list(zip(counts.select("profile"), counts.select("memory_tool_profile")))
        same = sum(a.outcome == b.outcome for a, b in pairs)
        findings.append(
            f"**The profile on real files.** Kept as memory-tool files and injected as what "
            f"`view` returns, the profile gave the same outcome on {same} of {len(pairs)} "
            f"probes, at {fmt(counts.mean_tokens('memory_tool_profile'))} tokens per probe "
            f"against {fmt(pr_tokens)} for the plain profile lines."
        )
    return findings


def _recall(inputs: ReportInputs, counts: OutcomeCounts) -> str:
    """recall@k of the gold evidence per retrieval policy and form, beside current-only."""
    out = ["| Policy | Form | recall@k | Current only |", "|---|---|---:|---:|"]
    for policy in inputs.labels:
        for form in FORMS:
            rows = [r for r in counts.select(policy, form) if r.gold_retrieved is not None]
            if not rows:
                continue
            hits = sum(r.gold_retrieved for r in rows)
            current = counts.n(policy, form, outcome="current")
            out.append(f"| `{policy}` | {form} | {hits} of {len(rows)} "
                       f"({hits / len(rows):.2f}) | {current} of {len(rows)} |")
    return "\n".join(out)


def _audit(inputs: ReportInputs, counts: OutcomeCounts) -> str:
    if not inputs.audit:
        return "No fact was deleted in this scenario, so there was nothing to audit."
    days = sorted({r.day for r in inputs.audit})
    last = days[-1]
    intro = (f"At the end of days {', '.join(map(str, days))} (each deletion day and the last "
             "day) every store each policy keeps was searched for the deleted values in each "
             "form the policy keeps it: the store's text (the probes' whole-token matching); "
             "each search index's terms (those that exist only because of the deleted facts' "
             "exchanges) and its token sequences (a value's tokens in order, within one "
             "document); the vectors of a dense index (one per document, so a document whose "
             "text held the value); and the extraction record log, for policies that keep it "
             "(an append-only fact log is that log).")
    out = [intro, "", f"| Policy | Stores holding deleted data at day {last} | "
           + " | ".join(f"Held pairs, day {d}" for d in days) + " | Injected leaks |",
           "|---|---|" + "---:|" * len(days) + "---:|"]
    silent = []
    for policy in inputs.labels:
        rows = [r for r in inputs.audit if r.policy == policy and r.holds]
        at_last: dict[str, list[str]] = {}
        for r in rows:
            if r.day == last:
                place = RECORDS if r.part == RECORDS else f"{r.store} {r.part}"
                at_last.setdefault(place, []).append(r.fact_key)
        where = "; ".join(f"{place}: {', '.join(keys)}" for place, keys in at_last.items())
        per_day = " | ".join(str(sum(r.day == d for r in rows)) for d in days)
        leaks = counts.n(policy, outcome="leaked")
        out.append(f"| `{policy}` | {where or 'none'} | {per_day} | {leaks} |")
        if rows and not leaks:
            silent.append(f"`{policy}`")
    if silent:
        out += ["", (f"Never injected a deleted value, yet still held one at rest: "
                    f"{', '.join(silent)}.")]
    return "\n".join(out)


def render_report(inputs: ReportInputs) -> str:
    counts = OutcomeCounts(inputs.result)
    m = inputs.manifest
    last = max(m["probe_days"])
    article_table, differing = _article_table(inputs)
    live = counts.n("profile", "literal", deleted=False)
    deleted = counts.n("profile", "literal", deleted=True)
    parts = [
        "# membench report: what each memory policy puts in front of the model",
        ("Generated by `membench report` from `data/outcomes.parquet` and `data/stored.parquet`. "
        "No model was called."),
        _header(inputs),
        "## Raw table",
        (f"scenario: {m['sessions']} sessions, {m['exchanges']} exchanges, {m['facts']} facts; "
        f"probes at the end of days {', '.join(map(str, m['probe_days']))}: {live} live and "
        f"{deleted} deletion probes per policy and form.  \n"
        f"transcript at day {last}: {transcript_tokens(inputs.result, last)} tokens"),
        "```\n" + raw_table(inputs.result, dict(inputs.labels), last) + "\n```",
        "## Comparison table (both probe forms)",
        ("Where two token figures appear, the first is the literal probes and the second the "
        "paraphrases."),
        _combined_table(inputs),
        "## Beside the article's published numbers",
        ("Each cell: our number, then the article's and the difference in parentheses; `(=)` "
        "means identical."),
        article_table,
        _deltas_note(differing),
        f"## The day-{last} BM25 top-k trace",
        trace(counts, inputs.exchanges, "bm25_transcript", inputs.trace_fact, last),
        "## Retrieval recall@k of the gold evidence",
        ("For each live probe of a retrieval policy: did the exchange that stated the current "
         "value make it into the retrieved top-k? Policies that index only what the profile "
         "did not extract never retrieve it by design; the profile holds it."),
        _recall(inputs, counts),
        *retrieval_section(counts, inputs.exchanges, inputs.trace_fact, last),
        "## Deleted data at rest (delete-everywhere audit)",
        _audit(inputs, counts),
        "## Findings",
        "\n\n".join(f"{i}. {text}" for i, text in enumerate(_findings(inputs, counts), 1)),
    ]
    if inputs.multiseed:
        covered = next(iter(inputs.multiseed.values()))
        parts += seeds_section(inputs.result, [p for p in inputs.labels if p in covered],
                               m["seed"], inputs.multiseed)
        left_out = [f"`{p}`" for p in inputs.labels if p not in covered]
        if left_out:
            parts.append(f"Not rerun per seed (each seed would need its own embeddings): "
                         f"{', '.join(left_out)}.")
    if inputs.images:
        parts += ["## Charts", "\n\n".join(f"![{caption}]({path})"
                                             for caption, path in inputs.images)]
    return "\n\n".join(parts) + "\n"


def _deltas_note(differing: list[str]) -> str:
    reason = ("Token figures differ from the article's because the filler replies quote a "
              "different corpus (see the header) and the fact statements are our own wording; "
              "the article did not publish its scenario text.")
    if not differing:
        return f"Every outcome count matches the article's. {reason}"
    return (f"Outcome counts differ in: {', '.join(differing)}. These rows depend on which "
            f"words the scenario text shares with each question and on the filler code drawn "
            f"by the seed, not on the fact timeline alone. {reason}")
