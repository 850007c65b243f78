"""The three charts' rows (JSON-ready dicts); membench.reporting.charts draws them."""

from __future__ import annotations

from collections.abc import Sequence

from membench.scoring.results import OUTCOMES, ResultsTable


def cost_quality(table: ResultsTable, policy_ids: Sequence[str]) -> list[dict]:
    """One point per policy and form: mean injected tokens against current-only probes,
    and `live`, the most it could score (probes of facts not deleted): the axis's ceiling."""
    return [{"policy": s.policy, "form": s.form, "point": f"{s.policy} ({s.form})",
             "mean_injected_tokens": round(s.mean_injected_tokens, 1),
             "current": s.counts["current"], "live": table.n(s.policy, s.form, deleted=False)}
            for s in table.summaries(policy_ids)]


def outcome_bars(table: ResultsTable, policy_ids: Sequence[str]) -> list[dict]:
    """One row per policy, form and outcome: the probe count, zeros included."""
    return [{"bar": f"{s.policy} ({s.form})", "policy": s.policy, "form": s.form,
             "outcome": outcome, "probes": s.counts[outcome]}
            for s in table.summaries(policy_ids) for outcome in OUTCOMES]


def by_day(table: ResultsTable, policy_ids: Sequence[str]) -> list[dict]:
    """Per policy, checkpoint day and outcome: probes of both forms together."""
    return [{"policy": p, "day": d, "outcome": o, "probes": n}
            for (p, d, o), n in table.by_day(policy_ids).items()]
