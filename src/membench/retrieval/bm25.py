"""Lexical retrieval: rank-bm25's BM25Okapi with its default parameters, computed sparsely.

rank-bm25 is the reference (tests compare every probe's scores with it bit for bit); this
module computes the same floats from a term-to-document table, so a probe costs the
postings of its words instead of a Python loop over every document, and a document is
tokenized once however many days and stores hold it (a TokenPool per analyzer).

Same floats, not merely close ones: BM25Okapi's score of a document is, for each query
token in query order, `score += idf * (f * (k1 + 1) / (f + k1 * (1 - b + b * dl / avgdl)))`,
each step one IEEE operation on float64 in numpy. A document without the word adds
exactly 0.0, so adding only the documents that hold it, with the same operations in the
same order, gives the same bits. The idf floor (epsilon times the mean idf) needs the
sum of every word's idf in rank-bm25's order (first occurrence in the corpus, each
document's words in their first-occurrence order), which `Bm25Index` reproduces.

Ranking is by score rounded to a grid of 2^-20, then by document position (earlier
first). rank-bm25's arithmetic is IEEE-exact except its idf, which goes through the
platform's math.log; a C library may differ in the last bit (~1e-15 relative), so two
documents a rounding error apart could swap on another machine. On the grid they tie,
and the tie goes to the earlier document everywhere. Scores that really differ by less
than 2^-20 (about 1e-6) also tie: BM25 cannot tell such documents apart in any useful way.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import reduce
from operator import add

import numpy as np

from membench.scenario.text import tokens

Tokenize = Callable[[str], list[str]]

K1, B, EPSILON = 1.5, 0.75, 0.25  # BM25Okapi's defaults
DOCUMENTS_PER_BLOCK = 20_000  # documents whose postings an index reads at once when built


class TokenPool:
    """Every document one analyzer has seen, tokenized once, as word-count postings.

    Documents are keyed by their text (tokens depend on nothing else), so one pool serves
    every store and day: a store's corpus on a day is a list of pool ids. Documents only
    arrive: the postings grow by appending, and the word-to-document lists are extended
    with each new batch of documents (sorted once), never rebuilt.
    """

    def __init__(self, tokenize: Tokenize = tokens) -> None:
        self.tokenize = tokenize
        self.words: dict[str, int] = {}  # word -> id, in first-seen order
        self._ids: dict[str, int] = {}  # document text -> pool id
        self._starts = array("q", [0])  # document d's postings: _starts[d]:_starts[d + 1]
        self._word_ids = array("i")  # each document's distinct words, first occurrence first
        self._counts = array("i")
        self._lengths = array("q")  # tokens per document
        # Word -> documents lists, one block per batch of arrivals:
        # (sorted distinct words, their bounds, documents, counts).
        self._blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self._inverted = 0  # documents already in a block

    def __len__(self) -> int:
        return len(self._lengths)

    def add(self, text: str, corpus_tokens: Sequence[str] | None = None) -> int:
        """The pool id of `text`, tokenizing it (or taking `corpus_tokens`) on first sight."""
        known = self._ids.get(text)
        if known is not None:
            return known
        words = self.tokenize(text) if corpus_tokens is None else corpus_tokens
        frequencies = Counter(words)  # first occurrence first, as rank-bm25 counts
        ids = self.words
        word_ids = [ids.setdefault(word, len(ids)) for word in frequencies]
        try:
            self._grow(word_ids, frequencies.values(), len(words))
        except BufferError:
            # A numpy view of the arrays outlived its call: a frame that held it is still
            # referenced (a Dask worker's stack sampler, a kept traceback). The views keep
            # the old arrays; the pool goes on in copies, cut back to its whole documents.
            documents = len(self._ids)
            end = self._starts[documents]
            self._starts = self._starts[:documents + 1]
            self._word_ids, self._counts = self._word_ids[:end], self._counts[:end]
            self._lengths = self._lengths[:documents]
            self._grow(word_ids, frequencies.values(), len(words))
        pool_id = len(self._ids)
        self._ids[text] = pool_id
        return pool_id

    def _grow(self, word_ids: list[int], counts: Iterable[int], length: int) -> None:
        self._word_ids.extend(word_ids)
        self._counts.extend(counts)
        self._starts.append(len(self._word_ids))
        self._lengths.append(length)

    def postings(self, documents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(word id, count) of every posting of the listed documents, in their order."""
        offsets = self._offsets(documents)
        word_ids = np.frombuffer(self._word_ids, dtype=np.int32)[offsets]
        return word_ids, np.frombuffer(self._counts, dtype=np.int32)[offsets]

    def word_ids(self, documents: np.ndarray) -> np.ndarray:
        """The word id of every posting of the listed documents, in their order."""
        return np.frombuffer(self._word_ids, dtype=np.int32)[self._offsets(documents)]

    def posting_count(self, documents: np.ndarray) -> int:
        starts = np.frombuffer(self._starts, dtype=np.int64)
        return int((starts[documents + 1] - starts[documents]).sum())

    def _offsets(self, documents: np.ndarray) -> np.ndarray:
        starts = np.frombuffer(self._starts, dtype=np.int64)
        first, last = starts[documents], starts[documents + 1]
        sizes = last - first
        # The postings of each listed document: first[d], first[d] + 1, ..., last[d] - 1.
        return np.repeat(first - (np.cumsum(sizes) - sizes), sizes) + np.arange(sizes.sum())

    def postings_of_each(self, documents: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """postings(documents), and for each posting the index in `documents` it is of."""
        starts = np.frombuffer(self._starts, dtype=np.int64)
        sizes = starts[documents + 1] - starts[documents]
        word_ids, counts = self.postings(documents)
        return word_ids, counts, np.repeat(np.arange(len(documents)), sizes)

    def lengths(self, documents: np.ndarray) -> np.ndarray:
        return np.frombuffer(self._lengths, dtype=np.int64)[documents]

    def documents_with(self, word_id: int) -> tuple[np.ndarray, np.ndarray]:
        """(pool ids, counts) of every document holding the word, in arrival order."""
        self._invert_arrivals()
        found = []
        for words, bounds, documents, counts in self._blocks:
            i = int(np.searchsorted(words, word_id))
            if i < len(words) and words[i] == word_id:
                found.append((documents[bounds[i]:bounds[i + 1]], counts[bounds[i]:bounds[i + 1]]))
        if not found:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32)
        return np.concatenate([d for d, _ in found]), np.concatenate([c for _, c in found])

    def _invert_arrivals(self) -> None:
        size = len(self)
        if self._inverted == size:
            return
        starts = np.frombuffer(self._starts, dtype=np.int64)
        low, high = int(starts[self._inverted]), int(starts[size])
        word_ids = np.frombuffer(self._word_ids, dtype=np.int32)[low:high]
        documents = np.repeat(np.arange(self._inverted, size, dtype=np.int32),
                              np.diff(starts[self._inverted:size + 1]))
        by_word = np.argsort(word_ids, kind="stable")  # each word's documents stay in order
        grouped = word_ids[by_word]
        edges = np.flatnonzero(np.diff(grouped)) + 1
        bounds = np.concatenate(([0], edges, [len(grouped)]))
        self._blocks.append((grouped[bounds[:-1]], bounds, documents[by_word],
                             np.frombuffer(self._counts, dtype=np.int32)[low:high][by_word]))
        self._inverted = size


