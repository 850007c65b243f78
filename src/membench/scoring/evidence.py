"""Format-2 outcomes: by evidence (which turns, or records made from them, are in the
injected context) and by value (the accepted spellings, as the article's rule).

Evidence scoring reads turns, never values, so a correction that names the old value
("X, not Y") or an answer that is not word for word in its turn cannot change it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from membench.extraction.extractors import FactRecord
from membench.scenario.model import Fact, FactVersion, Probe, Scenario
from membench.scenario.text import has, tokens
from membench.scoring.rules import Outcome


class EvidenceOutcome(str, Enum):
    """Outcomes only format-2 runs have (besides the article's six)."""
    PARTIAL = "partial"  # some but not all of a multi-turn current version, no superseded
    PREMISE = "premise"  # abstention probe: a turn the false premise comes from is injected
    NO_PREMISE = "no_premise"  # abstention probe: none is


FORMAT2_OUTCOMES = tuple(o.value for o in EvidenceOutcome)


@dataclass(frozen=True)
class FactState:
    """A fact as of the end of one day."""
    current: FactVersion | None  # None when deleted (and not re-stated) by then
    superseded: tuple[FactVersion, ...]  # versions stated before the current one
    stated: tuple[FactVersion, ...]  # every version stated by then

    @property
    def deleted(self) -> bool:
        return self.current is None


def fact_state(fact: Fact, day: int) -> FactState:
    events = sorted([((v.day, v.slot), v) for v in fact.versions if v.day <= day]
                    + [((d.day, d.slot), None) for d in fact.deletions if d.day <= day],
                    key=lambda e: e[0])
    if not events:
        raise ValueError(f"fact {fact.key} is not stated by day {day}")
    stated = tuple(v for _, v in events if v is not None)
    current = events[-1][1]
    return FactState(current, stated[:-1] if current else stated, stated)


def holds_line(context: str, line: str) -> bool:
    """line is in context as a whole line (a memory-tool view may indent it)."""
    start = context.find(line)
    while start != -1:
        end = start + len(line)
        if (start == 0 or context[start - 1] in "\n\t ") and \
                (end == len(context) or context[end] == "\n"):
            return True
        start = context.find(line, start + 1)
    return False


class EvidenceScorer:
    """Resolves turn ids to exchanges and the lines that carry each turn: its transcript
    line and the line of every record made from it (a record made from a version's last
    turn, as the perfect extractor's, carries every turn of that version)."""

    def __init__(self, scenario: Scenario, records: Sequence[FactRecord]) -> None:
        self.scenario = scenario
        self.facts = {f.key: f for f in scenario.facts}  # thousands in an imported benchmark
        self._index: dict[tuple[str | None, str], int] = {
            (scenario.segment_of(e.day), e.turn_id): e.index
            for e in scenario.exchanges if e.turn_id is not None}
        self._lines: dict[int, list[str]] = {e.index: [e.line()] for e in scenario.exchanges}
        version_at = {(f.key, self.turn_indices(v)[-1]): v for f in scenario.facts
                      for v in f.versions}
        for record in records:
            version = version_at.get((record.key, record.exchange_index))
            carried = self.turn_indices(version) if version else (record.exchange_index,)
            for index in carried:
                self._lines.setdefault(index, []).append(record.line())

    def turn_indices(self, version: FactVersion) -> tuple[int, ...]:
        segment = self.scenario.segment_of(version.day)
        return tuple(sorted(self._index[(segment, t)] for t in version.turns))

    def present(self, context: str, indices: Sequence[int]) -> list[bool]:
        return [any(holds_line(context, line) for line in self._lines.get(i, ()))
                for i in indices]

    def evidence_outcome(self, fact: Fact, day: int, context: str) -> str:
        state = fact_state(fact, day)
        if state.deleted:
            stated = {i for v in state.stated for i in self.turn_indices(v)}
            return (Outcome.LEAKED if any(self.present(context, sorted(stated)))
                    else Outcome.CLEAN).value
        current = self.turn_indices(state.current)
        old = sorted({i for v in state.superseded for i in self.turn_indices(v)}
                     - set(current))
        found, stale = self.present(context, current), any(self.present(context, old))
        if stale:
            return (Outcome.CONFLICT if any(found) else Outcome.STALE).value
        if all(found):
            return Outcome.CURRENT.value
        return (EvidenceOutcome.PARTIAL if any(found) else Outcome.MISSING).value

    def abstention_outcome(self, probe: Probe, context: str) -> str:
        segment = self.scenario.segment_of(probe.day)
        indices = [self._index[(segment, t)] for t in probe.evidence]
        return (EvidenceOutcome.PREMISE if any(self.present(context, indices))
                else EvidenceOutcome.NO_PREMISE).value

    def gold(self, fact: Fact, day: int) -> tuple[int, ...] | None:
        """The current version's exchanges (recall@k: all of them retrieved)."""
        state = fact_state(fact, day)
        return None if state.deleted else self.turn_indices(state.current)


def spellings(version: FactVersion) -> tuple[str, ...]:
    """Accepted spellings (the value when none is listed) that hold a word to match."""
    return tuple(s for s in version.answers or (version.value,) if tokens(s))


def value_outcome(fact: Fact, day: int, context: str) -> str | None:
    """The article's rule on accepted spellings, with deletions that may be re-stated;
    None when the current version has no spelling with a word to match."""
    state = fact_state(fact, day)
    if state.deleted:
        return (Outcome.LEAKED if any(has(context, s) for v in state.stated
                                      for s in spellings(v)) else Outcome.CLEAN).value
    current = spellings(state.current)
    if not current:
        return None
    old = [s for v in state.superseded for s in spellings(v)
           if not any(s in c for c in current)]
    has_current = any(has(context, s) for s in current)
    has_old = any(has(context, s) for s in old)
    if has_current and has_old:
        return Outcome.CONFLICT.value
    if has_current:
        return Outcome.CURRENT.value
    return (Outcome.STALE if has_old else Outcome.MISSING).value
