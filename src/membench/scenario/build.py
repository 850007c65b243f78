"""Builds the seeded relationship: stretches the story to the session count, places fact
events in sessions, fills every other slot with a distractor question and real code."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from membench.scenario.model import (
    Deletion,
    Exchange,
    ExchangeKind,
    Fact,
    FactVersion,
    Probe,
    ProbeForm,
    Scenario,
)
from membench.scenario.spec import ScenarioSpec
from membench.scenario.text import ValueFinder

MAX_WINDOW_DRAWS = 10_000


class ScenarioBuildError(ValueError):
    """The params and corpus cannot produce the requested scenario."""


@dataclass(frozen=True)
class CorpusText:
    path: str  # relative, POSIX separators
    lines: tuple[str, ...]


@dataclass(frozen=True)
class ScenarioShape:
    seed: int
    sessions: int
    exchanges_per_session: int
    probe_days: tuple[int, ...]
    lines_per_reply: int


def stretch_day(day: int, sessions: int, reference_sessions: int) -> int:
    """Maps a reference-timeline day onto `sessions` days, keeping proportions (ceiling)."""
    return max(1, -(-day * sessions // reference_sessions))


def _pack_slots(wanted: list[int], capacity: int) -> list[int]:
    """Strictly increasing slots within 1..capacity, each as close to its wish as possible."""
    slots: list[int] = []
    for slot in wanted:
        slots.append(max(min(slot, capacity), slots[-1] + 1 if slots else 1))
    for i in range(len(slots) - 1, -1, -1):
        ceiling = capacity - (len(slots) - 1 - i)
        slots[i] = min(slots[i], ceiling)
    return slots


def place_facts(spec: ScenarioSpec, shape: ScenarioShape) -> tuple[Fact, ...]:
    """Stretches every fact event onto the actual timeline and gives it a free slot."""
    events = []  # (reference day, reference slot, fact index, version index or -1)
    for f, fact in enumerate(spec.facts):
        for v, version in enumerate(fact.versions):
            events.append((version.day, version.slot, f, v))
        if fact.deletion:
            events.append((fact.deletion.day, fact.deletion.slot, f, -1))
    by_day: dict[int, list[tuple]] = defaultdict(list)
    for event in sorted(events):
        by_day[stretch_day(event[0], shape.sessions, spec.reference_sessions)].append(event)
    placed: dict[tuple[int, int], tuple[int, int]] = {}
    for day, day_events in by_day.items():
        if len(day_events) > shape.exchanges_per_session:
            raise ScenarioBuildError(
                f"day {day} needs {len(day_events)} fact exchanges but exchanges_per_session is "
                f"{shape.exchanges_per_session}: raise exchanges_per_session or sessions"
            )
        slots = _pack_slots([e[1] for e in day_events], shape.exchanges_per_session)
        for event, slot in zip(day_events, slots):
            placed[(event[2], event[3])] = (day, slot)
    facts = []
    for f, fact in enumerate(spec.facts):
        versions = tuple(
            replace(version, day=placed[(f, v)][0], slot=placed[(f, v)][1])
            for v, version in enumerate(fact.versions)
        )
        deletion = None
        if fact.deletion:
            day, slot = placed[(f, -1)]
            deletion = Deletion(day=day, slot=slot, request=fact.deletion.request)
        facts.append(replace(fact, versions=versions, deletion=deletion))
    return tuple(facts)


class FillerDrawer:
    """Seeded draws of distractor questions and code windows free of every fact value."""

    def __init__(self, rng: random.Random, corpus: Sequence[CorpusText], lines: int,
                 forbidden: ValueFinder) -> None:
        self._rng = rng
        self._files = [f for f in corpus if len(f.lines) >= lines]
        if not self._files:
            raise ScenarioBuildError(
                f"corpus: no file has the {lines} lines a filler reply needs "
                f"({len(corpus)} file(s) matched)"
            )
        self._lines = lines
        self._forbidden = forbidden

    def code(self) -> tuple[str, str]:
        for _ in range(MAX_WINDOW_DRAWS):
            file = self._files[self._rng.randrange(len(self._files))]
            start = self._rng.randrange(len(file.lines) - self._lines + 1)
            text = "\n".join(file.lines[start : start + self._lines])
            if not self._forbidden.holds_any(text):
                return text, f"{file.path}:{start + 1}-{start + self._lines}"
        raise ScenarioBuildError(
            f"corpus: {MAX_WINDOW_DRAWS} draws found no {self._lines}-line window free of "
            "fact values"
        )

    def question(self, distractors: Sequence[str]) -> str:
        return distractors[self._rng.randrange(len(distractors))]


def build_scenario(spec: ScenarioSpec, corpus: Sequence[CorpusText],
                   shape: ScenarioShape, forbidden: ValueFinder | None = None) -> Scenario:
    """forbidden: the values no filler may quote when they are more than the story's own
    (every user's in a deployment, built once for all of them); it must hold the story's."""
    facts = place_facts(spec, shape)
    events: dict[tuple[int, int], tuple[Fact, FactVersion | Deletion]] = {}
    for fact in facts:
        for version in fact.versions:
            events[(version.day, version.slot)] = (fact, version)
        if fact.deletion:
            events[(fact.deletion.day, fact.deletion.slot)] = (fact, fact.deletion)
    if forbidden is None:
        forbidden = ValueFinder([value for fact in facts for value in fact.values()])
    drawer = FillerDrawer(random.Random(shape.seed), corpus, shape.lines_per_reply, forbidden)
    exchanges = []
    for day in range(1, shape.sessions + 1):
        for slot in range(1, shape.exchanges_per_session + 1):
            index = len(exchanges)
            event = events.get((day, slot))
            if event is None:
                question = drawer.question(spec.distractors)
                code, source = drawer.code()
                exchanges.append(Exchange(
                    index, day, slot, ExchangeKind.FILLER, question,
                    f"{spec.filler_reply}\n{code}", source=source,
                ))
            elif isinstance(event[1], Deletion):
                exchanges.append(Exchange(
                    index, day, slot, ExchangeKind.DELETION, event[1].request,
                    spec.deletion_reply, fact_key=event[0].key,
                ))
            else:
                exchanges.append(Exchange(
                    index, day, slot, ExchangeKind.STATEMENT, event[1].statement,
                    spec.acknowledgement.format(value=event[1].value), fact_key=event[0].key,
                ))
    return Scenario(
        sessions=shape.sessions,
        exchanges_per_session=shape.exchanges_per_session,
        seed=shape.seed,
        facts=facts,
        exchanges=tuple(exchanges),
        probes=build_probes(facts, shape.probe_days),
    )


def build_probes(facts: Sequence[Fact], probe_days: Sequence[int]) -> tuple[Probe, ...]:
    """At the end of each probe day, both forms of a question about every fact stated so far."""
    probes = []
    for day in sorted(set(probe_days)):
        for fact in facts:
            if fact.versions[0].day <= day:
                probes.append(Probe(day, fact.key, ProbeForm.LITERAL, fact.literal))
                probes.append(Probe(day, fact.key, ProbeForm.PARAPHRASE, fact.paraphrase))
    return tuple(probes)
