"""Runs every policy at every probe and classifies what it injects."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

from membench.extraction.extractors import FactRecord
from membench.memory.policies import Policy
from membench.memory.stores import Memory
from membench.retrieval.retrievers import IndexCache
from membench.scenario.model import Scenario
from membench.scoring.evidence import EvidenceScorer
from membench.scoring.given_rows import format2_fields
from membench.scoring.rules import outcome, outcome_by

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


# Counts of texts each given as its lines (the text is the lines joined by newlines): a
# store's count never needs its joined text (membench.tokenizer.TokenCounter.count_lines).
CountTokens = Callable[[Sequence[Sequence[str]]], list[int]]


def no_tokens(texts: Sequence[Sequence[str]]) -> list[int]:
    """A CountTokens for runs whose token columns nobody reads (no vocabulary loaded)."""
    return [0] * len(texts)


def run_bench(scenario: Scenario, records: Sequence[FactRecord], policies: Sequence[Policy],
              count_tokens: CountTokens, indexes: IndexCache | None = None,
              progress: Progress | None = None,
              memories: Callable[[int, IndexCache], Memory] | None = None,
              keep_contexts: bool = True) -> BenchResult:
    """Every probe day's rows in one result (bench_days gives them a day at a time)."""
    outcomes: list[OutcomeRow] = []
    stored: list[StoredRow] = []
    for day in bench_days(scenario, records, policies, count_tokens, indexes, progress,
                          memories, keep_contexts):
        outcomes += day.outcomes
        stored += day.stored
    return BenchResult(tuple(outcomes), tuple(stored))


def bench_days(scenario: Scenario, records: Sequence[FactRecord], policies: Sequence[Policy],
               count_tokens: CountTokens, indexes: IndexCache | None = None,
               progress: Progress | None = None,
               memories: Callable[[int, IndexCache], Memory] | None = None,
               keep_contexts: bool = True) -> Iterator[BenchResult]:
    """One result per probe day, in day order: a caller that writes each day's rows as they
    come holds one day's contexts, not the whole run's (gigabytes at a thousand sessions).
    count_tokens takes every distinct text of a day at once, so a counter can batch
    them; counting day by day keeps only the day's texts alive, not every day's stores.
    memories(day, indexes), if given, supplies each probe day's Memory (real stores).
    keep_contexts=False leaves every row's context empty once it is classified and counted:
    a caller that reads only outcomes and counts then holds one day's contexts at a time."""
    indexes = indexes or IndexCache()
    scorer = EvidenceScorer(scenario, records) if scenario.scoring else None
    for day in scenario.probe_days:
        memory = memories(day, indexes) if memories else Memory(scenario, records, day, indexes)
        probes = [p for p in scenario.probes if p.day == day]
        golds = {} if scorer else {p.fact_key: gold_evidence(scenario, p.fact_key, day)
                                   for p in probes}
        if progress:
            progress(f"day {day}: {len(policies)} policies x {len(probes)} probes")
        day_outcomes: list[tuple[object, OutcomeRow]] = []  # (what its count is under, row)
        day_stored: list[StoredRow] = []
        # Each distinct text to count -> its lines: a context by its string, a whole store
        # by ("store", name), whose joined text is built only if the row keeps it.
        lines_of: dict[object, Sequence[str]] = {}
        for policy in policies:
            for store in policy.stores:
                day_stored.append(StoredRow(policy.id, day, store, len(memory.lines(store)),
                                            tokens=0))  # counted below
                lines_of.setdefault(("store", store), memory.lines(store))
            for probe in probes:
                injection = policy.inject(memory, probe.question)
                whole = injection.store
                if whole is not None:
                    key: object = ("store", whole)
                    lines_of.setdefault(key, memory.lines(whole))
                    context = memory.text(whole) if keep_contexts or scorer else ""
                else:
                    key = context = injection.context
                    lines_of.setdefault(key, injection.lines)
                if scorer is not None:  # format 2
                    day_outcomes.append((key, OutcomeRow(
                        policy=policy.id, form=probe.form_name, day=day,
                        question=probe.question, injected_tokens=0,
                        context=context, retrieved=injection.retrieved,
                        **format2_fields(scenario, scorer, probe, day, context,
                                         injection.retrieved))))
                    continue
                fact = scenario.fact(probe.fact_key)
                gold = golds[fact.key]
                if whole is not None:
                    result = outcome_by(fact, day, memory.lowered(whole).has)
                else:
                    result = outcome(fact, day, context)
                day_outcomes.append((key, OutcomeRow(
                    policy=policy.id,
                    form=probe.form.value,
                    day=day,
                    fact_key=fact.key,
                    question=probe.question,
                    changed=sum(v.day <= day for v in fact.versions) > 1,
                    deleted=fact.deleted_at is not None and fact.deleted_at <= day,
                    outcome=result.value,
                    injected_tokens=0,  # counted below, with every other text at once
                    context=context,
                    retrieved=injection.retrieved,
                    gold_retrieved=None if injection.retrieved is None or gold is None
                    else gold in injection.retrieved,
                )))
        # Every distinct text of the day counted at once, each as its lines: a store's
        # joined text is never built for its count.
        tokens = dict(zip(lines_of, count_tokens(list(lines_of.values())), strict=True))
        del lines_of
        yield BenchResult(
            tuple(replace(r, injected_tokens=tokens[key],
                          context=r.context if keep_contexts else "")
                  for key, r in day_outcomes),
            tuple(replace(r, tokens=tokens[("store", r.store)]) for r in day_stored))
