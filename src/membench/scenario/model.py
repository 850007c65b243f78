"""The scenario's data model: facts with versions, exchanges, probes."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from enum import Enum


class ExchangeKind(str, Enum):
    STATEMENT = "statement"  # the user states or changes a fact
    DELETION = "deletion"  # the user asks the assistant to forget a fact
    FILLER = "filler"  # an ordinary question answered with source code
    TURN = "turn"  # a given turn of a format-2 conversation, replayed as written


@dataclass(frozen=True)
class FactVersion:
    day: int
    slot: int
    value: str
    statement: str
    turns: tuple[str, ...] = ()  # format 2: the turn ids that state it
    answers: tuple[str, ...] = ()  # format 2: accepted spellings for value scoring


@dataclass(frozen=True)
class Deletion:
    day: int
    slot: int
    request: str
    turn: str | None = None  # format 2: the turn id that asks to forget


@dataclass(frozen=True)
class Fact:
    key: str
    literal: str
    paraphrase: str
    versions: tuple[FactVersion, ...]
    deletion: Deletion | None = None
    # format 2: every deletion in order (a fact may be re-stated after one); `deletion` is
    # then the last one only if no version follows it
    deletions: tuple[Deletion, ...] = ()

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
    turn_id: str | None = None  # format 2: a given turn (its text is in `user`)
    speaker: str | None = None  # format 2: who said the given turn
    date: str | None = None  # format 2: the session's ISO date, when given

    def line(self) -> str:
        """The exchange as every store keeps it: dated, user then assistant. Made once: every
        store, index and token count of every probe day shares the one string (a transcript
        of 30,000 sessions is hundreds of MB, and each copy of it counts)."""
        try:
            return self.__dict__["_line"]
        except KeyError:
            line = self._formatted_line()
            object.__setattr__(self, "_line", line)  # a cache, not a field (frozen)
            return line

    def __getstate__(self) -> dict:
        """Pickled without the cached line: a worker makes it again if it needs it."""
        if "_line" not in self.__dict__:
            return self.__dict__
        return {k: v for k, v in self.__dict__.items() if k != "_line"}

    def _formatted_line(self) -> str:
        if self.turn_id is not None:
            when = f"day {self.day}, {self.date}" if self.date else f"day {self.day}"
            return f"[{when}] {self.speaker}: {self.user}"
        return f"[day {self.day}] user: {self.user} / assistant: {self.assistant}"


class ProbeForm(str, Enum):
    LITERAL = "literal"
    PARAPHRASE = "paraphrase"


@dataclass(frozen=True)
class Probe:
    day: int  # asked at the end of this session
    fact_key: str
    form: ProbeForm | str  # format 2: free text
    question: str
    id: str | None = None  # format 2
    evidence: tuple[str, ...] = ()  # format 2, abstention probes: the false premise's turns
    tags: tuple[tuple[str, str], ...] = ()  # format 2: (name, value), sorted by name
    scenario: str | None = None  # format 2: the scenario id (a benchmark holds several)

    @property
    def form_name(self) -> str:
        return self.form.value if isinstance(self.form, ProbeForm) else self.form

    @property
    def abstention(self) -> bool:
        """Format 2: expects nothing (fact_key is empty)."""
        return not self.fact_key


@dataclass(frozen=True)
class Scenario:
    sessions: int
    exchanges_per_session: int
    seed: int
    facts: tuple[Fact, ...]
    exchanges: tuple[Exchange, ...]
    probes: tuple[Probe, ...]
    # format 2: "value" or "evidence" (None: format 1, the value rule); segments: per
    # scenario of a benchmark, (id, first day, last day) on the one shared day line
    scoring: str | None = None
    segments: tuple[tuple[str, int, int], ...] = ()

    def first_day(self, day: int) -> int:
        """The first day of the scenario `day` belongs to (1 unless several are joined)."""
        return next((first for _, first, last in self.segments if first <= day <= last), 1)

    def segment_of(self, day: int) -> str | None:
        return next((sid for sid, first, last in self.segments if first <= day <= last), None)

    def fact(self, key: str) -> Fact:
        for fact in self.facts:
            if fact.key == key:
                return fact
        raise KeyError(key)

    def exchanges_through(self, day: int) -> tuple[Exchange, ...]:
        first = self.first_day(day)
        days = self._exchange_days()
        if days is None:
            return tuple(e for e in self.exchanges if first <= e.day <= day)
        return self.exchanges[bisect_left(days, first):bisect_right(days, day)]

    def _exchange_days(self) -> list[int] | None:
        """The exchanges' days when they are in day order (then a day's slice is two
        bisections: a replay asks for every day of a thousand-day story), else None.
        Kept like Exchange.line's string: a cache, not a field."""
        try:
            return self.__dict__["_days"]
        except KeyError:
            days = [e.day for e in self.exchanges]
            kept = days if all(a <= b for a, b in zip(days, days[1:])) else None
            object.__setattr__(self, "_days", kept)
            return kept

    def __getstate__(self) -> dict:
        """Pickled without the cache: the same bytes before and after a day is asked for."""
        return {k: v for k, v in self.__dict__.items() if k != "_days"}

    @property
    def probe_days(self) -> tuple[int, ...]:
        return tuple(sorted({probe.day for probe in self.probes}))
