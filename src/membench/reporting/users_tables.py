"""The report's multi-user section: cross-user leaks per policy and mode, and how conflicts
and stale hits grow with the number of changes per fact. Absent for a single-user story."""

from __future__ import annotations

from collections.abc import Sequence

from membench.scoring.users import MODES, NAMESPACED, SHARED, UserOutcomeSummary


def _leak_table(counts: dict, policies: Sequence[str]) -> str:
    out = ["| Policy | Stores | Probes | Current | Conflict | Stale | Missing | Leaked | "
           "Cross-user leak |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for policy in policies:
        for mode in MODES:
            c = counts["modes"].get(mode, {}).get(policy)
            if c is None:
                continue
            out.append(f"| `{policy}` | {mode} | {c['probes']} | {c['current']} | "
                       f"{c['conflict']} | {c['stale']} | {c['missing']} | {c['leaked']} | "
                       f"**{c['cross_user_leak']}** |")
    return "\n".join(out)


def _growth_table(counts: dict, policies: Sequence[str], mode: str) -> str:
    per_policy = counts["by_changes"].get(mode, {})
    changes = sorted({int(c) for growth in per_policy.values() for c in growth})
    out = ["| Policy | " + " | ".join(f"{c} change{'s' * (c != 1)}" for c in changes) + " |",
           "|---|" + "---:|" * len(changes)]
    for policy in policies:
        growth = per_policy.get(policy)
        if growth is None:
            continue
        cells = []
        for c in changes:
            g = growth.get(str(c))
            cells.append(f"{g['conflict']} / {g['stale']} of {g['probes']}" if g else "")
        out.append(f"| `{policy}` | " + " | ".join(cells) + " |")
    return "\n".join(out)


def _leak_sentence(counts: dict, policies: Sequence[str]) -> str:
    parts = []
    for mode in MODES:
        per = counts["modes"].get(mode, {})
        leaking = [p for p in policies if per.get(p, {}).get("cross_user_leak", 0)]
        total = sum(per.get(p, {}).get("cross_user_leak", 0) for p in policies)
        probes = sum(per.get(p, {}).get("probes", 0) for p in policies)
        parts.append(f"with {mode} stores, {len(leaking)} of {len(per)} policies injected "
                     f"another user's value for the probed key, in {total} of {probes} probes")
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."


def users_section(summary: UserOutcomeSummary | None, policy_order: Sequence[str]
                  ) -> list[str]:
    if summary is None:
        return []
    counts = summary.counts
    policies = [p for p in policy_order if p in summary.policies]
    users = summary.users
    return [
        "## Many users in one deployment",
        (f"{users} users with the same fact keys and their own values. Each policy below "
         "(the dense ones with `users.dense`) ran twice: with **namespaced** stores (each "
         "user's own stores and indexes) and with **shared** stores (one store and index "
         "for everyone, the "
         "user's name only in the text, facts keyed without the user). Every probe is asked "
         "by one user and classified against that user's facts; a **cross-user leak** is an "
         "injection holding another user's value for the probed key. Rows: "
         "`data/users_outcomes/` (a Parquet dataset, one file per seed and user)."),
        _leak_sentence(counts, policies),
        _leak_table(counts, policies),
        "### Conflicts and stale hits by changes per fact",
        ("Live probes only, grouped by how many times the probed fact had changed by the "
         "probe day; each cell: conflicts / stale hits of probes."),
        f"{NAMESPACED.capitalize()} stores:",
        _growth_table(counts, policies, NAMESPACED),
        f"{SHARED.capitalize()} stores:",
        _growth_table(counts, policies, SHARED),
    ]
