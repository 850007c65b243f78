"""Retrievers, in BEIR's spirit: one is built over a store's documents on one day and
answers search(question, k).

Each kind of search is one small class in RETRIEVERS. It declares what it keeps (a BM25
index and its analyzer, document vectors), and the index and embed stages, the deletion
audit and IndexCache read those declarations, so adding a retriever is adding a class.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from membench.registry import Registry
from membench.retrieval.bm25 import Bm25Index, TokenPool
from membench.retrieval.dense import DenseIndex, reciprocal_rank_fusion
from membench.retrieval.embedding_cache import text_sha256
from membench.retrieval.stemming import stemmed_tokens
from membench.scenario.text import tokens

PLAIN, STEMMED = "plain", "stemmed"
ANALYZERS = {PLAIN: tokens, STEMMED: stemmed_tokens}
RRF_K = 60


@dataclass(frozen=True, slots=True)  # a store of a thousand days holds 100,000s
class Document:
    source: int  # index of the exchange the text came from
    text: str


class MissingEmbeddingError(ValueError):
    """A dense policy asked for a text the embedding stage did not embed."""


class IndexCache:
    """Search indexes per (store, day), shared by every policy and the audit.

    Each document is tokenized once per analyzer, in a TokenPool that grows as documents
    arrive, however many days and stores hold it; a day's BM25 index is a view of the
    pool with that day's statistics. Only the last day's indexes and retrievers are kept,
    so memory holds one day's views, not a copy of each store per day.

    A cache holds one record set's stores: a run with other records (another extractor)
    needs its own cache (`sibling`), or it would reuse the first set's indexes.

    Pre-tokenized plain corpora from the index stage may be supplied; they are used only
    when their sources match the documents exactly. Dense search reads vectors by the
    text's SHA-256 from the embedding stage's table, so ranking never needs a model.
    """

    def __init__(self, tokenized: dict[tuple[str, int], tuple[list[int], list[list[str]]]]
                 | None = None, vectors: Mapping[str, np.ndarray] | None = None) -> None:
        self._tokenized = tokenized or {}
        self._vectors = vectors
        self._pools: dict[str, TokenPool] = {}
        self._day: int | None = None
        self._bm25: dict[tuple[str, int, str], Bm25Index] = {}
        self._dense: dict[tuple[str, int], DenseIndex] = {}
        self._retrievers: dict[tuple[str, str, int], Retriever] = {}

    def sibling(self) -> IndexCache:
        """An empty cache for another record set, with the same embeddings."""
        return IndexCache(vectors=self._vectors)

    def _on_day(self, day: int) -> None:
        """Drops the views of another day (a day's queries come together)."""
        if day != self._day:
            self._day = day
            self._bm25.clear()
            self._dense.clear()
            self._retrievers.clear()

    def pool(self, analyzer: str) -> TokenPool:
        if analyzer not in self._pools:
            self._pools[analyzer] = TokenPool(ANALYZERS[analyzer])
        return self._pools[analyzer]

    def bm25(self, store: str, day: int, documents: Sequence[Document],
             analyzer: str = PLAIN) -> Bm25Index:
        self._on_day(day)
        key = (store, day, analyzer)
        if key not in self._bm25:
            sources = [d.source for d in documents]
            supplied = self._tokenized.get((store, day)) if analyzer == PLAIN else None
            if supplied is not None and supplied[0] != sources:
                raise ValueError(
                    f"index for store {store!r} day {day} does not match the scenario: "
                    "rerun the index stage"
                )
            pool = self.pool(analyzer)
            corpus = supplied[1] if supplied else [None] * len(documents)
            ids = [pool.add(d.text, words) for d, words in zip(documents, corpus, strict=True)]
            self._bm25[key] = Bm25Index.from_pool(pool, ids)
        return self._bm25[key]

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
        self._on_day(day)
        key = (store, day)
        if key not in self._dense:
            self._dense[key] = DenseIndex(np.stack([self.vector(d.text) for d in documents]))
        return self._dense[key]

    def retriever(self, name: str, store: str, day: int,
                  documents: Sequence[Document]) -> Retriever:
        """The named retriever over the store's documents that day, built once."""
        self._on_day(day)
        key = (name, store, day)
        if key not in self._retrievers:
            corpus = SearchCorpus(store, day, tuple(documents), self)
            self._retrievers[key] = RETRIEVERS[name](corpus)
        return self._retrievers[key]


@dataclass(frozen=True)
class SearchCorpus:
    """One store's documents on one day, with the shared indexes a retriever builds on."""

    store: str
    day: int
    documents: tuple[Document, ...]
    indexes: IndexCache

    def bm25(self, analyzer: str) -> Bm25Index:
        return self.indexes.bm25(self.store, self.day, self.documents, analyzer)

    def dense(self) -> DenseIndex:
        return self.indexes.dense(self.store, self.day, self.documents)

    def vector(self, text: str) -> np.ndarray:
        return self.indexes.vector(text)


class Retriever(ABC):
    analyzer: ClassVar[str | None] = None  # the BM25 index it keeps (index stage, audit)
    needs_vectors: ClassVar[bool] = False  # ranks by embeddings (embed stage, audit)

    def __init__(self, corpus: SearchCorpus) -> None:
        self.corpus = corpus

    @abstractmethod
    def search(self, question: str, k: int) -> list[Document]: ...

    def _documents(self, positions: Sequence[int]) -> list[Document]:
        return [self.corpus.documents[i] for i in positions]


RETRIEVERS: Registry[type[Retriever]] = Registry("retriever")


@RETRIEVERS.register("bm25")
class Bm25(Retriever):
    """BM25 top-k; only documents scoring above zero."""

    analyzer = PLAIN

    def search(self, question, k):
        return self._documents(self.corpus.bm25(self.analyzer).top_k(question, k))


@RETRIEVERS.register("bm25_stemmed")
class StemmedBm25(Bm25):
    analyzer = STEMMED


@RETRIEVERS.register("dense")
class Dense(Retriever):
    """Cosine top-k over cached embeddings: always k documents (no score cut-off)."""

    needs_vectors = True

    def search(self, question, k):
        if not self.corpus.documents:
            return []
        return self._documents(self.corpus.dense().top_k(self.corpus.vector(question), k))


@RETRIEVERS.register("hybrid")
class Fusion(Retriever):
    """Reciprocal rank fusion (k=60) of BM25's and dense's top-k lists.

    Each retriever contributes its own top k, as Elasticsearch's default
    rank_window_size does; equal fused scores keep the earlier exchange first.
    """

    analyzer = PLAIN
    needs_vectors = True

    def search(self, question, k):
        if not self.corpus.documents:
            return []
        rankings = [self.corpus.bm25(PLAIN).top_k(question, k),
                    self.corpus.dense().top_k(self.corpus.vector(question), k)]
        return self._documents(reciprocal_rank_fusion(rankings, RRF_K, top=k))
