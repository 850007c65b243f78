"""Aggregates outcome rows into the article's two tables."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from membench.core.bench import BenchResult
from membench.core.scoring import DELETED_OUTCOMES, Outcome

FORMS = ("literal", "paraphrase")


@dataclass(frozen=True)
class FormSummary:
    policy: str
    form: str
    counts: dict[str, int]  # every Outcome value, zero when absent
    probes: int
    mean_injected_tokens: float


def summarize(result: BenchResult, policy_ids: Sequence[str]) -> list[FormSummary]:
    summaries = []
    for policy in policy_ids:
        for form in FORMS:
            rows = [r for r in result.outcomes if r.policy == policy and r.form == form]
            counts = {o.value: 0 for o in Outcome}
            for row in rows:
                counts[row.outcome] += 1
            mean = sum(r.injected_tokens for r in rows) / len(rows) if rows else 0.0
            summaries.append(FormSummary(policy, form, counts, len(rows), mean))
    return summaries


def stored_tokens(result: BenchResult, policy: str, day: int) -> int:
    return sum(r.tokens for r in result.stored if r.policy == policy and r.day == day)


def transcript_tokens(result: BenchResult, day: int) -> int:
    return next(r.tokens for r in result.stored if r.store == "transcript" and r.day == day)


def raw_table(result: BenchResult, labels: dict[str, str], last_day: int) -> str:
    """The article's raw table: one row per policy and probe form."""
    header = (f"{'policy':<44}{'probe':<13}{'current':>7}{'conflict':>9}{'stale':>6}"
              f"{'missing':>8} |{'leaked':>7}{'clean':>6} |{'mean injected':>14}"
              f"{f'stored@{last_day}':>11}")
    lines = [header]
    for s in summarize(result, list(labels)):
        c = s.counts
        stored = f"{stored_tokens(result, s.policy, last_day):>11}" if s.form == "literal" else ""
        lines.append(
            f"{labels[s.policy]:<44}{s.form:<13}{c['current']:>7}{c['conflict']:>9}"
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


def combined_rows(result: BenchResult, policy_ids: Sequence[str]) -> list[CombinedRow]:
    """Both probe forms together, as the article's comparison table."""
    by_policy: dict[str, list[FormSummary]] = {}
    for s in summarize(result, policy_ids):
        by_policy.setdefault(s.policy, []).append(s)
    rows = []
    for policy, forms in by_policy.items():
        total = {o.value: sum(f.counts[o.value] for f in forms) for o in Outcome}
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
