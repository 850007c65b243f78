"""What an agent has remembered by the end of one day, in every store a policy may keep.

Stores are named, so a policy declares which ones it keeps and which it retrieves from,
and the delete-everywhere audit can inspect each of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

from membench.core.extract import (
    FactRecord,
    deleted_keys,
    profile_records,
    records_through,
)
from membench.core.model import Exchange, Scenario
from membench.core.retrieval import Bm25Index
from membench.core.text import tokens


@dataclass(frozen=True)
class Document:
    source: int  # index of the exchange the text came from
    text: str


class Memory:
    def __init__(self, scenario: Scenario, records: Sequence[FactRecord], day: int,
                 indexes: IndexCache) -> None:
        self.scenario = scenario
        self.day = day
        self.exchanges: tuple[Exchange, ...] = scenario.exchanges_through(day)
        self.records = records_through(records, day)
        self._indexes = indexes
        self._documents: dict[str, tuple[Document, ...]] = {}

    @cached_property
    def _extracted(self) -> dict[int, str]:
        return {r.exchange_index: r.key for r in self.records}

    def documents(self, store: str) -> list[Document]:
        """The store's documents, built once per day (every probe of the day reads them)."""
        if store not in self._documents:
            try:
                build = STORES[store]
            except KeyError:
                raise KeyError(f"unknown store {store!r}; known: {', '.join(STORES)}") from None
            self._documents[store] = tuple(build(self))
        return list(self._documents[store])

    def lines(self, store: str) -> list[str]:
        return [document.text for document in self.documents(store)]

    def retrieve(self, store: str, query: str, k: int) -> list[Document]:
        documents = self.documents(store)
        index = self._indexes.get(store, self.day, documents)
        return [documents[i] for i in index.top_k(query, k)]


StoreBuilder = Callable[[Memory], list[Document]]
STORES: dict[str, StoreBuilder] = {}


def register_store(name: str) -> Callable[[StoreBuilder], StoreBuilder]:
    def register(build: StoreBuilder) -> StoreBuilder:
        STORES[name] = build
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
    return [Document(e.index, e.line()) for e in memory.exchanges
            if memory._extracted.get(e.index) not in gone]


@register_store("transcript_unextracted")
def _transcript_unextracted(memory: Memory) -> list[Document]:
    """Only what the profile does not hold, so every fact lives in exactly one store."""
    return [Document(e.index, e.line()) for e in memory.exchanges
            if e.index not in memory._extracted]


@register_store("fact_log")
def _fact_log(memory: Memory) -> list[Document]:
    return [Document(r.exchange_index, r.line()) for r in memory.records]


@register_store("profile")
def _profile(memory: Memory) -> list[Document]:
    return [Document(r.exchange_index, r.line()) for r in profile_records(memory.records)]


class IndexCache:
    """BM25 indexes per (store, day). Pre-tokenized corpora from the index stage may be
    supplied; they are used only when their sources match the documents exactly."""

    def __init__(self, tokenized: dict[tuple[str, int], tuple[list[int], list[list[str]]]]
                 | None = None) -> None:
        self._tokenized = tokenized or {}
        self._built: dict[tuple[str, int], Bm25Index] = {}

    def get(self, store: str, day: int, documents: Sequence[Document]) -> Bm25Index:
        key = (store, day)
        if key not in self._built:
            sources = [d.source for d in documents]
            supplied = self._tokenized.get(key)
            if supplied is not None and supplied[0] != sources:
                raise ValueError(
                    f"index for store {store!r} day {day} does not match the scenario: "
                    "rerun the index stage"
                )
            corpus = supplied[1] if supplied else [tokens(d.text) for d in documents]
            self._built[key] = Bm25Index.from_tokens(corpus)
        return self._built[key]
