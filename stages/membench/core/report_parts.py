"""Pieces the report sections share: outcome counting, number format, retrieval traces."""

from __future__ import annotations

from collections.abc import Sequence

from membench.core.bench import BenchResult, OutcomeRow
from membench.core.model import Exchange


class OutcomeCounts:
    def __init__(self, result: BenchResult) -> None:
        self.rows = result.outcomes

    def select(self, policy: str, form: str | None = None, **where) -> list[OutcomeRow]:
        return [r for r in self.rows if r.policy == policy and (form is None or r.form == form)
                and all(getattr(r, k) == v for k, v in where.items())]

    def n(self, policy: str, form: str | None = None, **where) -> int:
        return len(self.select(policy, form, **where))

    def mean_tokens(self, policy: str, form: str | None = None) -> int:
        rows = self.select(policy, form)
        return round(sum(r.injected_tokens for r in rows) / len(rows)) if rows else 0


def fmt(number: float) -> str:
    return f"{number:,.0f}"


def trace(counts: OutcomeCounts, exchanges: Sequence[Exchange], policy: str, fact_key: str,
          day: int) -> str:
    """The top-k a policy retrieved for the literal probe on one fact, first lines only."""
    rows = counts.select(policy, "literal", day=day, fact_key=fact_key)
    if not rows:
        return f"(No literal probe on `{fact_key}` at day {day} for `{policy}`.)"
    row = rows[0]
    lines = [f'{policy}, day {day}, "{row.question}" -> {row.outcome}']
    for source in row.retrieved or ():
        lines.append("  " + exchanges[source].line().split("\n")[0])
    if not row.retrieved:
        lines.append("  (nothing scored above zero)")
    return "```\n" + "\n".join(lines) + "\n```"
