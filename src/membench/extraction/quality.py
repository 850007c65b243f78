"""Extraction quality against the scenario's gold labels, for any extractor's records.

Only this module and the perfect extractor read the gold (Exchange.fact_key and the fact
table): the records are replayed in order, each memory key tracking which gold fact its
value belongs to, and every record is judged by what it did to those memories.
- detection: the exchanges that produced a record, against the gold statements and
  forget requests (precision and recall);
- an update (a gold change of a fact some memory holds) is correct when it overwrites a
  memory holding that fact; missed when it is written elsewhere while the old value stays
  (a conflict inside the profile);
- a false merge overwrites a memory holding another fact (that fact is lost);
- a deletion is recalled when the forget request removes a memory holding the fact.
Each error is also an event (day, fact it harms, class), so probe outcomes can be blamed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from membench.extraction.extractors import FactRecord, RecordAction
from membench.scenario.model import ExchangeKind, Scenario

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

    def as_json(self) -> dict:
        def ratio(n: int, d: int) -> float | None:
            return round(n / d, 4) if d else None

        return {
            "detected": self.detected, "detected_gold": self.detected_gold, "gold": self.gold,
            "detection_precision": ratio(self.detected_gold, self.detected),
            "detection_recall": ratio(self.detected_gold, self.gold),
            "updates": self.updates, "updates_correct": self.updates_correct,
            "update_accuracy": ratio(self.updates_correct, self.updates),
            "missed_updates": self.missed_updates, "false_merges": self.false_merges,
            "missed_facts": self.missed_facts, "deletions": self.deletions,
            "deletions_recalled": self.deletions_recalled,
            "deletion_recall": ratio(self.deletions_recalled, self.deletions),
            "false_deletions": self.false_deletions,
        }


def measure(scenario: Scenario, records: Sequence[FactRecord]) -> Quality:
    gold = {e.index: e for e in scenario.exchanges if e.fact_key is not None}
    by_exchange: dict[int, list[FactRecord]] = {}
    for record in records:
        by_exchange.setdefault(record.exchange_index, []).append(record)
    q = Quality(detected=len(by_exchange), detected_gold=len(set(by_exchange) & set(gold)),
                gold=len(gold))
    holds: dict[str, str | None] = {}  # live memory key -> gold fact of its value
    stated: set[str] = set()
    for exchange in scenario.exchanges:
        own = by_exchange.get(exchange.index, [])
        fact = exchange.fact_key
        if exchange.kind is ExchangeKind.DELETION and fact is not None:
            q.deletions += 1
            removed = {r.key for r in own if r.action is RecordAction.DELETE}
            if any(holds.get(k) == fact for k in removed):
                q.deletions_recalled += 1
            elif any(v == fact for v in holds.values()):
                q.events.append(ErrorEvent(exchange.day, fact, "missed_deletion"))
        is_update = fact is not None and exchange.kind is ExchangeKind.STATEMENT \
            and fact in stated
        if is_update:
            q.updates += 1
        if fact is not None and exchange.kind is ExchangeKind.STATEMENT and not own \
                and fact not in stated:
            q.missed_facts += 1
            q.events.append(ErrorEvent(exchange.day, fact, "missed_fact"))
        for record in own:
            before = holds.get(record.key)
            if record.action is RecordAction.DELETE:
                if before is not None and before != fact:
                    q.false_deletions += 1
                    q.events.append(ErrorEvent(exchange.day, before, "false_deletion"))
                holds.pop(record.key, None)
                continue
            old_elsewhere = any(v == fact for k, v in holds.items() if k != record.key)
            if before is not None and before != fact:
                q.false_merges += 1
                q.events.append(ErrorEvent(exchange.day, before, "false_merge"))
            if is_update:
                if before == fact:
                    q.updates_correct += 1
                elif old_elsewhere:
                    q.missed_updates += 1
                    q.events.append(ErrorEvent(exchange.day, fact, "missed_update"))
            holds[record.key] = fact
        if fact is not None and exchange.kind is ExchangeKind.STATEMENT:
            stated.add(fact)
    return q


def blame(events: Sequence[ErrorEvent], fact_key: str, day: int) -> str | None:
    """The first error class (in ERROR_CLASSES order) that hit the fact by that day."""
    hit = {e.error for e in events if e.fact_key == fact_key and e.day <= day}
    return next((c for c in ERROR_CLASSES if c in hit), None)
