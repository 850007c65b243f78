"""What an agent has remembered by the end of one day, in every store a policy may keep.

Stores are named, so a policy declares which ones it keeps and which it retrieves from,
and the delete-everywhere audit can inspect each of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from membench.core.dense import DenseIndex, reciprocal_rank_fusion
from membench.core.embedding_cache import text_sha256
from membench.core.extract import (
    FactRecord,
    deleted_keys,
    profile_records,
    records_through,
)
from membench.core.model import Exchange, Scenario
from membench.core.retrieval import Bm25Index
from membench.core.stemming import stemmed_tokens
from membench.core.text import tokens

PLAIN, STEMMED = "plain", "stemmed"
ANALYZERS = {PLAIN: tokens, STEMMED: stemmed_tokens}
RRF_K = 60


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

    def retrieve(self, store: str, query: str, k: int, analyzer: str = PLAIN) -> list[Document]:
        """BM25 top-k (scores above zero only)."""
        documents = self.documents(store)
        index = self._indexes.get(store, self.day, documents, analyzer)
        return [documents[i] for i in index.top_k(query, k)]

    def retrieve_dense(self, store: str, query: str, k: int) -> list[Document]:
        """Cosine top-k over cached embeddings: always k documents (no score cut-off)."""
        documents = self.documents(store)
        if not documents:
            return []
        index = self._indexes.dense(store, self.day, documents)
        return [documents[i] for i in index.top_k(self._indexes.vector(query), k)]

    def retrieve_fused(self, store: str, query: str, k: int) -> list[Document]:
        """Reciprocal rank fusion (k=60) of BM25's and dense's top-k lists.

        Each retriever contributes its own top k, as Elasticsearch's default
        rank_window_size does; equal fused scores keep the earlier exchange first.
        """
        documents = self.documents(store)
        if not documents:
            return []
        lexical = self._indexes.get(store, self.day, documents)
        dense = self._indexes.dense(store, self.day, documents)
        rankings = [lexical.top_k(query, k), dense.top_k(self._indexes.vector(query), k)]
        return [documents[i] for i in reciprocal_rank_fusion(rankings, RRF_K, top=k)]


StoreBuilder = Callable[[Memory], list[Document]]
STORES: dict[str, StoreBuilder] = {}
# Stores that are the extraction record log itself (append-only): a policy keeping one keeps
# every record, those of deleted facts included (the audit checks it). A profile is rebuilt
# from the records each day only because that is how the bench replays upserts; a deployed
# profile applies each record once and keeps just its lines, so it is not one of these.
RECORD_STORES: set[str] = set()


def register_store(name: str, *, keeps_record_log: bool = False
                   ) -> Callable[[StoreBuilder], StoreBuilder]:
    def register(build: StoreBuilder) -> StoreBuilder:
        STORES[name] = build
        if keeps_record_log:
            RECORD_STORES.add(name)
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


@register_store("fact_log", keeps_record_log=True)
def _fact_log(memory: Memory) -> list[Document]:
    return [Document(r.exchange_index, r.line()) for r in memory.records]


@register_store("profile")
def _profile(memory: Memory) -> list[Document]:
    return [Document(r.exchange_index, r.line()) for r in profile_records(memory.records)]


class MissingEmbeddingError(ValueError):
    """A dense policy asked for a text the embedding stage did not embed."""


class IndexCache:
    """Search indexes per (store, day): BM25 (plain or stemmed) and dense.

    Pre-tokenized plain corpora from the index stage may be supplied; they are used only
    when their sources match the documents exactly. Dense search reads vectors by the
    text's SHA-256 from the embedding stage's table, so ranking never needs a model.
    """

    def __init__(self, tokenized: dict[tuple[str, int], tuple[list[int], list[list[str]]]]
                 | None = None, vectors: Mapping[str, np.ndarray] | None = None) -> None:
        self._tokenized = tokenized or {}
        self._vectors = vectors
        self._built: dict[tuple[str, int, str], Bm25Index] = {}
        self._dense: dict[tuple[str, int], DenseIndex] = {}

    def get(self, store: str, day: int, documents: Sequence[Document],
            analyzer: str = PLAIN) -> Bm25Index:
        key = (store, day, analyzer)
        if key not in self._built:
            tokenize = ANALYZERS[analyzer]
            sources = [d.source for d in documents]
            supplied = self._tokenized.get((store, day)) if analyzer == PLAIN else None
            if supplied is not None and supplied[0] != sources:
                raise ValueError(
                    f"index for store {store!r} day {day} does not match the scenario: "
                    "rerun the index stage"
                )
            corpus = supplied[1] if supplied else [tokenize(d.text) for d in documents]
            self._built[key] = Bm25Index.from_tokens(corpus, tokenize)
        return self._built[key]

    def vector(self, text: str) -> np.ndarray:
        if self._vectors is None:
            raise MissingEmbeddingError(
                "a dense policy needs embeddings: run the embed stage (membench embed)")
        try:
            return self._vectors[text_sha256(text)]
        except KeyError:
            raise MissingEmbeddingError(
                f"no embedding for {text[:60]!r}: rerun the embed stage") from None

    def dense(self, store: str, day: int, documents: Sequence[Document]) -> DenseIndex:
        key = (store, day)
        if key not in self._dense:
            self._dense[key] = DenseIndex(np.stack([self.vector(d.text) for d in documents]))
        return self._dense[key]
