"""Renders the Markdown report from measured data only: every number in it is computed
here from the bench result or quoted, labelled, from the article's published table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from membench.reporting.answers_tables import answers_section
from membench.reporting.backends_tables import backends_section
from membench.reporting.extraction_tables import extraction_section
from membench.reporting.findings import finding_paragraphs
from membench.reporting.given_sections import GLOSSARY as FORMAT2_GLOSSARY
from membench.reporting.given_sections import given_sections
from membench.reporting.parts import fmt, trace
from membench.reporting.recency_tables import recency_effects, recency_section
from membench.reporting.retrieval_tables import retrieval_section
from membench.reporting.seeds_tables import seeds_section
from membench.reporting.story import probe_counts, stale_traces
from membench.reporting.users_tables import users_section
from membench.reporting.systems_tables import systems_section
from membench.scenario.model import Exchange, Fact
from membench.scoring.audit import RECORDS, AuditRow
from membench.scoring.bench import BenchResult
from membench.scoring.results import FORMS, Counts, ResultsTable
from membench.scoring.summary import combined_rows, raw_table
from membench.scoring.users import UserOutcomeSummary

ARTICLE_COLUMNS = ("current", "conflict", "stale", "missing", "leaked", "clean")

# The words the tables use, defined once; the report opens with them.
GLOSSARY = (
    ("current", "the injected text holds the fact's newest value and no superseded one"),
    ("conflict", "it holds the newest value and a superseded one together (each line carries "
                 "its day, so a model could still pick the newest)"),
    ("stale", "it holds only a superseded value"),
    ("missing", "it holds no value of the fact"),
    ("leaked", "for a fact the user asked to forget: a deleted value was injected"),
    ("clean", "for a fact the user asked to forget: no deleted value was injected"),
    ("literal", "a probe that shares words with the fact's statement"),
    ("paraphrase", "a probe that asks the same with few or none of those words"),
    ("stored", "tokens of every store a policy keeps at a day (e.g. profile plus transcript "
               "index), injected or not"),
    ("recall@k", "for a retrieval policy's live probe: the exchange that stated the current "
                 "value is among the top k it retrieved"),
)


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
    user_outcomes: UserOutcomeSummary | None = None  # multi-user runs only (stage users)
    # False for any story but the article's: no published table, no named traces
    article_story: bool = True
    facts: Sequence[Fact] = ()  # the scenario's facts (stale-hit traces)
    extractor: str = ""
    extraction: Mapping | None = None  # the extraction stage's file
    backends: Mapping | None = None  # the backends stage's summary (reports/backends.json)
    systems: Mapping | None = None  # the systems stage's summary (reports/systems.json)
    answers: Mapping | None = None  # the reader stage's summary (reports/answers.json)


def _header(inputs: ReportInputs, table: ResultsTable) -> str:
    header = [*inputs.header, ("Probes", probe_counts(table))]
    width = max(len(label) for label, _ in header)
    lines = [f"{label + ':':<{width + 1}} {value}" for label, value in header]
    return "```\n" + "\n".join(lines) + "\n```"


def _glossary(format2: bool = False) -> str:
    terms = GLOSSARY + (FORMAT2_GLOSSARY if format2 else ())
    return "\n".join(f"- **{term}**: {meaning}." for term, meaning in terms)


def _combined_table(inputs: ReportInputs, table: ResultsTable) -> str:
    out = [("| Policy | Current only | Conflict | Stale or missing | Deleted data leaked | "
           "Mean tokens injected |"), "|---|---:|---:|---:|---:|---:|"]
    for row in combined_rows(table, list(inputs.labels)):
        tokens = " / ".join(fmt(t) for t in row.mean_tokens)
        out.append(f"| `{row.policy}` | {row.current_only} | {row.conflict} | "
                   f"{row.stale_or_missing} | {row.leaked} of {row.deletion_probes} | {tokens} |")
    return "\n".join(out)


def _delta(ours: float, theirs: float) -> str:
    delta = round(ours) - round(theirs)
    return f"{fmt(ours)} ({theirs:,.0f}, {'+' if delta > 0 else ''}{delta:,})" if delta else \
        f"{fmt(ours)} (=)"


def _article_table(inputs: ReportInputs, table: ResultsTable) -> tuple[str, list[str]]:
    """Our numbers beside the article's, and the ids of rows whose counts differ."""
    published = inputs.article.get("policies", {})
    out = [("| Policy | Form | Current | Conflict | Stale | Missing | Leaked | Clean | "
           "Mean injected | Stored at last day |"), "|---|---|---|---|---|---|---|---|---|---|"]
    differing = []
    summaries = table.summaries(list(inputs.labels))
    last = max(inputs.manifest["probe_days"])
    for s in summaries:
        theirs = published.get(s.policy)
        if theirs is None:  # a policy the article did not measure: our numbers alone
            cells = [str(s.counts[c]) for c in ARTICLE_COLUMNS]
            cells.append(fmt(s.mean_injected_tokens))
            stored = fmt(table.stored_tokens(s.policy, last)) \
                if s.form == "literal" else ""
            out.append(f"| `{s.policy}` (not in the article) | {s.form} | "
                       + " | ".join(cells) + f" | {stored} |")
            continue
        values = theirs[s.form]
        cells = [_delta(s.counts[c], values[i]) for i, c in enumerate(ARTICLE_COLUMNS)]
        if any(s.counts[c] != values[i] for i, c in enumerate(ARTICLE_COLUMNS)):
            differing.append(f"`{s.policy}` {s.form}")
        cells.append(_delta(s.mean_injected_tokens, values[6]))
        stored = _delta(table.stored_tokens(s.policy, last), theirs["stored"]) \
            if s.form == "literal" else ""
        out.append(f"| `{s.policy}` | {s.form} | " + " | ".join(cells) + f" | {stored} |")
    return "\n".join(out), differing


