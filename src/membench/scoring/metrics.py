"""The two metrics files, as plain dicts.

`summary` is the DVC metric: six numbers per policy (the article's comparison-table
columns, both probe forms together), so `dvc exp show` stays at a few dozen legible
columns such as `profile_bm25.conflict`. `detailed` keeps every outcome count per form
for readers and the re-measurement diff, but is not declared as a DVC metric."""

from __future__ import annotations

from collections.abc import Sequence

from membench.scoring.results import ResultsTable
from membench.scoring.summary import combined_rows

SUMMARY_FIELDS = ("current_only", "conflict", "stale_or_missing", "leaked",
                  "tokens_literal", "tokens_paraphrase")


def detailed(table: ResultsTable, policy_ids: Sequence[str], last_day: int) -> dict:
    """Per policy and form: outcome counts and mean injected tokens; stored tokens per policy."""
    data: dict[str, dict] = {}
    for s in table.summaries(policy_ids):
        entry = data.setdefault(s.policy, {"stored_tokens": table.stored_tokens(s.policy,
                                                                                last_day)})
        entry[s.form] = {**s.counts, "mean_injected_tokens": round(s.mean_injected_tokens, 1)}
    return data


def summary(table: ResultsTable, policy_ids: Sequence[str]) -> dict:
    """Per policy: the comparison table's counts (both forms added) and the mean injected
    tokens of each form."""
    data = {row.policy: {"current_only": row.current_only, "conflict": row.conflict,
                         "stale_or_missing": row.stale_or_missing, "leaked": row.leaked}
            for row in combined_rows(table, policy_ids)}
    for s in table.summaries(policy_ids):
        data[s.policy][f"tokens_{s.form}"] = round(s.mean_injected_tokens, 1)
    return data
