"""The scenario's data model: facts with versions, exchanges, probes."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class ExchangeKind(str, Enum):
    STATEMENT = "statement"  # the user states or changes a fact
    DELETION = "deletion"  # the user asks the assistant to forget a fact
    FILLER = "filler"  # an ordinary question answered with source code


@dataclass(frozen=True)
class FactVersion:
    day: int
    slot: int
    value: str
    statement: str


@dataclass(frozen=True)
class Deletion:
    day: int
    slot: int
    request: str


@dataclass(frozen=True)
class Fact:
    key: str
    literal: str
    paraphrase: str
    versions: tuple[FactVersion, ...]
    deletion: Deletion | None = None

    @property
    def deleted_at(self) -> int | None:
        return self.deletion.day if self.deletion else None

    def values(self) -> tuple[str, ...]:
        return tuple(version.value for version in self.versions)


@dataclass(frozen=True)
class Exchange:
    index: int  # position in the whole transcript, from 0
    day: int  # session number, from 1
    slot: int  # position within the session, from 1
    kind: ExchangeKind
    user: str
    assistant: str
    fact_key: str | None = None  # gold label, read only by the perfect extractor
    source: str | None = None  # where a filler reply's code came from: "path:first-last"

    def line(self) -> str:
        """The exchange as every store keeps it: dated, user then assistant."""
        return f"[day {self.day}] user: {self.user} / assistant: {self.assistant}"


class ProbeForm(str, Enum):
    LITERAL = "literal"
    PARAPHRASE = "paraphrase"


@dataclass(frozen=True)
class Probe:
    day: int  # asked at the end of this session
    fact_key: str
    form: ProbeForm
    question: str


@dataclass(frozen=True)
class Scenario:
    sessions: int
    exchanges_per_session: int
    seed: int
    facts: tuple[Fact, ...]
    exchanges: tuple[Exchange, ...]
    probes: tuple[Probe, ...]

    def fact(self, key: str) -> Fact:
        for fact in self.facts:
            if fact.key == key:
                return fact
        raise KeyError(key)

    def exchanges_through(self, day: int) -> tuple[Exchange, ...]:
        return tuple(e for e in self.exchanges if e.day <= day)

    @property
    def probe_days(self) -> tuple[int, ...]:
        return tuple(sorted({probe.day for probe in self.probes}))
