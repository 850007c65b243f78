"""Runs every policy at every probe and classifies what it injects."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from membench.extraction.extractors import FactRecord
from membench.memory.policies import Policy
from membench.memory.stores import Memory
from membench.retrieval.retrievers import IndexCache
from membench.scenario.model import Scenario
from membench.scoring.evidence import EvidenceScorer
from membench.scoring.given_rows import format2_fields
from membench.scoring.rules import outcome

Progress = Callable[[str], None]


@dataclass(frozen=True)
class OutcomeRow:
    policy: str
    form: str
    day: int
    fact_key: str
    question: str
    changed: bool  # the fact had more than one version by this day
    deleted: bool  # the user had asked to forget it by this day
    outcome: str
    injected_tokens: int
    context: str
    retrieved: tuple[int, ...] | None
    # Did the exchange that stated the current value make it into the top-k? (recall@k of
    # the gold evidence; None for policies that retrieve nothing and for deleted facts)
    gold_retrieved: bool | None = None
    # format 2 only (None / () otherwise): see membench.scoring.given_rows
    scenario: str | None = None
    probe_id: str | None = None
    tags: tuple[tuple[str, str], ...] = ()
    value_outcome: str | None = None
    evidence_outcome: str | None = None


@dataclass(frozen=True)
class StoredRow:
    policy: str
    day: int
    store: str
    lines: int
    tokens: int  # o200k_base tokens of the store's lines joined by newlines


@dataclass(frozen=True)
class BenchResult:
    outcomes: tuple[OutcomeRow, ...]
    stored: tuple[StoredRow, ...]


def gold_evidence(scenario: Scenario, fact_key: str, day: int) -> int | None:
    """The exchange that stated the fact's current value by `day`; None once deleted."""
    fact = scenario.fact(fact_key)
    if fact.deleted_at is not None and fact.deleted_at <= day:
        return None
    current = [v for v in fact.versions if v.day <= day][-1]
    return next(e.index for e in scenario.exchanges
                if e.fact_key == fact_key and (e.day, e.slot) == (current.day, current.slot))


CountTokens = Callable[[Sequence[str]], list[int]]


def run_bench(scenario: Scenario, records: Sequence[FactRecord], policies: Sequence[Policy],
              count_tokens: CountTokens, indexes: IndexCache | None = None,
              progress: Progress | None = None,
              memories: Callable[[int, IndexCache], Memory] | None = None) -> BenchResult:
    """count_tokens takes every distinct text of a day at once, so a counter can batch
    them; counting day by day keeps only the day's texts alive, not every day's stores.
    memories(day, indexes), if given, supplies each probe day's Memory (real stores)."""
    indexes = indexes or IndexCache()
    outcomes: list[OutcomeRow] = []
    stored: list[StoredRow] = []
    scorer = EvidenceScorer(scenario, records) if scenario.scoring else None
    for day in scenario.probe_days:
        memory = memories(day, indexes) if memories else Memory(scenario, records, day, indexes)
        probes = [p for p in scenario.probes if p.day == day]
        golds = {} if scorer else {p.fact_key: gold_evidence(scenario, p.fact_key, day)
                                   for p in probes}
        if progress:
            progress(f"day {day}: {len(policies)} policies x {len(probes)} probes")
        day_outcomes: list[OutcomeRow] = []
        day_stored: list[tuple[StoredRow, str]] = []  # each row with its store's text
        for policy in policies:
            for store in policy.stores:
                day_stored.append((StoredRow(policy.id, day, store, len(memory.lines(store)),
                                             tokens=0), memory.text(store)))  # counted below
            for probe in probes:
                if scorer is not None:  # format 2
                    injection = policy.inject(memory, probe.question)
                    day_outcomes.append(OutcomeRow(
                        policy=policy.id, form=probe.form_name, day=day,
                        question=probe.question, injected_tokens=0,
                        context=injection.context, retrieved=injection.retrieved,
                        **format2_fields(scenario, scorer, probe, day, injection.context,
                                         injection.retrieved)))
                    continue
                fact = scenario.fact(probe.fact_key)
                injection = policy.inject(memory, probe.question)
                context = injection.context
                gold = golds[fact.key]
                day_outcomes.append(OutcomeRow(
                    policy=policy.id,
                    form=probe.form.value,
                    day=day,
                    fact_key=fact.key,
                    question=probe.question,
                    changed=sum(v.day <= day for v in fact.versions) > 1,
                    deleted=fact.deleted_at is not None and fact.deleted_at <= day,
                    outcome=outcome(fact, day, context).value,
                    injected_tokens=0,  # counted below, with every other text at once
                    context=context,
                    retrieved=injection.retrieved,
                    gold_retrieved=None if injection.retrieved is None or gold is None
                    else gold in injection.retrieved,
                ))
        texts = list(dict.fromkeys([r.context for r in day_outcomes]
                                   + [text for _, text in day_stored]))
        counts = dict(zip(texts, count_tokens(texts), strict=True))
        outcomes += (replace(r, injected_tokens=counts[r.context]) for r in day_outcomes)
        stored += (replace(r, tokens=counts[text]) for r, text in day_stored)
    return BenchResult(tuple(outcomes), tuple(stored))
