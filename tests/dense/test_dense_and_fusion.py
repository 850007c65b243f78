"""Exact cosine search and reciprocal rank fusion, checked by hand."""

import numpy as np
import pytest

from membench.core.dense import DenseIndex, cosine_top_k, reciprocal_rank_fusion, rrf_scores

DOCS = np.array(
    [
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [2.0, 2.0, 0.0],  # same direction as [1, 1, 0]: length must not matter
        [-1.0, 0.0, 0.0],
    ]
)


def test_cosine_orders_by_angle_not_length():
    assert cosine_top_k(np.array([1.0, 0.9, 0.0]), DOCS, 4) == [2, 0, 1, 3]


def test_cosine_returns_k_results_even_when_all_scores_are_negative_or_zero():
    assert cosine_top_k(np.array([0.0, 0.0, 1.0]), DOCS, 3) == [0, 1, 2]
    assert cosine_top_k(np.array([-1.0, -1.0, 0.0]), DOCS, 2) == [3, 0]


def test_cosine_ties_keep_the_earlier_document():
    tied = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 3.0], [5.0, 0.0]])
    assert cosine_top_k(np.array([1.0, 1.0]), tied, 4) == [0, 1, 2, 3]


def test_cosine_k_larger_than_corpus_and_empty_corpus():
    assert cosine_top_k(np.array([1.0, 0.0, 0.0]), DOCS, 10) == [0, 2, 1, 3]
    assert cosine_top_k(np.array([1.0, 0.0]), np.zeros((0, 2)), 3) == []


def test_cosine_rejects_bad_input():
    with pytest.raises(ValueError):
        cosine_top_k(np.array([1.0, 0.0, 0.0]), DOCS, 0)
    with pytest.raises(ValueError):
        cosine_top_k(np.array([1.0, 0.0]), DOCS, 1)


def test_dense_index_matches_cosine_top_k():
    index = DenseIndex(DOCS)
    query = np.array([0.2, 1.0, 0.1])
    assert index.size == 4
    assert index.top_k(query, 3) == cosine_top_k(query, DOCS, 3)
    np.testing.assert_allclose(index.scores(np.array([1.0, 0.0, 0.0])), [1, 0, 2**-0.5, -1])


def test_rrf_scores_match_hand_computed_values():
    scores = rrf_scores([[0, 1, 2], [2, 0]], k=60)
    assert scores[0] == pytest.approx(1 / 61 + 1 / 62)
    assert scores[1] == pytest.approx(1 / 62)
    assert scores[2] == pytest.approx(1 / 63 + 1 / 61)
    assert rrf_scores([[7, 3]], k=0) == {7: 1.0, 3: 0.5}


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
    from membench.core.retrieval import Bm25Index

    docs = ["prod runs in eu-central-1", "staging runs in us-east-1", "lunch menu"]
    lexical = Bm25Index(docs).top_k("where is staging", 3)
    dense = cosine_top_k(np.array([1.0, 0.0]), np.array([[1.0, 0.1], [0.9, 0.5], [0.0, 1.0]]), 3)
    assert lexical == [1] and dense == [0, 1, 2]
    assert reciprocal_rank_fusion([lexical, dense], top=3) == [1, 0, 2]
