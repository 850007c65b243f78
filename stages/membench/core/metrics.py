"""The two metrics files, as plain dicts.

`summary` is the DVC metric: six numbers per policy (the article's comparison-table
columns, both probe forms together), so `dvc exp show` stays at a few dozen legible
columns such as `profile_bm25.conflict`. `detailed` keeps every outcome count per form
for readers and the re-measurement diff, but is not declared as a DVC metric."""

from __future__ import annotations

from collections.abc import Sequence

from membench.core.bench import BenchResult
from membench.core.summary import stored_tokens, summarize

SUMMARY_FIELDS = ("current_only", "conflict", "stale_or_missing", "leaked",
                  "tokens_literal", "tokens_paraphrase")


def detailed(result: BenchResult, policy_ids: Sequence[str], last_day: int) -> dict:
    """Per policy and form: outcome counts and mean injected tokens; stored tokens per policy."""
    data: dict[str, dict] = {}
    for s in summarize(result, policy_ids):
        entry = data.setdefault(s.policy, {"stored_tokens": stored_tokens(result, s.policy,
                                                                          last_day)})
        entry[s.form] = {**s.counts, "mean_injected_tokens": round(s.mean_injected_tokens, 1)}
    return data


def summary(result: BenchResult, policy_ids: Sequence[str]) -> dict:
    """Per policy: both forms' counts added, and the mean injected tokens of each form."""
    data: dict[str, dict] = {}
    for s in summarize(result, policy_ids):
        entry = data.setdefault(s.policy, dict.fromkeys(SUMMARY_FIELDS[:4], 0))
        c = s.counts
        entry["current_only"] += c["current"]
        entry["conflict"] += c["conflict"]
        entry["stale_or_missing"] += c["stale"] + c["missing"]
        entry["leaked"] += c["leaked"]
        entry[f"tokens_{s.form}"] = round(s.mean_injected_tokens, 1)
    return data
