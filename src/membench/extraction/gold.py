"""The gold an extractor is judged against, read the same way from either scenario format:
every gold statement (a fact's version) and forget request (its deletion), with the
exchanges that carry it.

- Format 1: an exchange with a `fact_key` is one gold unit, a statement or a deletion by
  its kind.
- Format 2 (`Scenario.scoring` set): the gold is in the facts, not the exchanges. A
  version is one statement carried by all of its turns (several for a multi-hop version),
  a deletion one forget request carried by its turn. One turn may carry several facts.

A statement is an update when the fact was stated before and not deleted since; a
re-statement after a deletion is a first statement again."""

from __future__ import annotations

from dataclasses import dataclass

from membench.scenario.model import ExchangeKind, Fact, Scenario


@dataclass(frozen=True)
class GoldUnit:
    fact_key: str
    kind: ExchangeKind  # STATEMENT or DELETION
    exchanges: tuple[int, ...]  # the exchange indices that carry it, in order
    update: bool = False  # a statement changing a live fact (not its first statement)

    @property
    def last(self) -> int:
        return self.exchanges[-1]


def gold_units(scenario: Scenario) -> list[GoldUnit]:
    """Every gold statement and forget request, in the order of their last exchange."""
    units = _format2_units(scenario) if scenario.scoring is not None else _format1_units(scenario)
    return sorted(units, key=lambda u: u.last)


def _format1_units(scenario: Scenario) -> list[GoldUnit]:
    units, live = [], set()
    for e in scenario.exchanges:
        if e.fact_key is None:
            continue
        if e.kind is ExchangeKind.DELETION:
            live.discard(e.fact_key)
        units.append(GoldUnit(e.fact_key, e.kind, (e.index,), e.fact_key in live))
        if e.kind is ExchangeKind.STATEMENT:
            live.add(e.fact_key)
    return units


def _format2_units(scenario: Scenario) -> list[GoldUnit]:
    segment = {day: scenario.segment_of(day)  # thousands of turns in an imported benchmark
               for day in {e.day for e in scenario.exchanges}}
    index = {(segment[e.day], e.turn_id): e.index
             for e in scenario.exchanges if e.turn_id is not None}
    units = []
    for fact in scenario.facts:
        units += _fact_units(fact, lambda day, turn: index[(segment[day], turn)])
    return units


def _fact_units(fact: Fact, exchange_of) -> list[GoldUnit]:
    """A fact's versions and deletions interleaved in conversation order (the validator
    guarantees that order by each version's last turn)."""
    events = [GoldUnit(fact.key, ExchangeKind.STATEMENT,
                       tuple(sorted(exchange_of(v.day, t) for t in v.turns)))
              for v in fact.versions]
    events += [GoldUnit(fact.key, ExchangeKind.DELETION, (exchange_of(d.day, d.turn),))
               for d in fact.deletions]
    units, live = [], False
    for unit in sorted(events, key=lambda u: u.last):
        is_statement = unit.kind is ExchangeKind.STATEMENT
        units.append(GoldUnit(unit.fact_key, unit.kind, unit.exchanges, is_statement and live))
        live = is_statement
    return units
