"""The report's "Memory systems" section, rendered from the systems stage's summary
(reports/systems.json): per system and forget mode, what its own context held at each probe
and what its files still hold of the deleted facts, before and after each remedy."""

from __future__ import annotations

from collections.abc import Mapping

MODE_TEXT = {"forget_turn": "the user's turn only",
             "forget_api": "the turn, then the API deletes what it holds"}
OUTCOME_COLUMNS = ("current", "conflict", "stale", "missing", "leaked", "clean")


def _mode(mode: str) -> str:
    return f"`{mode}` ({MODE_TEXT.get(mode, mode)})"


def outcomes_table(summary: Mapping) -> str:
    out = ["| System | Forget mode | Probes | " + " | ".join(OUTCOME_COLUMNS) +
           " | Other | Tokens per probe |",
           "|---|---|---|" + "---|" * len(OUTCOME_COLUMNS) + "---|---|"]
    for entry in summary["systems"]:
        if not entry["ran"]:
            continue
        for mode, counts in entry["modes"].items():
            other = sum(counts["other_outcomes"].values())
            out.append(f"| `{entry['system']}` | {_mode(mode)} | {counts['probes']} | " +
                       " | ".join(str(counts["outcomes"][c]) for c in OUTCOME_COLUMNS) +
                       f" | {other} | {counts['tokens_per_probe']} |")
    return "\n".join(out)


def at_rest_table(summary: Mapping) -> str:
    total = summary["deleted_facts"]
    out = [("| System | Forget mode | Remedy | Deleted facts whose values its files hold | "
            "Where |"), "|---|---|---|---|---|"]
    for entry in summary["systems"]:
        if not entry["ran"]:
            continue
        for mode, counts in entry["modes"].items():
            for remedy, held in counts["at_rest"].items():
                where = ", ".join(held["places"]) or "nowhere"
                out.append(f"| `{entry['system']}` | `{mode}` | {remedy} | "
                           f"{len(held['facts_held'])} of {total} | {where} |")
    return "\n".join(out)


def users_table(summary: Mapping) -> str:
    total = summary["deployment"]["deleted_facts"]
    out = ["| System | Forget mode | Probes | " + " | ".join(OUTCOME_COLUMNS) +
           " | Cross-user leaks | Deleted facts its files hold, no remedy |",
           "|---|---|---|" + "---|" * len(OUTCOME_COLUMNS) + "---|---|"]
    for entry in summary["systems"]:
        for mode, counts in entry.get("users", {}).items():
            held = counts["at_rest"]["none"]
            out.append(f"| `{entry['system']}` | `{mode}` | {counts['probes']} | " +
                       " | ".join(str(counts["outcomes"][c]) for c in OUTCOME_COLUMNS) +
                       f" | {counts['cross_user_leaks']} | {len(held['facts_held'])} of "
                       f"{total} |")
    return "\n".join(out)


def systems_section(summary: Mapping) -> list[str]:
    entries = summary["systems"]
    if not entries:
        return []
    parts = ["## Memory systems, through their own write path",
             ("Each system is told every turn as it happens (user, then assistant) and asked, "
              "at each probe, for the context it would put in front of the model (its own "
              "search, top-k as the retrieval policies'). Two forget modes: the user's "
              "\"please forget\" turn only, as any other turn; and that turn followed by the "
              "application deleting, through the system's API, every memory of the user that "
              "states one of the fact's values. Outcomes are classified as the policies' are.")]
    if any(e["ran"] for e in entries):
        parts += [outcomes_table(summary),
                  ("What each system's files hold of the deleted facts' values at the story's "
                   "end (as written, lower-cased or as token bytes), before any remedy and "
                   "after each documented one, each on a copy of the files at that point:"),
                  at_rest_table(summary)]
    users = summary.get("deployment", {}).get("users", 0)
    if any("users" in e for e in entries):
        parts += [(f"On a generated story of {users} users (`membench generate`, "
                   "params' `systems` section), all in one instance of each system, each "
                   "user's turns under their own user id and each probe asked with it: a "
                   "cross-user leak is another user's value for the probed key in the "
                   "context."), users_table(summary)]
    for entry in entries:
        if not entry["ran"]:
            parts.append(f"`{entry['system']}` ({entry['label']}) was not run: "
                         f"{entry['reason']}. Install: `{entry['install']}`.")
    return parts
