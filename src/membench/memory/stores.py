"""What an agent has remembered by the end of one day, in every store a policy may keep.

Stores are named, so a policy declares which ones it keeps and which it retrieves from,
and the delete-everywhere audit can inspect each of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

from membench.extraction.extractors import (
    FactRecord,
    deleted_keys,
    profile_records,
    records_through,
)
from membench.registry import Registry
from membench.retrieval.retrievers import Document, IndexCache
from membench.scenario.model import Exchange, Scenario
from membench.scenario.text import LoweredLines


class Memory:
    def __init__(self, scenario: Scenario, records: Sequence[FactRecord], day: int,
                 indexes: IndexCache) -> None:
        self.scenario = scenario
        self.day = day
        self.exchanges: tuple[Exchange, ...] = scenario.exchanges_through(day)
        first = scenario.first_day(day)  # a joined benchmark: this scenario's records only
        self.records = [r for r in records_through(records, day) if r.day >= first]
        self._indexes = indexes
        self._documents: dict[str, tuple[Document, ...]] = {}
        self._texts: dict[str, str] = {}
        self._lowered: dict[str, LoweredLines] = {}
        self._lines: dict[str, tuple[str, ...]] = {}

    @cached_property
    def _extracted(self) -> dict[int, str]:
        return {r.exchange_index: r.key for r in self.records}

    def documents(self, store: str) -> list[Document]:
        """The store's documents, built once per day (every probe of the day reads them)."""
        return list(self._stored(store))

    def _stored(self, store: str) -> tuple[Document, ...]:
        if store not in self._documents:
            self._documents[store] = tuple(STORES[store].build(self))
        return self._documents[store]

    def lines(self, store: str) -> tuple[str, ...]:
        """The store's lines, one tuple per day shared by every caller (no copy per probe:
        a 30,000-session transcript has 360,000 lines)."""
        if store not in self._lines:
            self._lines[store] = tuple(document.text for document in self._stored(store))
        return self._lines[store]

    def text(self, store: str) -> str:
        """The store's lines joined by newlines, built once per day (one string, shared)."""
        if store not in self._texts:
            self._texts[store] = "\n".join(self.lines(store))
        return self._texts[store]

    def lowered(self, store: str) -> LoweredLines:
        """The store's text lowercased for classification (`LoweredLines.has`), built
        from its lines once per day: it needs neither the joined text nor a lowercasing
        buffer of the whole store, and takes one byte per character."""
        if store not in self._lowered:
            self._lowered[store] = LoweredLines(self.lines(store))
        return self._lowered[store]

    def search(self, store: str, retriever: str, question: str, k: int) -> list[Document]:
        """The named retriever's top k over the store (see membench.retrieval.retrievers)."""
        found = self._indexes.retriever(retriever, store, self.day, self._stored(store))
        return found.search(question, k)


StoreBuilder = Callable[[Memory], list[Document]]


@dataclass(frozen=True)
class Store:
    build: StoreBuilder
    # A store that is the extraction record log itself (append-only): a policy keeping it
    # keeps every record, those of deleted facts included (the audit checks it). A profile
    # is rebuilt from the records each day only because that is how the bench replays
    # upserts; a deployed profile applies each record once and keeps just its lines, so it
    # is not one of these.
    keeps_record_log: bool = False


STORES: Registry[Store] = Registry("store")


def register_store(name: str, *, keeps_record_log: bool = False
                   ) -> Callable[[StoreBuilder], StoreBuilder]:
    def register(build: StoreBuilder) -> StoreBuilder:
        STORES.add(name, Store(build, keeps_record_log))
        return build

    return register


@register_store("session")
def _session(memory: Memory) -> list[Document]:
    return [Document(e.index, e.line()) for e in memory.exchanges if e.day == memory.day]


@register_store("transcript")
def _transcript(memory: Memory) -> list[Document]:
    return [Document(e.index, e.line()) for e in memory.exchanges]


@register_store("transcript_redacted")
def _transcript_redacted(memory: Memory) -> list[Document]:
    """Every exchange the extractor tied to a deleted fact is gone, the request included."""
    gone = deleted_keys(memory.records)
    removed = {index for index, key in memory._extracted.items() if key in gone}
    return [Document(e.index, e.line()) for e in memory.exchanges if e.index not in removed]


@register_store("transcript_unextracted")
def _transcript_unextracted(memory: Memory) -> list[Document]:
    """Only what the profile does not hold, so every fact lives in exactly one store."""
    return [Document(e.index, e.line()) for e in memory.exchanges
            if e.index not in memory._extracted]


@register_store("fact_log", keeps_record_log=True)
def _fact_log(memory: Memory) -> list[Document]:
    return [Document(r.exchange_index, r.line()) for r in memory.records]


@register_store("profile")
def _profile(memory: Memory) -> list[Document]:
    return [Document(r.exchange_index, r.line()) for r in profile_records(memory.records)]