class Bm25Index:
    """BM25Okapi over a list of documents (one store on one day); returns indices into it.

    Only documents scoring above zero are returned, and equal scores keep the
    earlier document first, so a query sharing no indexed word returns nothing.
    """

    def __init__(self, documents: Sequence[str], tokenize: Tokenize = tokens) -> None:
        pool = TokenPool(tokenize)
        self._init(pool, [pool.add(document) for document in documents])

    @classmethod
    def from_tokens(cls, corpus: Sequence[Sequence[str]], tokenize: Tokenize = tokens) -> Bm25Index:
        # Keyed by position: equal token lists may come from different texts.
        pool = TokenPool(tokenize)
        return cls.from_pool(pool, [pool.add(str(i), doc) for i, doc in enumerate(corpus)])

    @classmethod
    def from_pool(cls, pool: TokenPool, documents: Sequence[int]) -> Bm25Index:
        """The index of these pool documents, in this order, with their own statistics."""
        index = cls.__new__(cls)
        index._init(pool, documents)
        return index

    def _init(self, pool: TokenPool, documents: Sequence[int]) -> None:
        self._pool = pool
        self._tokenize = pool.tokenize
        self.size = len(documents)
        # Several policies ask the same question: each query's best documents are kept
        # (a short list, not a score per document: a deployment asks 100,000s of questions).
        self._ranked: dict[str, list[Ranked]] = {}  # query -> its best documents
        self._postings: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._base: dict[tuple[int, ...], list[Ranked]] = {}  # see _split_best
        self._local: dict[int, _Holders] = {}
        if not documents:  # rank-bm25 divides by the corpus size: an empty corpus has no model
            self._present = np.zeros(0, dtype=np.int64)
            return
        rows = self._rows = np.asarray(documents, dtype=np.int64)
        doc_len = pool.lengths(rows)
        avgdl = int(doc_len.sum()) / self.size
        # rank-bm25's word order: first occurrence over the documents in order; and each
        # word's document frequency. Postings are read a block of documents at a time, so
        # a store of 360,000 documents never has all its postings gathered at once.
        total = pool.posting_count(rows)
        first = np.full(len(pool.words), total, dtype=np.int64)
        df = np.zeros(len(pool.words), dtype=np.int64)
        position = 0
        for start in range(0, len(rows), DOCUMENTS_PER_BLOCK):
            word_ids = pool.word_ids(rows[start:start + DOCUMENTS_PER_BLOCK])
            np.minimum.at(first, word_ids, np.arange(position, position + len(word_ids)))
            df += np.bincount(word_ids, minlength=len(pool.words))
            position += len(word_ids)
        self._present = np.flatnonzero(first < total)
        in_order = self._present[np.argsort(first[self._present], kind="stable")]
        idf = [math.log(self.size - f + 0.5) - math.log(f + 0.5) for f in df[in_order].tolist()]
        average_idf = reduce(add, idf, 0) / len(idf)  # left to right, as rank-bm25 sums
        eps = EPSILON * average_idf
        self._idf = np.full(len(pool.words), np.nan)
        self._idf[in_order] = [eps if v < 0 else v for v in idf]
        # Pool id -> positions here (a text may be listed twice): sorted, to search.
        self._by_pool_id = np.argsort(rows, kind="stable")
        self._sorted_rows = rows[self._by_pool_id]
        self._norm = K1 * (1 - B + B * doc_len / avgdl)  # rank-bm25's expression, as written

    @property
    def vocabulary(self) -> frozenset[str]:
        names = list(self._pool.words)
        return frozenset(names[i] for i in self._present.tolist())

    def _holding(self, word_id: int) -> tuple[np.ndarray, np.ndarray]:
        """(position, count) of each document here holding the word."""
        if word_id not in self._postings:
            documents, counts = self._pool.documents_with(word_id)
            low = np.searchsorted(self._sorted_rows, documents, side="left")
            listed = np.searchsorted(self._sorted_rows, documents, side="right") - low
            total = int(listed.sum())
            # Each pool document's positions here: low[i], low[i] + 1, ... (listed[i] of them).
            starts = np.repeat(low - (np.cumsum(listed) - listed), listed)
            at = self._by_pool_id[starts + np.arange(total)]
            # counts as the pool keeps them (int32): kept for every word asked, the same floats
            self._postings[word_id] = at, np.repeat(counts, listed)
        return self._postings[word_id]

    def _query_words(self, query: str) -> list[int]:
        """The query's word ids in order (repeats kept), without those rank-bm25 scores 0.0
        everywhere (not in the corpus)."""
        found = []
        for word in self._tokenize(query):
            word_id = self._pool.words.get(word)
            if word_id is None or word_id >= len(self._idf) or np.isnan(self._idf[word_id]):
                continue  # rank-bm25 adds 0.0 to every document
            found.append(word_id)
        return found

    def scores(self, query: str) -> np.ndarray:
        if self.size == 0:
            return np.zeros(0)
        return self._scores_of(self._query_words(query))

    def _scores_of(self, words: Sequence[int]) -> np.ndarray:
        score = np.zeros(self.size)
        for word_id in words:
            at, f = self._holding(word_id)
            score[at] += float(self._idf[word_id]) * (f * (K1 + 1) / (f + self._norm[at]))
        return score

    def top_k(self, query: str, k: int) -> list[int]:
        """The k best documents scoring above zero: by score on the grid, then earlier
        first. The same as sorting every document that way, taking k and dropping those
        not above zero, without sorting every document."""
        if k < 1:
            raise ValueError(f"top-k must be at least 1, got {k}")
        best = self._ranked.get(query)
        if best is None or (len(best) < k < self.size):
            if len(self._ranked) >= KEPT_QUERIES:
                del self._ranked[next(iter(self._ranked))]  # the oldest question
            best = self._ranked[query] = self._best_for(query, max(k, KEPT_RANKS))
        return [r.position for r in best[:k] if r.above_zero]

    def _best_for(self, query: str, k: int) -> list[Ranked]:
        words = self._query_words(query)
        if self.size >= SPLIT_MIN_SIZE and len(set(words)) > 1:
            holders = self._holding(words[0])[0]
            if len(holders) * SPLIT_SHARE <= self.size:
                return self._split_best(words, k)
        return _best(self._scores_of(words), k)

    def _split_best(self, words: list[int], k: int) -> list[Ranked]:
        """The best k when the query's first word is rare here (in a store every user
        writes to, the asking user's name): a document without the word scores what the
        query without it scores (each missing word adds exactly 0.0), so that ranking is
        shared by every query differing only in the word; the documents holding it are
        scored exactly, on their own, with the same float operations in the same order.
        The two rankings are merged by (grid score, position)."""
        first = words[0]
        local = self._holders(first)
        score = np.zeros(len(local.positions))
        for word_id in words:
            i, j = local.bounds.get(word_id, (0, 0))
            score[local.documents[i:j]] += float(self._idf[word_id]) * local.ratios[i:j]
        held = [Ranked(int(local.positions[r.position]), r.grid, r.above_zero)
                for r in _best(score, k)]
        rest = tuple(w for w in words if w != first)
        want, base = k, self._base.get(rest)
        while True:  # enough of the others' ranking that k remain without the holders
            if base is None or len(base) < min(want, self.size):
                if len(self._base) >= KEPT_QUERIES:
                    del self._base[next(iter(self._base))]
                base = self._base[rest] = _best(self._scores_of(rest), max(want, 2 * k))
            positions = np.array([r.position for r in base], dtype=np.int64)
            others = [r for r, holds in zip(base, _member(positions, local.positions))
                      if not holds]
            if len(others) >= k or len(base) == self.size:
                break
            want = len(base) * 4
        return list(heapq.merge(others[:k], held, key=lambda r: (-r.grid, r.position)))[:k]

    def _holders(self, word_id: int) -> _Holders:
        """The documents holding the word, with their postings by word (the last few)."""
        if word_id not in self._local:
            if len(self._local) >= KEPT_HOLDERS:
                del self._local[next(iter(self._local))]
            positions = np.sort(self._holding(word_id)[0])
            words, counts, documents = self._pool.postings_of_each(self._rows[positions])
            by_word = np.argsort(words, kind="stable")
            grouped = words[by_word]
            edges = np.flatnonzero(np.diff(grouped)) + 1
            starts, ends = np.concatenate(([0], edges)), np.concatenate((edges, [len(grouped)]))
            bounds = dict(zip(grouped[starts].tolist(), zip(starts.tolist(), ends.tolist())))
            documents, f = documents[by_word], counts[by_word]
            # each posting's term ratio, as _scores_of computes it: made once for every
            # question the word's holders answer (a user's probes, all policies)
            ratios = f * (K1 + 1) / (f + self._norm[positions[documents]])
            self._local[word_id] = _Holders(positions, bounds, documents, ratios)
        return self._local[word_id]


