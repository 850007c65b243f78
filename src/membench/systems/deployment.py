"""One system instance for a deployment of several users (a generated story with
[[users]]): every user's turns told day by day under their own user id, every user's probes
asked with that id, each classified against the user's own facts, plus the cross-user leak
(another user's value for the probed key in the context), as the users stage does for the
policies with shared stores; then the at-rest audit over every user's deleted facts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from membench.memory.policies import PolicySettings
from membench.scenario.deployment import UserScenario
from membench.scoring.bench import Progress
from membench.scoring.users import LeakClassifier, UserOutcomeRow
from membench.systems.base import EmbedTexts, MemorySystem
from membench.systems.run import (
    Feed,
    Files,
    Fork,
    SystemAtRestRow,
    audit,
    check_mode,
    deleted_facts,
    open_system,
    reporter,
)


@dataclass(frozen=True)
class DeploymentRun:
    system: str
    mode: str
    rows: tuple[UserOutcomeRow, ...]  # `mode` holds the forget mode, `policy` the system
    at_rest: tuple[SystemAtRestRow, ...]


def run_system_deployment(system_class: type[MemorySystem], users: Sequence[UserScenario],
                          mode: str, settings: PolicySettings, embed: EmbedTexts,
                          directory: Path, files: Files, fork: Fork,
                          progress: Progress | None = None) -> DeploymentRun:
    check_mode(mode)
    name = system_class.id
    said = reporter(name, f"{mode}, {len(users)} users", progress)
    classifier = LeakClassifier({u.name: u.scenario.facts for u in users})
    system = open_system(system_class, directory, embed)
    feed = Feed(system, [(u.name, u.scenario) for u in users], mode)
    rows: list[UserOutcomeRow] = []
    try:
        for day in users[0].scenario.probe_days:
            said(f"day {day}: {len(users)} users")
            feed.advance_to(day)
            for user in users:
                facts = {f.key: f for f in user.scenario.facts}
                for probe in (p for p in user.scenario.probes if p.day == day):
                    fact = facts[probe.fact_key]
                    lines = feed.context(user.name, probe.question, settings.retrieval_top_k)
                    outcome, leak = classifier.classify(user.name, fact.key, day, lines)
                    rows.append(UserOutcomeRow(
                        mode, name, user.name, probe.form_name, day, fact.key,
                        sum(v.day <= day for v in fact.versions) - 1,
                        fact.deleted_at is not None and fact.deleted_at <= day,
                        outcome, leak, len(lines)))
            classifier.forget_injections()
        feed.advance_to(max(u.scenario.sessions for u in users))
    finally:
        feed.call("close", system.close)
    stories = [(u.name, u.scenario) for u in users]
    at_rest = audit(system_class, system, directory, embed, files, fork, deleted_facts(stories),
                    [u.name for u in users], mode, said)
    return DeploymentRun(name, mode, tuple(rows), tuple(at_rest))
