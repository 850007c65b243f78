"""Tokenized retrieval corpora, per store and probe day, for the index stage."""

from __future__ import annotations

from collections.abc import Sequence

from membench.extraction.extractors import FactRecord
from membench.memory.stores import Memory
from membench.retrieval.retrievers import IndexCache
from membench.scenario.model import Scenario
from membench.scenario.text import tokens

IndexEntry = tuple[str, int, int, int, list[str]]  # store, day, position, source, tokens


def tokenized_corpora(scenario: Scenario, records: Sequence[FactRecord],
                      stores: Sequence[str]) -> list[IndexEntry]:
    entries: list[IndexEntry] = []
    tokenized: dict[str, list[str]] = {}  # each text tokenized once, whatever its days and stores
    for day in scenario.probe_days:
        memory = Memory(scenario, records, day, IndexCache())
        for store in stores:
            for position, document in enumerate(memory.documents(store)):
                words = tokenized.get(document.text)
                if words is None:
                    words = tokenized[document.text] = tokens(document.text)
                entries.append((store, day, position, document.source, words))
    return entries


def embedding_texts(scenario: Scenario, records: Sequence[FactRecord],
                    stores: Sequence[str]) -> list[str]:
    """Every document a dense policy can see on a probe day, then every probe question;
    each text once, in first-seen order."""
    texts: dict[str, None] = {}
    for day in scenario.probe_days:
        memory = Memory(scenario, records, day, IndexCache())
        for store in stores:
            texts.update(dict.fromkeys(memory.lines(store)))
    texts.update(dict.fromkeys(probe.question for probe in scenario.probes))
    return list(texts)
