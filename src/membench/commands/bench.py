"""`membench bench`: the whole bench in memory, printing the raw table with every outcome
column the run has, so each row's counts add up to its probes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Annotated

import typer

from membench.commands.common import (
    PARAMS_FILE,
    ParamsFile,
    VocabularyFile,
    fails_cleanly,
    progress,
)
from membench.commands.inmemory import run_in_memory
from membench.commands.parameters import read_params
from membench.scoring.bench import OutcomeRow
from membench.scoring.evidence import EvidenceOutcome
from membench.scoring.results import FORMS, ResultsTable
from membench.scoring.rules import Outcome

# Column groups in their known order, printed between `|`; the article's six always show,
# a format-2 outcome only when the run has it, any outcome not known here last, sorted.
ALWAYS = tuple(o.value for o in Outcome)
GROUPS = (
    (Outcome.CURRENT.value, Outcome.CONFLICT.value, Outcome.STALE.value,
     EvidenceOutcome.PARTIAL.value, Outcome.MISSING.value),
    (Outcome.LEAKED.value, Outcome.CLEAN.value),
    (EvidenceOutcome.PREMISE.value, EvidenceOutcome.NO_PREMISE.value),
)
WIDTHS = {Outcome.CURRENT.value: 7}  # the rest: the name plus one space


def outcome_groups(present: set[str]) -> list[tuple[str, ...]]:
    """The column groups to print for a run whose rows have the outcomes `present`."""
    known = {o for group in GROUPS for o in group}
    groups = [tuple(o for o in group if o in ALWAYS or o in present) for group in GROUPS]
    groups.append(tuple(sorted(present - known)))
    return [group for group in groups if group]


def bench_table(rows: Sequence[OutcomeRow], table: ResultsTable,
                labels: Mapping[str, str], last_day: int) -> str:
    """One line per policy and probe form the run asked: every outcome's count (abstention
    probes included), the mean injected tokens, and the tokens stored at `last_day` on each
    policy's first line. For the article's outcomes alone it is the report's raw table."""
    by_row: dict[tuple[str, str], list[OutcomeRow]] = {}
    for row in rows:
        by_row.setdefault((row.policy, row.form), []).append(row)
    forms = list(dict.fromkeys([*FORMS, *(r.form for r in rows)]))
    asked = [f for f in forms if any(form == f for _, form in by_row)]
    groups = outcome_groups({r.outcome for r in rows})
    width = max([44, *(len(label) + 2 for label in labels.values())])

    def cells(values: Mapping[str, object]) -> str:
        return " |".join("".join(f"{values[o]:>{WIDTHS.get(o, len(o) + 1)}}" for o in group)
                         for group in groups)

    lines = [f"{'policy':<{width}}{'probe':<13}{cells({o: o for g in groups for o in g})} |"
             f"{'mean injected':>14}{f'stored@{last_day}':>11}"]
    for policy, label in labels.items():
        for i, form in enumerate(asked):
            these = by_row.get((policy, form), [])
            counts = Counter(r.outcome for r in these)
            mean = sum(r.injected_tokens for r in these) / len(these) if these else 0.0
            kept = f"{table.stored_tokens(policy, last_day):>11}" if i == 0 else ""
            lines.append(f"{label:<{width}}{form:<13}{cells(counts)} |"
                         f"{round(mean):>14}{kept}".rstrip())
    return "\n".join(lines)


@fails_cleanly
def bench(params: ParamsFile = PARAMS_FILE, vocabulary: VocabularyFile = None,
          quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
          dense: Annotated[bool, typer.Option(
              "--dense", help="Also run the policies that need embeddings (loads the model, "
                              "about 20 s more).")] = False,
          systems: Annotated[bool, typer.Option(
              "--systems", help="Also drive the memory systems params' systems.names names "
                                "(docs/systems.md), in both forget modes; embeds their "
                                "texts with the model.")] = False) -> None:
    """Run every stage in memory (no DVC, no files written) and print the raw table."""
    p = read_params(params)
    run = run_in_memory(p, vocabulary=vocabulary, progress=None if quiet else progress,
                        dense=dense, keep_contexts=False)  # the table reads no context
    s, last = run.scenario, max(run.scenario.probe_days)
    changed = sum(len(f.versions) > 1 for f in s.facts)
    deleted = sum(f.deletion is not None for f in s.facts)
    typer.echo(f"scenario: {s.sessions} sessions, {len(s.exchanges)} exchanges, "
               f"{len(s.facts)} facts, {changed} updated, {deleted} deleted on request")
    table = ResultsTable(run.result)
    typer.echo(f"transcript at day {last}: {table.transcript_tokens(last)} tokens\n")
    typer.echo(bench_table(run.result.outcomes, table,
                           {pol.id: pol.label for pol in run.policies}, last))
    if systems:
        _systems(p, run.scenario, vocabulary, quiet, last)


def _systems(p, scenario, vocabulary, quiet: bool, last: int) -> None:
    """The systems' table: one row per system, forget mode and probe form."""
    from membench.commands.systems_run import run_named_systems
    from membench.io.vocabulary import load_token_counter
    from membench.retrieval.embedding_cache import EmbeddingCache
    from membench.scoring.bench import BenchResult

    done = run_named_systems(p, scenario, load_token_counter(vocabulary).count_lines,
                             EmbeddingCache(), (lambda _: None) if quiet else progress)
    rows = [replace(r, policy=f"{run.system} ({run.mode})")
            for run in done.runs for r in run.result.outcomes]
    labels = {f"{run.system} ({run.mode})": f"{run.system} ({run.mode})" for run in done.runs}
    typer.echo("\nmemory systems, through their own write path:")
    if rows:
        typer.echo(bench_table(rows, ResultsTable(BenchResult(tuple(rows), ())), labels, last))
    for entry in done.entries:
        if not entry["ran"]:
            typer.echo(f"{entry['system']}: not run ({entry['reason']}); install: "
                       f"{entry['install']}")
