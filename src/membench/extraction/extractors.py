"""Turns exchanges into fact records. Policies read records, never the scenario's gold labels,
so a real extractor can replace the perfect one without touching any policy."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from membench.extraction.given import given_records
from membench.extraction.records import FactRecord, RecordAction
from membench.extraction.settings import ExtractSettings
from membench.registry import Registry
from membench.scenario.model import ExchangeKind, Scenario

Extractor = Callable[[Scenario], list[FactRecord]]
# A plugin module registers its own (see membench.plugins); params name one by key.
EXTRACTORS: Registry[Extractor] = Registry("extractor")


def register_extractor(name: str) -> Callable[[Extractor], Extractor]:
    return EXTRACTORS.register(name)


@register_extractor("perfect")
def perfect_extractor(scenario: Scenario) -> list[FactRecord]:
    """The article's assumption: every fact exchange recognized and mapped to the right key."""
    if scenario.scoring is not None:  # format 2: from the facts' version and deletion turns
        return given_records(scenario)
    records = []
    for exchange in scenario.exchanges:
        if exchange.fact_key is None:
            continue
        fact = scenario.fact(exchange.fact_key)
        if exchange.kind is ExchangeKind.DELETION:
            action, value = RecordAction.DELETE, None
        else:
            action = RecordAction.SET
            value = next(v.value for v in fact.versions
                         if (v.day, v.slot) == (exchange.day, exchange.slot))
        records.append(FactRecord(fact.key, action, value, exchange.day, exchange.index,
                                  exchange.user))
    return records


def records_through(records: Sequence[FactRecord], day: int) -> list[FactRecord]:
    return [r for r in records if r.day <= day]


def profile_records(records: Sequence[FactRecord]) -> list[FactRecord]:
    """One record per key, overwritten on change, removed on delete (the article's profile)."""
    by_key: dict[str, FactRecord] = {}
    for record in records:
        if record.action is RecordAction.DELETE:
            by_key.pop(record.key, None)
        else:
            by_key[record.key] = record
    return list(by_key.values())


def deleted_keys(records: Sequence[FactRecord]) -> set[str]:
    return {r.key for r in records if r.action is RecordAction.DELETE}


TurnVectorMap = Mapping[str, Any]  # text SHA-256 -> grid vector (the embed_turns stage's)
Build = Callable[[Scenario, ExtractSettings, "TurnVectorMap | None"], list[FactRecord]]


@dataclass(frozen=True)
class ConfigurableExtractor:
    """An extractor that reads params.yaml's `extract` settings (and, if it compares
    meanings, the turns' vectors): run it through extractor_for, with the settings."""

    build: Build
    reads_vectors: Callable[[ExtractSettings], bool] = lambda settings: False

    def __call__(self, scenario: Scenario) -> list[FactRecord]:
        raise TypeError("this extractor reads params.yaml's extract settings: "
                        "call extractor_for(name, params.extraction)")


def extractor_for(name: str, settings: ExtractSettings | None = None,
                  vectors: TurnVectorMap | None = None) -> Extractor:
    """The registered extractor with these settings and turn vectors (a plain extractor
    ignores both)."""
    registered = EXTRACTORS[name]
    if isinstance(registered, ConfigurableExtractor):
        if settings is None:
            raise TypeError(f"extractor {name!r} reads params.yaml's extract settings: "
                            "pass them")
        return lambda scenario: registered.build(scenario, settings, vectors)
    return registered


def reads_turn_vectors(name: str, settings: ExtractSettings) -> bool:
    """Whether the extractor needs the embed_turns stage's vectors with these settings."""
    registered = EXTRACTORS[name]
    return isinstance(registered, ConfigurableExtractor) and registered.reads_vectors(settings)
