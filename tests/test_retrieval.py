import numpy as np

from membench.retrieval.bm25 import SCORE_GRID, Bm25Index, on_score_grid


def test_only_positive_scores_and_ties_keep_earlier_document():
    docs = ["alpha beta", "gamma", "alpha beta", "delta", "epsilon zeta", "eta"]
    index = Bm25Index(docs)
    assert index.top_k("alpha", 5) == [0, 2]
    assert index.top_k("nothing shared", 5) == []


def test_top_k_caps_results():
    docs = [f"word{i} common" for i in range(10)] + [f"x{i}" for i in range(20)]
    assert len(Bm25Index(docs).top_k("common", 3)) == 3


def test_no_stemming_is_the_articles_stale_hit():
    docs = ["Services run on Node 20.", "Every service runs on Node 24 now."] + \
        [f"filler text {i}" for i in range(10)]
    ranked = Bm25Index(docs).top_k("Which Node version do services run on?", 2)
    assert ranked[0] == 0


def test_empty_corpus_returns_nothing():
    assert Bm25Index([]).top_k("anything", 3) == []


def test_scores_a_rounding_error_apart_rank_by_position():
    """A last-bit difference (another C library's log) must not reorder documents."""
    index = Bm25Index(["alpha beta", "alpha gamma", "delta"])
    index._scores_of = lambda words: np.array([1.25, 1.25 + 4e-15, 0.5])
    assert index.top_k("q", 3) == [0, 1, 2]
    index._scores_of = lambda words: np.array([1.25, 1.25 + 1e-3, 0.0])
    assert index.top_k("other q", 3) == [1, 0]


def test_score_grid_is_whole_multiples():
    grid = on_score_grid(np.array([0.0, SCORE_GRID, 2.6 * SCORE_GRID, 30.0]))
    assert grid.dtype == np.int64 and grid.tolist() == [0, 1, 3, 30 * 2 ** 20]