@dataclass(frozen=True, slots=True)  # kept by the thousand per index (_ranked, _base)
class Ranked:
    position: int
    grid: int  # score on the grid
    above_zero: bool


@dataclass(frozen=True)
class _Holders:
    positions: np.ndarray  # sorted positions of the documents holding a word
    bounds: dict[int, tuple[int, int]]  # word id -> its postings' slice below
    documents: np.ndarray  # index into positions of each posting, by word
    ratios: np.ndarray  # each posting's f (k1 + 1) / (f + k1 (1 - b + b dl / avgdl))


def _member(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    at = np.searchsorted(sorted_set, values)
    return (at < len(sorted_set)) & (sorted_set[np.minimum(at, len(sorted_set) - 1)] == values)


def _best(scores: np.ndarray, k: int) -> list[Ranked]:
    """The first k documents of the stable sort by descending grid score (ties: earlier
    first), each with whether it scores above zero."""
    grid = on_score_grid(scores)
    above = np.flatnonzero(grid > 0)
    if len(above) > k:  # only those at least as good as the k-th can be among the k
        kth = np.partition(grid[above], len(above) - k)[len(above) - k]
        above = above[grid[above] >= kth]
    best = above[np.lexsort((above, -grid[above]))][:k].tolist()
    if len(best) < k:  # then grid 0 by position; below it only if a score is ever negative
        best += np.flatnonzero(grid == 0)[:k - len(best)].tolist()
    if len(best) < k:
        below = np.flatnonzero(grid < 0)
        best += below[np.lexsort((below, -grid[below]))][:k - len(best)].tolist()
    return [Ranked(i, int(grid[i]), bool(scores[i] > 0)) for i in best]


SCORE_GRID = 2.0 ** -20
KEPT_RANKS = 10  # best documents kept per query (a larger k ranks again)
KEPT_QUERIES = 8192  # queries whose best documents are kept (the oldest go first)
# A query whose first word only 1 in SPLIT_SHARE documents hold is scored in two parts
# (Bm25Index._split_best), in an index of at least SPLIT_MIN_SIZE documents.
SPLIT_SHARE, SPLIT_MIN_SIZE = 8, 4096
KEPT_HOLDERS = 2


def on_score_grid(scores: np.ndarray) -> np.ndarray:
    """Scores as whole multiples of SCORE_GRID (int64), so last-bit noise cannot reorder."""
    return np.rint(np.asarray(scores, dtype=np.float64) / SCORE_GRID).astype(np.int64)
