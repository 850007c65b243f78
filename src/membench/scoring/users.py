"""The bench for a deployment of several users, in two modes.

* namespaced: each user has their own stores and indexes (built once per user and day);
* shared: one set of stores and indexes holds every user's messages, the user's name only
  in the text, and fact records keyed by the fact alone (the common mistake).

Every probe is asked by one user (the question starts with their name) and classified
against that user's facts with the single-user rules; on top, a **cross-user leak** is an
injection holding another user's value for the probed key.

Values are found per injected line, with one pass over the line for all the deployment's
values (ValueFinder), and remembered per line; an injection that is a whole store's lines
(the same tuple for every probe of a day) is classified once. The work is therefore linear
in the lines the policies inject, not in lines times values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from membench.extraction.extractors import FactRecord
from membench.memory.policies import Policy
from membench.memory.stores import Memory
from membench.retrieval.retrievers import IndexCache
from membench.scenario.deployment import UserScenario, addressed, shared_transcript
from membench.scenario.model import Fact, Scenario
from membench.scenario.text import ValueFinder
from membench.scoring.bench import Progress
from membench.scoring.rules import outcome_by

NAMESPACED, SHARED = "namespaced", "shared"
MODES = (NAMESPACED, SHARED)

Extractor = Callable[[Scenario], list[FactRecord]]


@dataclass(frozen=True)
class UserOutcomeRow:
    mode: str
    policy: str
    user: str
    form: str
    day: int
    fact_key: str
    changes: int  # times the fact had changed by this day (versions stated, minus one)
    deleted: bool
    outcome: str
    cross_user_leak: bool  # the injection held another user's value for this key
    injected_lines: int


@dataclass(frozen=True)
class Deployment:
    users: tuple[UserScenario, ...]
    records: tuple[tuple[FactRecord, ...], ...]  # per user, exchange indices their own
    shared: Scenario  # every user's exchanges in one transcript
    shared_records: tuple[FactRecord, ...]  # keyed by fact only, shared exchange indices


def build_deployment(users: Sequence[UserScenario], extract: Extractor) -> Deployment:
    records = tuple(tuple(extract(user.scenario)) for user in users)
    shared, maps = shared_transcript(users)
    merged = sorted((replace(r, exchange_index=maps[position][r.exchange_index])
                     for position, user_records in enumerate(records) for r in user_records),
                    key=lambda r: r.exchange_index)
    return Deployment(tuple(users), records, shared, tuple(merged))


class _StoreLinesMemory(Memory):
    """Memory whose lines(store) is one tuple per store and day, so a policy injecting a
    whole store hands back the same object for every probe and is classified once."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self._line_tuples: dict[str, tuple[str, ...]] = {}

    def lines(self, store: str):  # type: ignore[override]
        if store not in self._line_tuples:
            self._line_tuples[store] = tuple(super().lines(store))
        return self._line_tuples[store]


class LeakClassifier:
    """Finds every user's values in injected lines and classifies a probe by them."""

    def __init__(self, facts_by_user: dict[str, Sequence[Fact]]) -> None:
        owners: dict[str, set[tuple[str, str]]] = {}
        for user, facts in facts_by_user.items():
            for fact in facts:
                for value in fact.values():
                    owners.setdefault(value, set()).add((user, fact.key))
        self._finder = ValueFinder(sorted(owners))
        self._owners = owners
        self._facts = {(user, f.key): f for user, facts in facts_by_user.items() for f in facts}
        self._per_line: dict[str, frozenset[str]] = {}
        self._per_injection: dict[int, tuple[tuple[str, ...], frozenset[str]]] = {}

    def values_in(self, lines: tuple[str, ...]) -> frozenset[str]:
        """Every known value some line holds (whole words, as the outcome rules match)."""
        held = self._per_injection.get(id(lines))
        if held is not None and held[0] is lines:
            return held[1]
        found: set[str] = set()
        for line in lines:
            if line not in self._per_line:
                values = self._finder.values
                self._per_line[line] = frozenset(values[i] for i in self._finder.found(line))
            found |= self._per_line[line]
        result = frozenset(found)
        self._per_injection[id(lines)] = (lines, result)  # holds the tuple: ids stay unique
        return result

    def classify(self, user: str, key: str, day: int, lines: tuple[str, ...]
                 ) -> tuple[str, bool]:
        fact = self._facts[(user, key)]
        held = self.values_in(lines)
        own = set(fact.values())
        leak = any(owner != user and owner_key == key
                   for value in held - own for owner, owner_key in self._owners[value])
        return outcome_by(fact, day, held.__contains__).value, leak

    def forget_injections(self) -> None:
        """Drops the per-injection memo (call when the day's memories are dropped)."""
        self._per_injection.clear()


