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

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any
from dataclasses import dataclass, replace

import numpy as np

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
# Lines from which an injection is memoized by identity like a whole store (a policy that
# filters a whole store, as the fact log's recency reader does, returns one tuple for every
# question of a day); shorter ones (retrieved top-k) are scanned each time.
LONG_INJECTION = 64
MODES = (NAMESPACED, SHARED)
_NOTHING: frozenset[str] = frozenset()

Extractor = Callable[[Scenario], list[FactRecord]]
Vectors = Mapping[str, np.ndarray]  # text SHA-256 -> embedding


@dataclass(frozen=True, slots=True)  # millions of rows at scale
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

    def store_lines(self) -> tuple[tuple[str, ...], ...]:
        """Every store's lines asked for so far today, longest first."""
        return tuple(sorted(self._line_tuples.values(), key=len, reverse=True))


@dataclass(frozen=True)
class _Held:
    """What one injection holds: its values, and who owns them, grouped for the leak test."""

    values: frozenset[str]
    sole_owners: dict[str, set[str]]  # key -> users owning alone a held value of it
    shared: tuple[str, ...]  # held values several (user, key) pairs own


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
        self._own = {pair: frozenset(f.values()) for pair, f in self._facts.items()}
        self._per_line: dict[str, frozenset[str]] = {}
        self._per_injection: dict[int, tuple[tuple[str, ...], _Held]] = {}

    def values_in(self, lines: tuple[str, ...]) -> frozenset[str]:
        """Every known value some line holds (whole words, as the outcome rules match)."""
        return self._scan(lines).values

    def _store(self, lines: tuple[str, ...]) -> _Held:
        """A whole store's lines, the same tuple for every probe of a day: scanned once."""
        held = self._per_injection.get(id(lines))
        if held is None or held[0] is not lines:
            held = (lines, self._scan(lines))
            self._per_injection[id(lines)] = held  # holds the tuple: ids stay unique
        return held[1]

    def _scan(self, lines: Sequence[str]) -> _Held:
        found: set[str] = set()
        for line in lines:
            if line not in self._per_line:
                values = self._finder.values
                held = frozenset(values[i] for i in self._finder.found(line))
                # most lines hold no value: one empty set for them all, not one each
                self._per_line[line] = held or _NOTHING
            found |= self._per_line[line]
        sole: dict[str, set[str]] = {}
        shared = []
        for value in found:
            owners = self._owners[value]
            if len(owners) == 1:
                (owner, key), = owners
                sole.setdefault(key, set()).add(owner)
            else:
                shared.append(value)
        return _Held(frozenset(found), sole, tuple(shared))

    def _parts(self, lines: tuple[str, ...], stores: Sequence[tuple[str, ...]]
               ) -> list[_Held]:
        """The injection as a whole store (scanned once a day) and the lines after it, when
        it starts with one (a profile, then retrieved lines); else its lines."""
        for store in stores:
            if lines is store or (len(store) <= len(lines) and lines[:len(store)] == store):
                return [self._store(store), self._scan(lines[len(store):])]
        if len(lines) >= LONG_INJECTION:  # a reader's pass over a whole store: one tuple a day
            return [self._store(lines)]
        return [self._scan(lines)]

    def classify(self, user: str, key: str, day: int, lines: tuple[str, ...],
                 stores: Sequence[tuple[str, ...]] = ()) -> tuple[str, bool]:
        """stores: the day's whole stores as tuples of lines, which injections may start
        with (each is scanned once, not once per probe)."""
        fact = self._facts[(user, key)]
        parts = self._parts(lines, stores)
        own = self._own[(user, key)]
        # Another user's value for this key: one only they own, or one owned by several
        # that is not this user's own.
        owners = set().union(*(part.sole_owners.get(key, ()) for part in parts))
        leak = len(owners) > (user in owners) or any(
            owner != user and owner_key == key
            for part in parts for value in part.shared if value not in own
            for owner, owner_key in self._owners[value])
        held = (lambda value: any(value in part.values for part in parts))
        return outcome_by(fact, day, held).value, leak

    def forget_injections(self) -> None:
        """Drops the per-injection memo (call when the day's memories are dropped)."""
        self._per_injection.clear()


def _probe_user(mode: str, memory: _StoreLinesMemory, user: UserScenario, day: int,
                policies: Sequence[Policy], classifier: LeakClassifier) -> list[UserOutcomeRow]:
    rows = []
    probes = [p for p in user.scenario.probes if p.day == day]
    facts = {fact.key: fact for fact in user.scenario.facts}
    for policy in policies:
        for probe in probes:
            fact = facts[probe.fact_key]
            injection = policy.inject(memory, addressed(user.name, probe.question))
            lines = tuple(injection.lines)
            result, leak = classifier.classify(user.name, fact.key, day, lines,
                                               memory.store_lines())
            rows.append(UserOutcomeRow(
                mode, policy.id, user.name, probe.form.value, day, fact.key,
                sum(v.day <= day for v in fact.versions) - 1,
                fact.deleted_at is not None and fact.deleted_at <= day,
                result, leak, len(lines)))
    return rows


