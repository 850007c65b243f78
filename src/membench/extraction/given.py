"""The perfect extractor on a format-2 scenario: the gold is in the facts (each version
points at the turns that state it, each deletion at the turn that asks), not in exchanges.

One record per version, made when its last turn is said, its text the version's turns
(speaker: text, joined by " / "); one delete record per deletion."""

from __future__ import annotations

from membench.extraction.records import FactRecord, RecordAction
from membench.scenario.model import Scenario


def given_records(scenario: Scenario) -> list[FactRecord]:
    by_turn = {(scenario.segment_of(e.day), e.turn_id): e
               for e in scenario.exchanges if e.turn_id is not None}
    records = []
    for fact in scenario.facts:
        for version in fact.versions:
            segment = scenario.segment_of(version.day)
            turns = sorted((by_turn[(segment, t)] for t in version.turns),
                           key=lambda e: e.index)
            text = " / ".join(f"{e.speaker}: {e.user}" for e in turns)
            records.append(FactRecord(fact.key, RecordAction.SET, version.value,
                                      turns[-1].day, turns[-1].index, text))
        for deletion in fact.deletions:
            exchange = by_turn[(scenario.segment_of(deletion.day), deletion.turn)]
            records.append(FactRecord(fact.key, RecordAction.DELETE, None, exchange.day,
                                      exchange.index, f"{exchange.speaker}: {exchange.user}"))
    return sorted(records, key=lambda r: r.exchange_index)
