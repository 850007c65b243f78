"""Plot data: the rows behind the three charts, as JSON-ready dicts. DVC renders them with
the Vega-Lite templates under .dvc/plots/; core/svg.py draws the same rows for the report."""

from __future__ import annotations

from collections.abc import Sequence

from membench.core.bench import BenchResult
from membench.core.scoring import Outcome
from membench.core.summary import summarize

OUTCOMES = tuple(o.value for o in Outcome)


def cost_quality(result: BenchResult, policy_ids: Sequence[str]) -> list[dict]:
    """One point per policy and form: mean injected tokens against current-only probes."""
    return [{"policy": s.policy, "form": s.form, "point": f"{s.policy} ({s.form})",
             "mean_injected_tokens": round(s.mean_injected_tokens, 1),
             "current": s.counts["current"]}
            for s in summarize(result, policy_ids)]


def outcome_bars(result: BenchResult, policy_ids: Sequence[str]) -> list[dict]:
    """One row per policy, form and outcome: the probe count, zeros included."""
    return [{"bar": f"{s.policy} ({s.form})", "policy": s.policy, "form": s.form,
             "outcome": outcome, "probes": s.counts[outcome]}
            for s in summarize(result, policy_ids) for outcome in OUTCOMES]


def by_day(result: BenchResult, policy_ids: Sequence[str]) -> list[dict]:
    """Per policy, checkpoint day and outcome: probes of both forms together."""
    days = sorted({r.day for r in result.outcomes})
    counts = {(p, d, o): 0 for p in policy_ids for d in days for o in OUTCOMES}
    for r in result.outcomes:
        if r.policy in policy_ids:
            counts[(r.policy, r.day, r.outcome)] += 1
    return [{"policy": p, "day": d, "outcome": o, "probes": n}
            for (p, d, o), n in counts.items()]