Unit = tuple[str, int]  # (NAMESPACED, user position) or (SHARED, probe day)
MapUnits = Callable[[Callable[["DeploymentRun", Unit], dict], "DeploymentRun", list[Unit]],
                    list[dict]]


@dataclass(frozen=True)
class DeploymentRun:
    """What every unit of a deployment's run reads (sent once to wherever units run)."""

    deployment: Deployment
    policies: tuple[Policy, ...]
    vectors: Vectors | None = None


def deployment_units(deployment: Deployment) -> list[Unit]:
    """Independent units, the longest first (so the short ones fill in beside them): the
    shared stores of each day, the last day first, then each user's own stores."""
    return ([(SHARED, day) for day in reversed(deployment.users[0].scenario.probe_days)]
            + [(NAMESPACED, position) for position in range(len(deployment.users))])


def unit_sizes(deployment: Deployment, units: Sequence[Unit]) -> list[int]:
    """Each unit's relative cost: the exchanges its stores hold, summed over the probe days
    (a shared day holds every user's; a user's own stores are replayed over every day)."""
    days = deployment.users[0].scenario.probe_days

    def held(scenario: Scenario, day: int) -> int:
        return sum(exchange.day <= day for exchange in scenario.exchanges)

    sizes = []
    for mode, which in units:
        if mode == SHARED:
            sizes.append(held(deployment.shared, which))
        else:
            sizes.append(sum(held(deployment.users[which].scenario, day) for day in days))
    return sizes


_classifier: list[tuple[Deployment, LeakClassifier]] = []  # one, for the units of a run


def _classifier_for(deployment: Deployment) -> LeakClassifier:
    """Built once per process for a deployment (its caches are only caches)."""
    if not _classifier or _classifier[0][0] is not deployment:
        _classifier[:] = [(deployment, LeakClassifier(
            {u.name: u.scenario.facts for u in deployment.users}))]
    return _classifier[0][1]


def run_deployment_unit(run: DeploymentRun, unit: Unit) -> dict[int, list[UserOutcomeRow]]:
    """day -> rows of one unit."""
    mode, which = unit
    classifier = _classifier_for(run.deployment)
    if mode == NAMESPACED:
        return namespaced_user(run.deployment, which, run.policies, classifier, run.vectors)
    return {which: shared_day(run.deployment, which, run.policies, classifier,
                              IndexCache(vectors=run.vectors))}


def _in_order(function, run, units):
    return [function(run, unit) for unit in units]


def run_deployment(deployment: Deployment, policies: Sequence[Policy],
                   progress: Progress | None = None, vectors: Vectors | None = None,
                   map_units: MapUnits | None = None) -> list[UserOutcomeRow]:
    """Both modes at every probe day; rows by day, then namespaced users, then shared.
    vectors (text SHA-256 -> embedding) for dense policies: see deployment_texts.
    map_units runs the units where it likes and returns their results in order."""
    units = deployment_units(deployment)
    if progress:
        progress(f"{len(deployment.users)} users namespaced, shared on days "
                 f"{list(deployment.users[0].scenario.probe_days)}: {len(policies)} policies")
    results = (map_units or _in_order)(run_deployment_unit,
                                       DeploymentRun(deployment, tuple(policies), vectors),
                                       units)
    return [row for part in in_output_order(deployment, units, results) for row in part]


def in_output_order(deployment: Deployment, units: Sequence[Unit],
                    results: Sequence[Mapping[int, Any]]) -> list[Any]:
    """The units' parts (day -> rows, or anything made of them) in the table's order: by
    day, then namespaced users, then shared."""
    by_unit = dict(zip(units, results, strict=True))
    parts = []
    for day in deployment.users[0].scenario.probe_days:
        parts += [by_unit[(NAMESPACED, position)][day]
                  for position in range(len(deployment.users))]
        parts.append(by_unit[(SHARED, day)][day])
    return parts


def namespaced_user(deployment: Deployment, position: int, policies: Sequence[Policy],
                    classifier: LeakClassifier, vectors: Vectors | None = None
                    ) -> dict[int, list[UserOutcomeRow]]:
    """day -> one user's rows. The user's stores are replayed over the probe days with one
    IndexCache (documents only arrive, so each is tokenized once)."""
    user, records = deployment.users[position], deployment.records[position]
    indexes = IndexCache(vectors=vectors)
    rows = {}
    for day in user.scenario.probe_days:
        memory = _StoreLinesMemory(user.scenario, records, day, indexes)
        rows[day] = _probe_user(NAMESPACED, memory, user, day, policies, classifier)
        classifier.forget_injections()
    return rows


