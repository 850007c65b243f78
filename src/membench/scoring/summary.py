"""Aggregates outcome rows into the article's two tables."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from membench.scoring.results import OUTCOMES, FormSummary, ResultsTable
from membench.scoring.rules import DELETED_OUTCOMES


def raw_table(table: ResultsTable, labels: dict[str, str], last_day: int) -> str:
    """The article's raw table: one row per policy and probe form the run has (a format-2
    run may have neither of the article's two); stored tokens on each policy's first row."""
    width = max([44, *(len(label) + 2 for label in labels.values())])
    header = (f"{'policy':<{width}}{'probe':<13}{'current':>7}{'conflict':>9}{'stale':>6}"
              f"{'missing':>8} |{'leaked':>7}{'clean':>6} |{'mean injected':>14}"
              f"{f'stored@{last_day}':>11}")
    lines = [header]
    asked = {s.form for s in table.summaries(list(labels)) if s.probes}
    shown = set()
    for s in table.summaries(list(labels)):
        if s.form not in asked:
            continue
        c = s.counts
        stored = "" if s.policy in shown else f"{table.stored_tokens(s.policy, last_day):>11}"
        shown.add(s.policy)
        lines.append(
            f"{labels[s.policy]:<{width}}{s.form:<13}{c['current']:>7}{c['conflict']:>9}"
            f"{c['stale']:>6}{c['missing']:>8} |{c['leaked']:>7}{c['clean']:>6} |"
            f"{round(s.mean_injected_tokens):>14}{stored}".rstrip()
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class CombinedRow:
    policy: str
    current_only: int
    conflict: int
    stale_or_missing: int
    leaked: int
    deletion_probes: int
    mean_tokens: tuple[int, ...]  # one per form, or one when the forms agree


def combined_rows(table: ResultsTable, policy_ids: Sequence[str]) -> list[CombinedRow]:
    """Both probe forms together, as the article's comparison table."""
    by_policy: dict[str, list[FormSummary]] = {}
    for s in table.summaries(policy_ids):
        by_policy.setdefault(s.policy, []).append(s)
    rows = []
    for policy, forms in by_policy.items():
        total = {o: sum(f.counts[o] for f in forms) for o in OUTCOMES}
        means = tuple(round(f.mean_injected_tokens) for f in forms)
        rows.append(CombinedRow(
            policy=policy,
            current_only=total["current"],
            conflict=total["conflict"],
            stale_or_missing=total["stale"] + total["missing"],
            leaked=total["leaked"],
            deletion_probes=sum(total[o.value] for o in DELETED_OUTCOMES),
            mean_tokens=means if len(set(means)) > 1 else means[:1],
        ))
    return rows
