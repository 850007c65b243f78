"""Tokenized retrieval corpora, per store and probe day, for the index stage."""

from __future__ import annotations

from collections.abc import Sequence

from membench.core.extract import FactRecord
from membench.core.memory import IndexCache, Memory
from membench.core.model import Scenario
from membench.core.text import tokens

IndexEntry = tuple[str, int, int, int, list[str]]  # store, day, position, source, tokens


def tokenized_corpora(scenario: Scenario, records: Sequence[FactRecord],
                      stores: Sequence[str]) -> list[IndexEntry]:
    entries: list[IndexEntry] = []
    for day in scenario.probe_days:
        memory = Memory(scenario, records, day, IndexCache())
        for store in stores:
            for position, document in enumerate(memory.documents(store)):
                entries.append((store, day, position, document.source, tokens(document.text)))
    return entries
