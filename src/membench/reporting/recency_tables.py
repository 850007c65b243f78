"""What the recency readers changed against the policy each one filters: conflicts turned
into current answers, and current answers lost by a wrong grouping (probe by probe)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from membench.memory.policies import POLICIES
from membench.memory.recency import RecencyReader
from membench.scoring.bench import OutcomeRow

HELD = ("current", "conflict")  # the current value was injected
LOST = ("stale", "missing")


def readers() -> list[RecencyReader]:
    return [entry for name in POLICIES if isinstance(entry := POLICIES[name], RecencyReader)]


def recency_effects(rows: Sequence[OutcomeRow]) -> dict[str, dict]:
    """Per reader present in the run, compared probe by probe with its base policy."""
    by_probe = {(r.policy, r.form, r.day, r.fact_key): r.outcome for r in rows}
    present = {r.policy for r in rows}
    out = {}
    for reader in readers():
        if reader.id not in present or reader.base not in present:
            continue
        pairs = [(outcome, by_probe[(reader.id, form, day, fact)])
                 for (policy, form, day, fact), outcome in by_probe.items()
                 if policy == reader.base]
        out[reader.id] = {
            "base": reader.base,
            "base_conflicts": sum(b == "conflict" for b, _ in pairs),
            "conflicts_to_current": sum(b == "conflict" and r == "current" for b, r in pairs),
            "current_lost": sum(b in HELD and r in LOST for b, r in pairs),
            "leaks_removed": sum(b == "leaked" and r == "clean" for b, r in pairs),
        }
    return out


def recency_section(effects: Mapping[str, dict]) -> list[str]:
    if not effects:
        return []
    out = ["| Reader | Filters | Conflicts in the base | Turned current | Current lost by "
           "wrong grouping | Leaks removed |", "|---|---|---:|---:|---:|---:|"]
    for reader, e in effects.items():
        out.append(f"| `{reader}` | `{e['base']}` | {e['base_conflicts']} | "
                   f"{e['conflicts_to_current']} | {e['current_lost']} | {e['leaks_removed']} |")
    return ["## Recency-aware readers",
            ("Each reader keeps, among the lines its base policy would inject that it judges to "
             "be about the same thing (the same record key, or user words at least "
             "`policies.same_topic_threshold` alike), only the newest. Probe by probe against "
             "the base policy (both forms):"),
            "\n".join(out)]
