"""What the report says about any story: whether it is the article's (the only one its
published table and named traces fit), how many probes of each kind it asked, and a trace
of every stale hit the run actually found."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from membench.scenario.model import Exchange, Fact
from membench.scenario.text import has
from membench.scoring.bench import OutcomeRow
from membench.scoring.evidence import fact_state, spellings
from membench.scoring.results import ResultsTable

TRACE_LINES = 5  # lines shown per stale hit


def is_article_story(facts: Sequence[Fact], article: Mapping, format2: bool) -> bool:
    """The article's table describes one story: a format-1 run over exactly the fact keys
    data/article.toml lists (`story_facts`); any other story gets no comparison with it."""
    keys = article.get("story_facts")
    return not format2 and keys is not None and sorted(keys) == sorted(f.key for f in facts)


def probe_counts(table: ResultsTable) -> str:
    """The probes each policy answered, by kind (every policy answers the same probes)."""
    if not table.policies:
        return "none"
    first = table.policies[0]
    rows = table.select(first)
    abstentions = [r for r in table.abstentions if r.policy == first]
    forms = Counter(r.form for r in (*rows, *abstentions))
    live = [r for r in rows if not r.deleted]
    text = (f"{len(rows) + len(abstentions)} per policy ("
            + ", ".join(f"{n} {form}" for form, n in forms.items()) + "): "
            f"{len(live)} on live facts ({sum(r.changed for r in live)} of them changed), "
            f"{len(rows) - len(live)} on deleted facts")
    if abstentions:
        text += f", {len(abstentions)} abstention (expecting nothing)"
    return text


def _stale_lines(row: OutcomeRow, fact: Fact | None,
                 exchanges: Sequence[Exchange]) -> list[str]:
    if row.retrieved is not None:
        return [exchanges[i].line().split("\n")[0] for i in row.retrieved]
    if fact is None:  # the caller passed no facts
        return []
    if fact.deletions or any(v.turns for v in fact.versions):  # format 2
        old = [s for v in fact_state(fact, row.day).superseded for s in spellings(v)]
    else:
        old = [v.value for v in fact.versions if v.day <= row.day][:-1]
    held = [line for line in row.context.split("\n") if any(has(line, s) for s in old)]
    return held or ["(the superseded evidence is in the context; no line names its value)"]


# The outcomes whose injected contexts the report shows (stale_traces); the report stage
# reads no other row's context.
TRACED_OUTCOMES = frozenset({"stale"})


def stale_traces(table: ResultsTable, facts: Sequence[Fact],
                 exchanges: Sequence[Exchange]) -> str:
    """Every stale outcome of the run, with what was injected (a retrieval policy's top-k,
    otherwise the injected lines holding a superseded value)."""
    stale = [r for r in table.rows if r.outcome in TRACED_OUTCOMES]
    if not stale:
        return "No policy injected only a superseded value on any probe of this run."
    by_key = {f.key: f for f in facts}
    out = [f"{len(stale)} stale {'outcome' if len(stale) == 1 else 'outcomes'} over every "
           f"policy and probe; each with the lines the policy injected that matter (a "
           f"retrieval policy's top-k, first line of each; otherwise the lines holding a "
           f"superseded value, at most {TRACE_LINES})."]
    block = []
    for row in stale:
        block.append(f'{row.policy}, day {row.day}, {row.form}, `{row.fact_key}`: '
                     f'"{row.question}" -> stale')
        lines = _stale_lines(row, by_key.get(row.fact_key), exchanges)
        block += ["  " + line for line in lines[:TRACE_LINES]]
        if len(lines) > TRACE_LINES:
            block.append(f"  ... and {len(lines) - TRACE_LINES} more")
    return out[0] + "\n\n```\n" + "\n".join(block) + "\n```"
