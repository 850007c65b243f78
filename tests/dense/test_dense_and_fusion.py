"""Exact integer cosine search and reciprocal rank fusion, checked by hand."""

from fractions import Fraction

import numpy as np
import pytest

from membench.retrieval.dense import (
    GRID_BITS,
    DenseIndex,
    grid_integers,
    reciprocal_rank_fusion,
    rrf_scores,
    snap_to_grid,
)

DOCS = np.array(
    [
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [2.0, 2.0, 0.0],  # same direction as [1, 1, 0]: length must not matter
        [-1.0, 0.0, 0.0],
    ]
)


def top_k(docs, query, k):
    return DenseIndex(np.asarray(docs, dtype=np.float64)).top_k(np.array(query), k)


def test_cosine_orders_by_angle_not_length():
    # cos to [1, .9, 0]: doc 2 (1.9/sqrt2 = 1.34), doc 0 (1), doc 1 (.9), doc 3 (-1); all /|q|
    assert top_k(DOCS, [1.0, 0.9, 0.0], 4) == [2, 0, 1, 3]
    # cos to [.2, 1, .1]: doc 1 (1), doc 2 (1.2/sqrt2 = .85), doc 0 (.2), doc 3 (-.2); all /|q|
    assert top_k(DOCS, [0.2, 1.0, 0.1], 3) == [1, 2, 0]


def test_cosine_returns_k_results_even_when_all_scores_are_negative_or_zero():
    assert top_k(DOCS, [0.0, 0.0, 1.0], 3) == [0, 1, 2]
    assert top_k(DOCS, [-1.0, -1.0, 0.0], 2) == [3, 0]


def test_cosine_ties_keep_the_earlier_document():
    tied = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 3.0], [5.0, 0.0]])
    assert top_k(tied, [1.0, 1.0], 4) == [0, 1, 2, 3]


def test_cosine_k_larger_than_corpus_and_empty_corpus():
    assert top_k(DOCS, [1.0, 0.0, 0.0], 10) == [0, 2, 1, 3]
    assert top_k(np.zeros((0, 2)), [1.0, 0.0], 3) == []


def test_cosine_rejects_bad_input():
    with pytest.raises(ValueError):
        top_k(DOCS, [1.0, 0.0, 0.0], 0)
    with pytest.raises(ValueError):
        top_k(DOCS, [1.0, 0.0], 1)
    with pytest.raises(ValueError):
        DenseIndex(np.array([1.0, 0.0]))


def test_dense_index_scores_are_hand_computed_integer_cosines():
    index = DenseIndex(DOCS)
    assert index.size == 4
    scores = index.scores(np.array([1.0, 0.0, 0.0]))
    assert scores.dtype == np.int64
    # Unit rows on the 2^-20 grid: [2^20, 0, 0], [0, 2^20, 0], [h, h, 0] with
    # h = rint(2^20 / sqrt 2) = rint(741455.2) = 741455, and [-2^20, 0, 0]; the query is
    # [2^20, 0, 0], so the dot products are 4^20, 0, 741455 * 2^20 and -4^20.
    assert scores.tolist() == [4**GRID_BITS, 0, 741455 * 2**GRID_BITS, -(4**GRID_BITS)]


