"""The report's format-2 sections: what membench can say about such a dataset, outcome
tables summed over the benchmark and per scenario, a breakdown by tag, abstention probes,
and both scoring rules side by side where both apply."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from membench.reporting.parts import fmt
from membench.scoring.bench import OutcomeRow
from membench.scoring.evidence import EvidenceOutcome
from membench.scoring.results import ResultsTable

COLUMNS = ("current", "conflict", "stale", EvidenceOutcome.PARTIAL.value, "missing", "leaked",
           "clean")

GLOSSARY = (
    ("partial", "a multi-turn (multi-hop) current version: some but not all of its turns, "
                "and no superseded one, are in the injected text"),
    ("premise", "an abstention probe (the right context holds no answer): a turn its false "
                "premise comes from was injected, so a model may be led to answer"),
    ("no_premise", "an abstention probe: no such turn was injected"),
    ("evidence scoring", "the outcome follows from which turns (or records made from them) "
                         "are in the injected text, not from value words"),
    ("value scoring", "the article's rule: which accepted spellings of the values appear"),
)

LLM_JUDGE = (
    "membench calls no model. On a dataset whose paper scores answers with an LLM judge, it "
    "measures whether the evidence a correct answer needs was in the context each memory "
    "policy injected, and at what token cost: a ceiling on any model's score with that "
    "policy (a model cannot use evidence it was not shown), not the score itself. It "
    "cannot say whether a model would find, combine or trust that evidence, nor reproduce "
    "the paper's judged accuracy.")

GOLD_EXTRACTION = (
    "The extractor is `perfect`: the fact log, the profile and every policy built on them "
    "hold records made from the dataset's gold evidence turns (one record per fact version, "
    "from the turns that state it). Their scores rest on gold extraction; a real extractor "
    "can only do worse.")


def _counts(rows: Sequence[OutcomeRow]) -> Counter:
    return Counter(r.outcome for r in rows)


def _outcome_table(table: ResultsTable, policies: Sequence[str],
                   where: Mapping[str, object]) -> str:
    out = ["| Policy | " + " | ".join(c.capitalize() for c in COLUMNS)
           + " | Probes | Mean tokens |", "|---|" + "---:|" * (len(COLUMNS) + 2)]
    for policy in policies:
        rows = table.select(policy, **where)
        counts = _counts(rows)
        mean = sum(r.injected_tokens for r in rows) / len(rows) if rows else 0
        out.append(f"| `{policy}` | " + " | ".join(str(counts[c]) for c in COLUMNS)
                   + f" | {len(rows)} | {fmt(mean)} |")
    return "\n".join(out)


def _tag_tables(table: ResultsTable, policies: Sequence[str]) -> list[str]:
    names = sorted({name for r in table.rows for name, _ in r.tags})
    parts = []
    for name in names:
        values = sorted({v for r in table.rows for n, v in r.tags if n == name})
        out = [f"Tag `{name}`: each cell is current (conflict, stale, partial) of the probes "
               "with that value.", "",
               "| Policy | " + " | ".join(f"`{v}`" for v in values) + " |",
               "|---|" + "---:|" * len(values)]
        for policy in policies:
            cells = []
            for value in values:
                rows = [r for r in table.select(policy) if (name, value) in r.tags]
                c = _counts(rows)
                cells.append(f"{c['current']} ({c['conflict']}, {c['stale']}, "
                             f"{c['partial']}) of {len(rows)}")
            out.append(f"| `{policy}` | " + " | ".join(cells) + " |")
        parts.append("\n".join(out))
    return parts or ["No probe of this run carries a tag."]


def _abstentions(table: ResultsTable, policies: Sequence[str]) -> str:
    if not table.abstentions:
        return "No abstention probe in this run."
    out = ["| Policy | Premise injected | No premise | Mean tokens |", "|---|---:|---:|---:|"]
    for policy in policies:
        rows = [r for r in table.abstentions if r.policy == policy]
        c = _counts(rows)
        mean = sum(r.injected_tokens for r in rows) / len(rows) if rows else 0
        out.append(f"| `{policy}` | {c['premise']} | {c['no_premise']} | {fmt(mean)} |")
    return "\n".join(out)


def _both_rules(table: ResultsTable, policies: Sequence[str]) -> str:
    rows = [r for r in table.rows if r.value_outcome is not None]
    if not rows:
        return "No probe has an accepted spelling to score by value: evidence scoring only."
    out = [("| Policy | Probes scored both ways | Same outcome | Current by evidence / by "
            "value | Conflict by evidence / by value |"), "|---|---:|---:|---:|---:|"]
    for policy in policies:
        mine = [r for r in rows if r.policy == policy]
        same = sum(r.value_outcome == r.evidence_outcome for r in mine)
        ev, va = Counter(r.evidence_outcome for r in mine), Counter(r.value_outcome for r in mine)
        out.append(f"| `{policy}` | {len(mine)} | {same} | {ev['current']} / {va['current']} "
                   f"| {ev['conflict']} / {va['conflict']} |")
    return "\n".join(out)


def given_sections(table: ResultsTable, policies: Sequence[str], manifest: Mapping,
                   extractor: str) -> list[str]:
    scenarios = manifest.get("scenarios", [])
    parts = ["## What this run can and cannot say", LLM_JUDGE]
    if extractor == "perfect":
        parts.append(GOLD_EXTRACTION)
    parts += [
        "## Outcomes by policy" + (" (every scenario summed)" if len(scenarios) > 1 else ""),
        (f"Scored by {manifest['scoring']} (the scenario's `scoring`), both probe forms and "
         f"every probe day together; abstention probes are counted apart, below. Outcome "
         f"words: {', '.join(COLUMNS)} (see the glossary)."),
        _outcome_table(table, policies, {}),
    ]
    if len(scenarios) > 1:
        parts.append("## Per scenario")
        for s in scenarios:
            title = f" ({s['title']})" if s.get("title") else ""
            parts += [f"### `{s['id']}`{title}", _outcome_table(table, policies,
                                                                {"scenario": s["id"]})]
    parts += ["## By tag", *_tag_tables(table, policies),
              "## Abstention probes", _abstentions(table, policies),
              "## Evidence and value scoring side by side",
              ("Where a probe's fact has an accepted spelling, both rules are computed: "
               "value scoring calls a correction that names the old value (\"X, not Y\") a "
               "conflict and misses an answer not written word for word; evidence scoring "
               "does neither."),
              _both_rules(table, policies)]
    return parts
