"""The systems stage's summary (reports/systems.json), which the report's "Memory systems"
section renders: per system and forget mode, the outcome counts and tokens per probe, and
per remedy the deleted facts whose values its files still hold, and where; the same for the
generated deployment of several users, with its cross-user leaks."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from membench.scoring.rules import Outcome
from membench.systems.base import FORGET_MODES, NO_REMEDY, MemorySystem
from membench.systems.deployment import DeploymentRun
from membench.systems.run import SystemAtRestRow, SystemRun

OUTCOMES = tuple(o.value for o in Outcome)


def _counts(outcomes: Sequence[str]) -> tuple[dict, dict]:
    counts = Counter(outcomes)
    return ({name: counts.get(name, 0) for name in OUTCOMES},
            {k: v for k, v in sorted(counts.items()) if k not in OUTCOMES})


def _at_rest(system: type[MemorySystem], rows: Sequence[SystemAtRestRow]) -> dict:
    """Per remedy: the deleted facts ("user/key" in a deployment) its files hold, and where."""
    remedies = {remedy: {"facts_held": [], "places": []}
                for remedy in (NO_REMEDY, *system.remedies)}
    for row in rows:
        if row.places:
            entry = remedies[row.remedy]
            entry["facts_held"].append(row.fact_key if row.user == "user"
                                       else f"{row.user}/{row.fact_key}")
            entry["places"] = sorted(set(entry["places"]) | set(row.places))
    return remedies


def ran(system: type[MemorySystem], runs: Sequence[SystemRun],
        deployed: Sequence[DeploymentRun] = ()) -> dict:
    modes = {}
    for run in runs:
        rows = run.result.outcomes
        outcomes, other = _counts([r.outcome for r in rows])
        modes[run.mode] = {
            "probes": len(rows), "outcomes": outcomes, "other_outcomes": other,
            "tokens_per_probe": round(sum(r.injected_tokens for r in rows) / len(rows), 1)
            if rows else 0.0,
            "at_rest": _at_rest(system, run.at_rest),
        }
    users = {}
    for run in deployed:
        outcomes, other = _counts([r.outcome for r in run.rows])
        users[run.mode] = {
            "probes": len(run.rows), "outcomes": outcomes, "other_outcomes": other,
            "cross_user_leaks": sum(r.cross_user_leak for r in run.rows),
            "at_rest": _at_rest(system, run.at_rest),
        }
    entry = {"system": system.id, "label": system.label, "ran": True,
             "modes": {mode: modes[mode] for mode in FORGET_MODES if mode in modes}}
    if users:
        entry["users"] = {mode: users[mode] for mode in FORGET_MODES if mode in users}
    return entry


def not_run(system: type[MemorySystem], reason: str) -> dict:
    return {"system": system.id, "label": system.label, "ran": False, "reason": reason,
            "install": system.install}


def summary(entries: Sequence[dict], deleted_facts: int, users: int = 0,
            users_deleted_facts: int = 0) -> dict:
    """users: the generated deployment's users (0: none run) and their deleted facts."""
    return {"deleted_facts": deleted_facts, "modes": list(FORGET_MODES),
            "deployment": {"users": users, "deleted_facts": users_deleted_facts},
            "systems": list(entries)}
