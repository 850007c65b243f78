"""Dense retrieval and rank fusion over precomputed vectors, in exact integer arithmetic.

Kept free of any model so policies can rank with cached vectors without loading one.

Why integers: a float dot product sums in a CPU-specific order, so two documents whose
scores agree to the last bits could swap places on another machine. Embeddings are unit
vectors rounded to a grid of 2^-GRID_BITS (membench.retrieval.embedding does it; snap_to_grid
does it for any other vectors), so each is an integer vector times the grid and the
cosine similarity is their int64 dot product times 2^-2*GRID_BITS: exact, the same in
any summation order, and ties are real ties, broken by the lower document index.
No overflow: each |component| <= 2^GRID_BITS, so by Cauchy-Schwarz |dot| <= 2^(2*GRID_BITS+1).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

# 2^-20 ~ 9.5e-7: 2.4e9 times coarser than the float64 noise of the encoder across BLAS
# kernels and thread counts (measured 4.0e-16: see membench.retrieval.embedding), and grid
# values (integers up to 2^20 times a power of two) are exact in float32.
GRID_BITS = 20
GRID_SCALE = float(2**GRID_BITS)


def snap_to_grid(unit_rows: np.ndarray) -> np.ndarray:
    """Each component rounded to the nearest multiple of 2^-GRID_BITS, as float32 (exact)."""
    return (np.rint(np.asarray(unit_rows, dtype=np.float64) * GRID_SCALE) / GRID_SCALE).astype(
        np.float32
    )


def grid_integers(vectors: np.ndarray) -> np.ndarray:
    """int64 rows k with vector ~ k * 2^-GRID_BITS and unit length.

    Rows that already are unit vectors on the grid (stored embeddings) are taken as they
    are: renormalising would move them off the grid point the encoder chose. Any other
    row is scaled to unit length and rounded; all-zero rows stay zero (similarity 0).
    """
    rows = np.asarray(vectors, dtype=np.float64)
    scaled = rows * GRID_SCALE
    integers = np.rint(scaled)
    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    on_grid = np.all(integers == scaled, axis=-1, keepdims=True) & (np.abs(norms - 1) < 1e-4)
    if not on_grid.all():
        unit = rows / np.where(norms == 0, 1.0, norms)
        integers = np.where(on_grid, integers, np.rint(unit * GRID_SCALE))
    return integers.astype(np.int64)


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"top-k must be at least 1, got {k}")


def _best_first(scores: np.ndarray, k: int) -> list[int]:
    # Stable sort on the negated integer score: ties keep the lower document index first.
    order = np.argsort(-scores, kind="stable")
    return [int(i) for i in order[:k]]


class DenseIndex:
    """Exact cosine search over a fixed matrix of document vectors (one row each)."""

    def __init__(self, doc_vectors: np.ndarray) -> None:
        vectors = np.asarray(doc_vectors, dtype=np.float64)
        if vectors.ndim != 2:
            raise ValueError(f"doc_vectors must be 2-D, got shape {vectors.shape}")
        self.size = vectors.shape[0]
        self._integers = grid_integers(vectors)  # once here rather than on every query

    def scores(self, query_vector: np.ndarray) -> np.ndarray:
        """Cosine similarity to every document, in document order, as int64 in units of
        2^-2*GRID_BITS (exact, so equal scores are equal on every machine)."""
        query = np.asarray(query_vector, dtype=np.float64).reshape(-1)
        if query.shape[0] != self._integers.shape[1]:
            raise ValueError(
                f"query has {query.shape[0]} dimensions, documents have "
                f"{self._integers.shape[1]}"
            )
        return self._integers @ grid_integers(query[np.newaxis])[0]

    def top_k(self, query_vector: np.ndarray, k: int) -> list[int]:
        """Indices of the k documents most cosine-similar to the query, best first.

        Unlike BM25 there is no score threshold: cosine similarity has no natural
        zero meaning "unrelated" (unrelated texts still score around 0.0-0.2, and
        negative scores are legal), so every document is a candidate and exactly
        min(k, size) indices come back. Equal scores put the lower document index first.
        """
        _check_k(k)
        scores = self.scores(query_vector)
        return _best_first(scores, k) if self.size else []


def rrf_scores(rankings: Sequence[Sequence[int]], k: int = 60) -> dict[int, Fraction]:
    """Fused score per document: sum of 1 / (k + rank) over the lists, rank from 1.

    A document absent from a list gets nothing from it. Only ranks are used, so
    BM25 and cosine scores need no common scale (Cormack et al. 2009). Exact
    fractions: equal fused scores are equal whatever order the terms were added in.
    """
    if k < 0:
        raise ValueError(f"RRF constant k must be non-negative, got {k}")
    fused: dict[int, Fraction] = {}
    for ranking in rankings:
        if len(set(ranking)) != len(ranking):
            raise ValueError(f"ranking lists a document twice: {list(ranking)}")
        for rank, doc in enumerate(ranking, start=1):
            fused[int(doc)] = fused.get(int(doc), Fraction(0)) + Fraction(1, k + rank)
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