def unit_grid_rows(count: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((count, 384))
    return snap_to_grid(rows / np.linalg.norm(rows, axis=1, keepdims=True))


def test_stored_grid_vectors_are_taken_as_they_are():
    # Renormalising would move an embedding off the grid point the encoder chose.
    vectors = unit_grid_rows(5, seed=1)
    assert np.array_equal(grid_integers(vectors), vectors.astype(np.float64) * 2**GRID_BITS)
    off_grid = vectors.astype(np.float64) * 3
    assert np.abs(grid_integers(off_grid) - grid_integers(vectors)).max() <= 3


def test_scores_are_exact_integer_dot_products_in_any_summation_order():
    docs, query = unit_grid_rows(50, seed=2), unit_grid_rows(1, seed=3)[0]
    scores = DenseIndex(docs).scores(query)
    exact = [sum(int(a) * int(b) for a, b in zip(row, grid_integers(query[None])[0]))
             for row in grid_integers(docs)]
    assert scores.tolist() == exact
    reversed_dimensions = DenseIndex(docs[:, ::-1]).scores(query[::-1])
    assert np.array_equal(scores, reversed_dimensions)


def test_equal_integer_scores_rank_by_lower_index_whatever_the_float_noise():
    docs = unit_grid_rows(4, seed=4)
    docs[3] = docs[0]  # an exact tie with document 0
    query = docs[0]
    index = DenseIndex(docs)
    assert index.scores(query)[0] == index.scores(query)[3]
    assert index.top_k(query, 2) == [0, 3]
    assert DenseIndex(docs[::-1]).top_k(query, 2) == [0, 3]  # now 0 and 3 are rows 3 and 0


def test_largest_possible_scores_do_not_overflow():
    axis = np.zeros((2, 384))
    axis[:, 7] = [1.0, -1.0]
    assert DenseIndex(axis).scores(axis[0]).tolist() == [4**GRID_BITS, -(4**GRID_BITS)]


def test_rrf_scores_match_hand_computed_values():
    scores = rrf_scores([[0, 1, 2], [2, 0]], k=60)
    assert scores[0] == pytest.approx(1 / 61 + 1 / 62)
    assert scores[1] == pytest.approx(1 / 62)
    assert scores[2] == pytest.approx(1 / 63 + 1 / 61)
    assert rrf_scores([[7, 3]], k=0) == {7: 1.0, 3: 0.5}


def test_rrf_scores_are_exact_so_ties_survive_any_addition_order():
    # As floats, (1/61 + 1/62) + 1/63 and (1/63 + 1/62) + 1/61 need not be equal.
    scores = rrf_scores([[0, 1, 2], [1, 2, 0], [2, 0, 1]], k=60)
    exact = Fraction(1, 61) + Fraction(1, 62) + Fraction(1, 63)
    assert scores[0] == scores[1] == scores[2] == exact
    assert reciprocal_rank_fusion([[2, 0, 1], [0, 1, 2], [1, 2, 0]], top=3) == [0, 1, 2]


def test_rrf_orders_by_fused_score():
    # 0: 1/61 + 1/62 = .03252; 2: 1/63 + 1/61 = .03226; 1: 1/62 = .01613
    assert reciprocal_rank_fusion([[0, 1, 2], [2, 0]], top=3) == [0, 2, 1]
    assert reciprocal_rank_fusion([[0, 1, 2], [2, 0]], top=2) == [0, 2]


def test_rrf_favours_agreement_over_one_top_rank():
    # 5 is 2nd in both lists: 2/62 = .03226 beats 1st-in-one-list 1/61 = .01639.
    assert reciprocal_rank_fusion([[1, 5], [2, 5]], top=3) == [5, 1, 2]


def test_rrf_ties_break_by_lower_document_index_whatever_the_list_order():
    assert reciprocal_rank_fusion([[4, 1], [1, 4]], top=2) == [1, 4]
    assert reciprocal_rank_fusion([[1, 4], [4, 1]], top=2) == [1, 4]


def test_rrf_handles_empty_lists_and_rejects_duplicates():
    assert reciprocal_rank_fusion([[], []], top=5) == []
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([[1, 1]], top=1)
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([[1]], top=0)


def test_rrf_fuses_bm25_and_dense_rankings():
    from membench.retrieval.bm25 import Bm25Index

    docs = ["prod runs in eu-central-1", "staging runs in us-east-1", "lunch menu"]
    lexical = Bm25Index(docs).top_k("where is staging", 3)
    dense = top_k([[1.0, 0.1], [0.9, 0.5], [0.0, 1.0]], [1.0, 0.0], 3)
    assert lexical == [1] and dense == [0, 1, 2]
    assert reciprocal_rank_fusion([lexical, dense], top=3) == [1, 0, 2]
