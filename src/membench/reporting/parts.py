"""Pieces the report sections share: number format, retrieval traces."""

from __future__ import annotations

from collections.abc import Sequence

from membench.scenario.model import Exchange
from membench.scoring.results import ResultsTable


def fmt(number: float) -> str:
    return f"{number:,.0f}"


def trace(table: ResultsTable, exchanges: Sequence[Exchange], policy: str, fact_key: str,
          day: int) -> str:
    """The top-k a policy retrieved for the literal probe on one fact, first lines only."""
    rows = table.select(policy, "literal", day=day, fact_key=fact_key)
    if not rows:
        return f"(No literal probe on `{fact_key}` at day {day} for `{policy}`.)"
    row = rows[0]
    lines = [f'{policy}, day {day}, "{row.question}" -> {row.outcome}']
    for source in row.retrieved or ():
        lines.append("  " + exchanges[source].line().split("\n")[0])
    if not row.retrieved:
        lines.append("  (nothing scored above zero)")
    return "```\n" + "\n".join(lines) + "\n```"