def _recall(inputs: ReportInputs, table: ResultsTable) -> str:
    """recall@k of the gold evidence per retrieval policy and form, beside current-only."""
    out = ["| Policy | Form | recall@k | Current only |", "|---|---|---:|---:|"]
    for policy in inputs.labels:
        for form in FORMS:
            recall = table.recall(policy, form)
            if recall is None:
                continue
            current = table.n(policy, form, outcome="current")
            out.append(f"| `{policy}` | {form} | {recall.hits} of {recall.probes} "
                       f"({recall.hits / recall.probes:.2f}) | {current} of {recall.probes} |")
    return "\n".join(out)


def _audit(inputs: ReportInputs, table: ResultsTable) -> str:
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
        leaks = table.n(policy, outcome="leaked")
        out.append(f"| `{policy}` | {where or 'none'} | {per_day} | {leaks} |")
        if rows and not leaks:
            silent.append(f"`{policy}`")
    if silent:
        out += ["", (f"Never injected a deleted value, yet still held one at rest: "
                    f"{', '.join(silent)}.")]
    return "\n".join(out)


def render_report(inputs: ReportInputs) -> str:
    table = ResultsTable(inputs.result)
    m = inputs.manifest
    last = max(m["probe_days"])
    format2 = m.get("format") == 2
    parts = [
        "# membench report: what each memory policy puts in front of the model",
        ("Generated by `membench report` from `data/outcomes.parquet` and `data/stored.parquet`. "
        "No model was called."),
        _header(inputs, table),
        "## Glossary",
        _glossary(format2),
        "## Findings",
        "\n\n".join(f"{i}. {text}" for i, text in
                    enumerate(finding_paragraphs(table, inputs.labels), 1)),
    ]
    if format2:
        parts += given_sections(table, list(inputs.labels), m, inputs.extractor)
    else:
        parts += _article_shaped_tables(inputs, table)
    if inputs.article_story:
        parts += _beside_article(inputs, table)
    parts += [
        "## Stale hits",
        stale_traces(table, inputs.facts, inputs.exchanges),
        "## Retrieval recall@k of the gold evidence",
        ("For each live probe of a retrieval policy: did the exchange that stated the current "
         "value make it into the retrieved top-k? Policies that index only what the profile "
         "did not extract never retrieve it by design; the profile holds it."),
        _recall(inputs, table),
        *retrieval_section(table, inputs.labels, inputs.exchanges,
                           inputs.trace_fact if inputs.article_story else None, last),
        "## Deleted data at rest (delete-everywhere audit)",
        _audit(inputs, table),
        *users_section(inputs.user_outcomes, list(inputs.labels)),
    ]
    return _closing(inputs, table, parts)


def _article_shaped_tables(inputs: ReportInputs, table: ResultsTable) -> list[str]:
    """The raw and comparison tables, in the article's shape (format 1)."""
    m = inputs.manifest
    last = max(m["probe_days"])
    first = next(iter(inputs.labels))
    live = table.n(first, "literal", deleted=False)
    deleted = table.n(first, "literal", deleted=True)
    return [
        "## Raw table",
        (f"scenario: {m['sessions']} sessions, {m['exchanges']} exchanges, {m['facts']} facts; "
        f"probes at the end of days {', '.join(map(str, m['probe_days']))}: {live} live and "
        f"{deleted} deletion probes per policy and form.  \n"
        f"transcript at day {last}: {table.transcript_tokens(last)} tokens"),
        "```\n" + raw_table(table, dict(inputs.labels), last) + "\n```",
        "## Comparison table (both probe forms)",
        ("Where two token figures appear, the first is the literal probes and the second the "
        "paraphrases."),
        _combined_table(inputs, table),
    ]


def _beside_article(inputs: ReportInputs, table: ResultsTable) -> list[str]:
    """The article's published table and its named trace: for the article's story only."""
    last = max(inputs.manifest["probe_days"])
    article_table, differing = _article_table(inputs, table)
    return [
        "## Beside the article's published numbers",
        ("Each cell: our number, then the article's and the difference in parentheses; `(=)` "
        "means identical."),
        article_table,
        _deltas_note(differing),
        f"## The day-{last} BM25 top-k trace",
        trace(table, inputs.exchanges, "bm25_transcript", inputs.trace_fact, last),
    ]


def _closing(inputs: ReportInputs, table: ResultsTable, parts: list[str]) -> str:
    m = inputs.manifest
    if inputs.multiseed and m.get("generated_sessions") == 0:  # format 2, all given
        parts += ["## Across seeds", ("Every session of this scenario is given, so a seed "
                                      "changes nothing: the multi-seed run repeats this "
                                      "report's counts and is not shown.")]
    elif inputs.multiseed:
        covered = next(iter(inputs.multiseed.values()))
        parts += seeds_section(table, [p for p in inputs.labels if p in covered],
                               m["seed"], inputs.multiseed)
        left_out = [f"`{p}`" for p in inputs.labels if p not in covered]
        if left_out:
            parts.append(f"Not rerun per seed (each seed would need its own embeddings): "
                         f"{', '.join(left_out)}.")
    parts += recency_section(recency_effects(inputs.result.outcomes))
    if inputs.extraction:
        live = table.n(next(iter(inputs.labels)), deleted=False)  # every form's live probes
        parts += extraction_section(inputs.extraction, live)
    if inputs.backends:
        parts += backends_section(inputs.backends)
    if inputs.systems:
        parts += systems_section(inputs.systems)
    if inputs.answers:
        parts += answers_section(inputs.answers, inputs.labels)
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
