"""The noisy extractor: the perfect one with seeded errors of four kinds, each at its own
rate, so what extraction errors do to a profile can be swept.

Each record draws one uniform number per error class from a stream seeded by (seed,
class); a record errs when its draw is below the rate. The draws do not depend on the
rates, so raising a rate only adds errors: one seed's errors at 0.2 include those at 0.1.
- missed fact: a fact's first statement is not extracted (until its next change);
- missed update: a change is stored under a new key beside the old value (a conflict);
- false merge: a new fact overwrites the most recently written unrelated memory;
- missed deletion: a forget request is not acted on."""

from __future__ import annotations

import random

from membench.extraction.extractors import (
    EXTRACTORS,
    ConfigurableExtractor,
    FactRecord,
    RecordAction,
    perfect_extractor,
)
from membench.extraction.settings import NoiseSettings
from membench.scenario.model import Scenario

ERROR_CLASSES = ("missed_facts", "missed_updates", "false_merges", "missed_deletions")


def perturb(records: list[FactRecord], noise: NoiseSettings) -> list[FactRecord]:
    streams = {name: random.Random(f"{noise.seed}:{name}") for name in ERROR_CLASSES}
    live: dict[str, str] = {}  # memory key -> the gold key whose value it holds
    written: list[str] = []  # live memory keys, least recently written first
    seen: set[str] = set()  # gold keys stated before
    out = []

    def errs(name: str) -> bool:
        return streams[name].random() < getattr(noise, name)

    def write(key: str, gold: str, record: FactRecord) -> None:
        live[key] = gold
        if key in written:
            written.remove(key)
        written.append(key)
        out.append(FactRecord(key, record.action, record.value, record.day,
                              record.exchange_index, record.text))

    for record in records:
        draws = {name: errs(name) for name in ERROR_CLASSES}  # one draw each, always
        if record.action is RecordAction.DELETE:
            if draws["missed_deletions"]:
                continue
            for key in [k for k, gold in live.items() if gold == record.key]:
                del live[key]
                written.remove(key)
                out.append(FactRecord(key, record.action, None, record.day,
                                      record.exchange_index, record.text))
            continue
        holders = [k for k, gold in live.items() if gold == record.key]
        if record.key not in seen or not holders:
            seen.add(record.key)
            if draws["missed_facts"]:
                continue
            others = [k for k in written if live[k] != record.key]
            if draws["false_merges"] and others:
                write(others[-1], record.key, record)
            else:
                write(record.key, record.key, record)
        elif draws["missed_updates"]:
            write(f"{record.key}@{record.exchange_index}", record.key, record)
        else:
            write(holders[-1], record.key, record)
    return out


def noisy_extractor(scenario: Scenario, noise: NoiseSettings) -> list[FactRecord]:
    return perturb(perfect_extractor(scenario), noise)


EXTRACTORS.add("noisy", ConfigurableExtractor(
    lambda scenario, settings, vectors: noisy_extractor(scenario, settings.noise)))
