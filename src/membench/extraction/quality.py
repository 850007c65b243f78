"""Extraction quality against the scenario's gold labels, for any extractor's records.

Only this module (through extraction/gold.py, which reads either format's gold as
statement and forget-request units) and the perfect extractor read the gold: the records
are replayed in order, each memory key tracking which gold facts its value states (those
the record's turn states), and every record is judged by what it did to those memories.
- detection: the exchanges that produced a record, against the gold turns (precision),
  and the gold units with a record from any of their turns (recall);
- an update (a gold change of a live fact) is correct when it overwrites a memory holding
  that fact; missed when it is written elsewhere while the old value stays (a conflict
  inside the profile); a multi-turn update is judged at the first of its turns that does
  either;
- a false merge overwrites a memory holding only facts the turn does not state (those
  facts are lost);
- a deletion is recalled when the forget request removes a memory holding the fact.
Each scenario of a joined benchmark is replayed with its own memory, as the bench does.
Each error is also an event (day, fact it harms, class), so probe outcomes can be blamed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from membench.extraction.extractors import FactRecord, RecordAction
from membench.extraction.gold import GoldUnit, gold_units
from membench.scenario.model import Exchange, ExchangeKind, Scenario

ERROR_CLASSES = ("missed_fact", "missed_update", "false_merge", "missed_deletion",
                 "false_deletion")


@dataclass(frozen=True)
class ErrorEvent:
    day: int
    fact_key: str  # the gold fact the error harms
    error: str  # one of ERROR_CLASSES


@dataclass
class Quality:
    detected: int = 0  # exchanges that produced a record
    detected_gold: int = 0  # of those, gold statements or forget requests
    gold: int = 0  # gold statements and forget requests
    updates: int = 0  # gold changes of a fact (not its first statement)
    updates_correct: int = 0
    missed_updates: int = 0
    false_merges: int = 0
    deletions: int = 0
    deletions_recalled: int = 0
    false_deletions: int = 0
    missed_facts: int = 0  # gold first statements with no record
    events: list[ErrorEvent] = field(default_factory=list)
    # format 2: gold units with a record from any of their turns (the recall numerator;
    # in format 1 each unit is one exchange, so it is detected_gold)
    gold_found: int | None = None

    def as_json(self) -> dict:
        def ratio(n: int, d: int) -> float | None:
            return round(n / d, 4) if d else None

        found = {} if self.gold_found is None else {"gold_found": self.gold_found}
        return {
            "detected": self.detected, "detected_gold": self.detected_gold, "gold": self.gold,
            **found,
            "detection_precision": ratio(self.detected_gold, self.detected),
            "detection_recall": ratio(self.detected_gold if self.gold_found is None
                                      else self.gold_found, self.gold),
            "updates": self.updates, "updates_correct": self.updates_correct,
            "update_accuracy": ratio(self.updates_correct, self.updates),
            "missed_updates": self.missed_updates, "false_merges": self.false_merges,
            "missed_facts": self.missed_facts, "deletions": self.deletions,
            "deletions_recalled": self.deletions_recalled,
            "deletion_recall": ratio(self.deletions_recalled, self.deletions),
            "false_deletions": self.false_deletions,
        }


def measure(scenario: Scenario, records: Sequence[FactRecord]) -> Quality:
    units = gold_units(scenario)
    by_exchange: dict[int, list[FactRecord]] = {}
    for record in records:
        by_exchange.setdefault(record.exchange_index, []).append(record)
    replay = _Replay(scenario, units, by_exchange)
    segments = {day: scenario.segment_of(day) for day in {e.day for e in scenario.exchanges}}
    segment = None
    for exchange in scenario.exchanges:
        if segments[exchange.day] != segment:  # each scenario its own memory
            segment = segments[exchange.day]
            replay.holds, replay.carries = {}, {}
        replay.exchange(exchange)
    return replay.q


class _Replay:
    """The records replayed exchange by exchange against the memories they write."""

    def __init__(self, scenario: Scenario, units: list[GoldUnit],
                 by_exchange: dict[int, list[FactRecord]]) -> None:
        self.by_exchange = by_exchange
        self.exchanges = {e.index: e for e in scenario.exchanges}
        self.at: dict[int, list[GoldUnit]] = {}  # exchange index -> the gold units it carries
        for unit in units:
            for index in unit.exchanges:
                self.at.setdefault(index, []).append(unit)
        self.q = Quality(detected=len(by_exchange),
                         detected_gold=len(set(by_exchange) & set(self.at)), gold=len(units),
                         updates=sum(u.update for u in units),
                         deletions=sum(u.kind is ExchangeKind.DELETION for u in units))
        if scenario.scoring is not None:  # format 2: a unit is found from any of its turns
            self.q.gold_found = sum(self._recorded(u) for u in units)
        self.judged: set[GoldUnit] = set()  # updates already judged (at an earlier turn)
        self.holds: dict[str, frozenset[str]] = {}  # live memory key -> gold facts it states
        self.carries: dict[str, frozenset[int]] = {}  # live memory key -> turns it carries

    def _recorded(self, unit: GoldUnit) -> bool:
        return any(i in self.by_exchange for i in unit.exchanges)

    def _carried(self, record: FactRecord, here: list[GoldUnit]) -> frozenset[int]:
        """The turns a record carries: its own, and earlier turns of the statements it
        ends whose words it holds (as the perfect extractor's joined text does)."""
        def words(i: int) -> str:
            return f"{self.exchanges[i].speaker}: {self.exchanges[i].user}"
        return frozenset({record.exchange_index} | {
            i for u in here for i in u.exchanges
            if i < record.exchange_index and words(i) in record.text})

    def _kept(self, unit: GoldUnit) -> bool:
        """Every turn of the statement is carried by a live memory."""
        return all(any(i in c for c in self.carries.values()) for i in unit.exchanges)

    def _event(self, day: int, fact: str, error: str) -> None:
        self.q.events.append(ErrorEvent(day, fact, error))

    def _lost(self, before: frozenset[str], kept: frozenset[str], key: str) -> list[str]:
        """The facts a memory held that overwriting or removing it loses: all of them when
        the turn states none of them, else those no other live memory holds."""
        if not before & kept:
            return sorted(before)
        return sorted(f for f in before - kept
                      if not any(f in v for k, v in self.holds.items() if k != key))

    def exchange(self, exchange: Exchange) -> None:
        q, day = self.q, exchange.day
        own = self.by_exchange.get(exchange.index, [])
        here = self.at.get(exchange.index, [])
        facts = frozenset(u.fact_key for u in here)
        stated = frozenset(u.fact_key for u in here if u.kind is ExchangeKind.STATEMENT)
        for unit in here:
            if unit.kind is ExchangeKind.DELETION:
                self._deletion(day, unit.fact_key, own)
            elif not unit.update and unit.last == exchange.index and not self._recorded(unit):
                q.missed_facts += 1
                self._event(day, unit.fact_key, "missed_fact")
        updates = [u for u in here if u.update and u not in self.judged]
        for record in own:
            before = self.holds.get(record.key, frozenset())
            if record.action is RecordAction.DELETE:
                if lost := self._lost(before, facts, record.key):
                    q.false_deletions += 1
                    for fact in lost:
                        self._event(day, fact, "false_deletion")
                self.holds.pop(record.key, None)
                self.carries.pop(record.key, None)
                continue
            if lost := self._lost(before, stated, record.key):
                q.false_merges += 1
                for fact in lost:
                    self._event(day, fact, "false_merge")
            for unit in updates:
                if unit.fact_key in before:
                    q.updates_correct += 1
                    self.judged.add(unit)
                elif any(unit.fact_key in v for k, v in self.holds.items() if k != record.key):
                    q.missed_updates += 1
                    self._event(day, unit.fact_key, "missed_update")
                    self.judged.add(unit)
            updates = [u for u in updates if u not in self.judged]
            self.holds[record.key] = stated
            self.carries[record.key] = self._carried(record, here)
        for unit in here:  # a first statement found, but some of its turns lost: partial
            if unit.kind is ExchangeKind.STATEMENT and not unit.update \
                    and unit.last == exchange.index and self._recorded(unit) \
                    and not self._kept(unit):
                self._event(day, unit.fact_key, "missed_fact")

    def _deletion(self, day: int, fact: str, own: Sequence[FactRecord]) -> None:
        """Recalled when a delete here removes a memory holding the fact; missed when none
        does while some memory still holds it."""
        removed = {r.key for r in own if r.action is RecordAction.DELETE}
        if any(fact in self.holds.get(k, ()) for k in removed):
            self.q.deletions_recalled += 1
        elif any(fact in v for v in self.holds.values()):
            self._event(day, fact, "missed_deletion")


def blame(events: Sequence[ErrorEvent], fact_key: str, day: int) -> str | None:
    """The first error class (in ERROR_CLASSES order) that hit the fact by that day."""
    hit = {e.error for e in events if e.fact_key == fact_key and e.day <= day}
    return next((c for c in ERROR_CLASSES if c in hit), None)
