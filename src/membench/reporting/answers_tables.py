"""The report's "What the model did with it" section, rendered from the reader stage's
summary (reports/answers.json): per policy, the model's answers beside what the context
held, and how often a conflict in the context still gave the current answer."""

from __future__ import annotations

from collections.abc import Mapping

ANSWER_COLUMNS = ("current", "both", "superseded", "deleted", "abstained", "other")


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def answers_table(policies: Mapping, labels: Mapping[str, str]) -> str:
    out = ["| Policy | " + " | ".join(ANSWER_COLUMNS) + " | Not asked | Conflicts in context "
           "| Conflicts answered current |",
           "|---|" + "---|" * len(ANSWER_COLUMNS) + "---|---|---|"]
    for policy, counts in policies.items():
        out.append(f"| {labels.get(policy, policy)} | " +
                   " | ".join(str(counts[c]) for c in ANSWER_COLUMNS) +
                   f" | {counts['not_asked']} | {counts['conflicts']} | "
                   f"{_rate(counts['conflict_current_rate'])} |")
    return "\n".join(out)


def answers_section(summary: Mapping, labels: Mapping[str, str]) -> list[str]:
    policies = summary["policies"]
    if not policies:
        return []
    return ["## What the model did with it",
            (f"The model `{summary['model']}` answered each probe from exactly the context the "
             "policy injected (temperature 0; every response from the committed cache, "
             "data/model/reader-responses.jsonl). Its answer is classified by the values the "
             "story knows, no judge: the current value, both it and a superseded one, a "
             "superseded one only, a deleted one (the leak reached the user), an abstention, "
             "or none of them. A deleted fact's right answer is an abstention."),
            answers_table(policies, labels)]
