"""Lexical retrieval: rank-bm25's BM25Okapi with its default parameters.

Ranking is by score rounded to a grid of 2^-20, then by document position (earlier
first). rank-bm25's arithmetic is IEEE-exact except its idf, which goes through the
platform's math.log; a C library may differ in the last bit (~1e-15 relative), so two
documents a rounding error apart could swap on another machine. On the grid they tie,
and the tie goes to the earlier document everywhere. Scores that really differ by less
than 2^-20 (about 1e-6) also tie: BM25 cannot tell such documents apart in any useful way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from rank_bm25 import BM25Okapi

from membench.scenario.text import tokens

Tokenize = Callable[[str], list[str]]


class Bm25Index:
    """BM25 over a fixed list of documents; returns indices into that list.

    Only documents scoring above zero are returned, and equal scores keep the
    earlier document first, so a query sharing no indexed word returns nothing.
    """

    def __init__(self, documents: Sequence[str], tokenize: Tokenize = tokens) -> None:
        self._init([tokenize(document) for document in documents], tokenize)

    @classmethod
    def from_tokens(cls, corpus: Sequence[Sequence[str]], tokenize: Tokenize = tokens) -> Bm25Index:
        index = cls.__new__(cls)
        index._init([list(doc) for doc in corpus], tokenize)
        return index

    def _init(self, corpus: list[list[str]], tokenize: Tokenize) -> None:
        self._tokenize = tokenize
        self.size = len(corpus)
        self.vocabulary = frozenset(word for doc in corpus for word in doc)
        # rank-bm25 divides by the corpus size, so an empty corpus has no model.
        self._model = BM25Okapi(corpus) if corpus else None
        self._scores: dict[str, np.ndarray] = {}  # several policies ask the same question

    def scores(self, query: str) -> np.ndarray:
        if self._model is None:
            return np.zeros(0)
        if query not in self._scores:
            self._scores[query] = np.asarray(self._model.get_scores(self._tokenize(query)),
                                             dtype=float)
        return self._scores[query]

    def top_k(self, query: str, k: int) -> list[int]:
        if k < 1:
            raise ValueError(f"top-k must be at least 1, got {k}")
        scores = self.scores(query)
        order = np.argsort(-on_score_grid(scores), kind="stable")  # ties: earlier first
        return [int(i) for i in order[:k] if scores[i] > 0]


SCORE_GRID = 2.0 ** -20


def on_score_grid(scores: np.ndarray) -> np.ndarray:
    """Scores as whole multiples of SCORE_GRID (int64), so last-bit noise cannot reorder."""
    return np.rint(np.asarray(scores, dtype=np.float64) / SCORE_GRID).astype(np.int64)
