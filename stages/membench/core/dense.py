"""Dense retrieval and rank fusion over precomputed vectors (numpy only).

Kept free of torch so policies can rank with cached vectors without loading a
model. Vectors come from membench.embedding or any other source.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1; all-zero rows stay zero (similarity 0 to all)."""
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"top-k must be at least 1, got {k}")


def cosine_top_k(query_vec: np.ndarray, doc_matrix: np.ndarray, k: int) -> list[int]:
    """Indices of the k documents most cosine-similar to the query, best first.

    Unlike BM25 there is no score threshold: cosine similarity has no natural
    zero meaning "unrelated" (unrelated texts still score around 0.0-0.2, and
    negative scores are legal), so every document is a candidate and exactly
    min(k, number of documents) indices come back. Equal scores keep the earlier
    document first (stable sort), so results do not depend on sort internals.
    """
    _check_k(k)
    docs = np.asarray(doc_matrix, dtype=np.float64)
    if docs.ndim != 2:
        raise ValueError(f"doc_matrix must be 2-D, got shape {docs.shape}")
    if docs.shape[0] == 0:
        return []
    query = np.asarray(query_vec, dtype=np.float64).reshape(-1)
    if query.shape[0] != docs.shape[1]:
        raise ValueError(f"query has {query.shape[0]} dimensions, documents have {docs.shape[1]}")
    return _best_first(_unit_rows(docs) @ _unit_rows(query), k)


def _best_first(scores: np.ndarray, k: int) -> list[int]:
    # Stable sort on the negated score: ties keep the earlier document first.
    order = np.argsort(-scores, kind="stable")
    return [int(i) for i in order[:k]]


class DenseIndex:
    """Exact cosine search over a fixed matrix of document vectors (one row each)."""

    def __init__(self, doc_vectors: np.ndarray) -> None:
        vectors = np.asarray(doc_vectors, dtype=np.float64)
        if vectors.ndim != 2:
            raise ValueError(f"doc_vectors must be 2-D, got shape {vectors.shape}")
        self.size = vectors.shape[0]
        # Normalise once here rather than on every query.
        self._unit_vectors = _unit_rows(vectors)

    def scores(self, query_vector: np.ndarray) -> np.ndarray:
        """Cosine similarity of the query to every document, in document order."""
        query = np.asarray(query_vector, dtype=np.float64).reshape(-1)
        if query.shape[0] != self._unit_vectors.shape[1]:
            raise ValueError(
                f"query has {query.shape[0]} dimensions, documents have "
                f"{self._unit_vectors.shape[1]}"
            )
        return self._unit_vectors @ _unit_rows(query)

    def top_k(self, query_vector: np.ndarray, k: int) -> list[int]:
        """Same contract as cosine_top_k: always min(k, size) indices, best first."""
        _check_k(k)
        return _best_first(self.scores(query_vector), k)


def rrf_scores(rankings: Sequence[Sequence[int]], k: int = 60) -> dict[int, float]:
    """Fused score per document: sum of 1 / (k + rank) over the lists, rank from 1.

    A document absent from a list gets nothing from it. Only ranks are used, so
    BM25 and cosine scores need no common scale (Cormack et al. 2009).
    """
    if k < 0:
        raise ValueError(f"RRF constant k must be non-negative, got {k}")
    fused: dict[int, float] = {}
    for ranking in rankings:
        if len(set(ranking)) != len(ranking):
            raise ValueError(f"ranking lists a document twice: {list(ranking)}")
        for rank, doc in enumerate(ranking, start=1):
            fused[int(doc)] = fused.get(int(doc), 0.0) + 1.0 / (k + rank)
    return fused


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[int]], k: int = 60, *, top: int
) -> list[int]:
    """The `top` documents by rrf_scores, best first.

    Equal fused scores put the lower document index first, so the output does not
    depend on the order in which the rankings are given.
    """
    _check_k(top)
    fused = rrf_scores(rankings, k)
    return sorted(fused, key=lambda doc: (-fused[doc], doc))[:top]