def _probe_user(mode: str, memory: Memory, user: UserScenario, day: int,
                policies: Sequence[Policy], classifier: LeakClassifier) -> list[UserOutcomeRow]:
    rows = []
    probes = [p for p in user.scenario.probes if p.day == day]
    facts = {fact.key: fact for fact in user.scenario.facts}
    for policy in policies:
        for probe in probes:
            fact = facts[probe.fact_key]
            injection = policy.inject(memory, addressed(user.name, probe.question))
            lines = tuple(injection.lines)
            result, leak = classifier.classify(user.name, fact.key, day, lines)
            rows.append(UserOutcomeRow(
                mode, policy.id, user.name, probe.form.value, day, fact.key,
                sum(v.day <= day for v in fact.versions) - 1,
                fact.deleted_at is not None and fact.deleted_at <= day,
                result, leak, len(lines)))
    return rows


def run_deployment(deployment: Deployment, policies: Sequence[Policy],
                   progress: Progress | None = None) -> list[UserOutcomeRow]:
    """Both modes at every probe day; each user's and the shared stores built once a day."""
    classifier = LeakClassifier({u.name: u.scenario.facts for u in deployment.users})
    rows: list[UserOutcomeRow] = []
    for day in deployment.users[0].scenario.probe_days:
        if progress:
            progress(f"day {day}: {len(policies)} policies x {len(deployment.users)} users, "
                     f"{len(MODES)} modes")
        for user, records in zip(deployment.users, deployment.records, strict=True):
            memory = _StoreLinesMemory(user.scenario, records, day, IndexCache())
            rows += _probe_user(NAMESPACED, memory, user, day, policies, classifier)
            classifier.forget_injections()
        shared = _StoreLinesMemory(deployment.shared, deployment.shared_records, day,
                                   IndexCache())
        for user in deployment.users:
            rows += _probe_user(SHARED, shared, user, day, policies, classifier)
        classifier.forget_injections()
    return rows


LIVE = ("current", "conflict", "stale", "missing")


def user_counts(rows: Sequence[UserOutcomeRow]) -> dict:
    """The multi-user metrics: per mode and policy, outcome counts and cross-user leaks; and
    per mode, policy and number of changes, the live probes' conflicts and stale hits."""
    modes: dict = {}
    by_changes: dict = {}
    for r in rows:
        entry = modes.setdefault(r.mode, {}).setdefault(r.policy, {
            "probes": 0, "cross_user_leak": 0, "current": 0, "conflict": 0, "stale": 0,
            "missing": 0, "leaked": 0, "clean": 0})
        entry["probes"] += 1
        entry["cross_user_leak"] += r.cross_user_leak
        entry[r.outcome] += 1
        if not r.deleted:
            growth = by_changes.setdefault(r.mode, {}).setdefault(r.policy, {}).setdefault(
                str(r.changes), {"probes": 0, "conflict": 0, "stale": 0})
            growth["probes"] += 1
            if r.outcome in ("conflict", "stale"):
                growth[r.outcome] += 1
    return {"modes": modes, "by_changes": by_changes}
