"""BM25 with and without stemming on a tiny corpus whose right answer is known."""

from membench.retrieval.bm25 import Bm25Index
from membench.retrieval.stemming import stemmed_tokens

NODE_QUESTION = "Which Node version do services run on?"
NODE_ANSWER = 1
CORPUS = [
    "Which editor do you use, and which theme do you like?",
    "Every service runs on Node 24 now",
    "Release notes list the version history",
    "Lunch is at noon on Fridays",
    "Backups of the database happen nightly",
]


def test_stems_join_inflections_of_the_node_example():
    question = set(stemmed_tokens(NODE_QUESTION))
    answer = set(stemmed_tokens(CORPUS[NODE_ANSWER]))
    assert {"servic", "run"} <= question & answer


def test_stemmed_tokens_keep_token_boundaries_and_order():
    assert stemmed_tokens("Running_services, 2 DBs!") == ["run", "servic", "2", "dbs"]


def test_plain_bm25_misses_the_inflected_answer():
    assert Bm25Index(CORPUS).top_k(NODE_QUESTION, 1) != [NODE_ANSWER]


def test_stemmed_bm25_finds_the_inflected_answer():
    index = Bm25Index(CORPUS, tokenize=stemmed_tokens)
    assert index.top_k(NODE_QUESTION, 1) == [NODE_ANSWER]


def test_plain_bm25_finds_an_exact_wording_answer():
    index = Bm25Index(CORPUS)
    assert index.top_k("When is lunch?", 1) == [3]