def shared_day(deployment: Deployment, day: int, policies: Sequence[Policy],
               classifier: LeakClassifier, indexes: IndexCache) -> list[UserOutcomeRow]:
    """One set of stores for everyone on `day`, every user's probes (users in order)."""
    shared = _StoreLinesMemory(deployment.shared, deployment.shared_records, day, indexes)
    rows = [row for user in deployment.users
            for row in _probe_user(SHARED, shared, user, day, policies, classifier)]
    classifier.forget_injections()
    return rows


def run_namespaced(deployment: Deployment, policies: Sequence[Policy],
                   classifier: LeakClassifier, progress: Progress | None = None,
                   vectors: Vectors | None = None
                   ) -> dict[tuple[int, int], list[UserOutcomeRow]]:
    """(day, user position) -> rows, every user in this process."""
    days = deployment.users[0].scenario.probe_days
    rows: dict[tuple[int, int], list[UserOutcomeRow]] = {}
    for position in range(len(deployment.users)):
        if progress and position % max(1, len(deployment.users) // 10) == 0:
            progress(f"namespaced: user {position + 1} of {len(deployment.users)}, "
                     f"{len(policies)} policies, days {list(days)}")
        for day, day_rows in namespaced_user(deployment, position, policies, classifier,
                                             vectors).items():
            rows[(day, position)] = day_rows
    return rows


def run_shared(deployment: Deployment, policies: Sequence[Policy],
               classifier: LeakClassifier, progress: Progress | None = None,
               vectors: Vectors | None = None) -> dict[int, list[UserOutcomeRow]]:
    """day -> rows (users in order): one set of stores for everyone, built once a day."""
    rows: dict[int, list[UserOutcomeRow]] = {}
    indexes = IndexCache(vectors=vectors)
    for day in deployment.users[0].scenario.probe_days:
        if progress:
            progress(f"shared: day {day}, {len(policies)} policies x "
                     f"{len(deployment.users)} users")
        rows[day] = shared_day(deployment, day, policies, classifier, indexes)
    return rows


def deployment_texts(deployment: Deployment, stores: Sequence[str]) -> list[str]:
    """Every text a dense policy can see in either mode (each user's stores and the shared
    ones on every probe day) and every probe question as its user asks it; each once."""
    texts: dict[str, None] = {}
    days = deployment.users[0].scenario.probe_days
    scenarios = [(u.scenario, r) for u, r in zip(deployment.users, deployment.records,
                                                strict=True)]
    for scenario, records in scenarios + [(deployment.shared, deployment.shared_records)]:
        for day in days:
            memory = Memory(scenario, records, day, IndexCache())
            for store in stores:
                texts.update(dict.fromkeys(memory.lines(store)))
    for user in deployment.users:
        texts.update(dict.fromkeys(addressed(user.name, p.question)
                                   for p in user.scenario.probes))
    return list(texts)


LIVE = ("current", "conflict", "stale", "missing")


# (mode, policy, outcome, cross-user leak, deleted, changes) -> probes
Tally = Mapping[tuple[str, str, str, bool, bool, int], int]


def tally(rows: Iterable[UserOutcomeRow]) -> Counter:
    return Counter((r.mode, r.policy, r.outcome, r.cross_user_leak, r.deleted, r.changes)
                   for r in rows)


def counts_of(tallied: Tally) -> dict:
    """The multi-user metrics: per mode and policy, outcome counts and cross-user leaks; and
    per mode, policy and number of changes, the live probes' conflicts and stale hits."""
    modes: dict = {}
    by_changes: dict = {}
    for (mode, policy, outcome, leak, deleted, changes), probes in tallied.items():
        entry = modes.setdefault(mode, {}).setdefault(policy, {
            "probes": 0, "cross_user_leak": 0, "current": 0, "conflict": 0, "stale": 0,
            "missing": 0, "leaked": 0, "clean": 0})
        entry["probes"] += probes
        entry["cross_user_leak"] += probes * leak
        entry[outcome] += probes
        if not deleted:
            growth = by_changes.setdefault(mode, {}).setdefault(policy, {}).setdefault(
                str(changes), {"probes": 0, "conflict": 0, "stale": 0})
            growth["probes"] += probes
            if outcome in ("conflict", "stale"):
                growth[outcome] += probes
    return {"modes": modes, "by_changes": by_changes}


def user_counts(rows: Sequence[UserOutcomeRow]) -> dict:
    return counts_of(tally(rows))


@dataclass(frozen=True)
class UserOutcomeSummary:
    """What the report reads of a multi-user run (its rows may be millions)."""

    counts: dict  # counts_of
    users: int
    policies: frozenset[str]


def summarize(rows: Sequence[UserOutcomeRow]) -> UserOutcomeSummary | None:
    """None for a single-user run (no rows)."""
    if not rows:
        return None
    return UserOutcomeSummary(user_counts(rows), len({r.user for r in rows}),
                              frozenset(r.policy for r in rows))
