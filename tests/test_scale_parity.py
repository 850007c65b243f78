"""Parity of the lean indexing with what it replaced.

BM25: every probe's scores from the pooled, sparse index equal rank-bm25's BM25Okapi
bit for bit (so also on the 2^-20 grid, so the rankings too), for plain BM25 over every
store a policy searches, the stemmed variant and the fact log, on every probe day of the
default story and of 300 sessions, with one IndexCache across days as the bench uses it.
Outcomes: a whole in-memory run at 30 and 300 sessions has the digest measured with the
code before this change (commit 54a416f), token counts and contexts included.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from unittest.mock import patch

import numpy as np
import pytest
from bench_digest import outcome_digest
from hypothesis import given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from membench.commands.inmemory import run_in_memory
from membench.commands.parameters import read_params
from membench.extraction.extractors import EXTRACTORS
from membench.io.corpus import read_corpus
from membench.io.scenario_file import read_scenario_spec
from membench.memory.policies import build_policies, searches, without_embeddings
from membench.memory.stores import Memory
from membench.retrieval import bm25
from membench.retrieval.bm25 import Bm25Index, TokenPool, on_score_grid
from membench.retrieval.retrievers import ANALYZERS, IndexCache
from membench.scenario.build import build_scenario

ROOT = Path(__file__).resolve().parents[1]

# sha256 of outcome_digest(run_in_memory(...).result) at commit 54a416f (before the change)
BEFORE = {
    30: "fbca36c91a2f079383d8e7f48e494298429c6319edd322f3e6fd1848c0807c27",
    300: "de0811fdc49b78cac2ee6df65d1b9e7a6012d04854fc5f47b15d3656cbf2d716",
}


def _params(sessions: int):
    p = read_params(ROOT / "params.yaml")
    days = tuple(d * sessions // p.scenario.sessions for d in p.scenario.probe_days)
    return replace(p, scenario=replace(p.scenario, sessions=sessions, probe_days=days))


@pytest.fixture(scope="module")
def corpus():
    s = read_params(ROOT / "params.yaml").scenario
    return read_corpus(s.corpus.source, s.corpus.glob, s.corpus.exclude, base=ROOT)


@pytest.mark.parametrize("sessions", [30, 300])
def test_bm25_scores_equal_rank_bm25_on_every_probe(sessions, corpus):
    p = _params(sessions)
    scenario = build_scenario(read_scenario_spec(ROOT / p.scenario.file), corpus.files,
                              p.scenario.shape())
    records = EXTRACTORS[p.extractor](scenario)
    policies = without_embeddings(build_policies(p.policies))
    indexed = sorted({(store, retriever.analyzer) for policy in policies
                      for store, retriever in searches(policy) if retriever.analyzer})
    assert {("fact_log", "plain"), ("transcript", "stemmed"), ("transcript", "plain")} <= set(indexed)
    indexes = IndexCache()
    compared = 0
    for day in scenario.probe_days:
        memory = Memory(scenario, records, day, indexes)
        questions = list(dict.fromkeys(q.question for q in scenario.probes if q.day == day))
        for store, analyzer in indexed:
            documents = memory.documents(store)
            tokenize = ANALYZERS[analyzer]
            reference = BM25Okapi([tokenize(d.text) for d in documents])
            index = indexes.bm25(store, day, documents, analyzer)
            for question in questions:
                want = reference.get_scores(tokenize(question))
                got = index.scores(question)
                assert got.tobytes() == want.tobytes(), (store, analyzer, day, question)
                assert np.array_equal(on_score_grid(got), on_score_grid(want))
                compared += 1
    assert compared >= len(indexed) * len(scenario.probe_days) * 10


@pytest.mark.parametrize("sessions", [30, 300])
def test_outcomes_identical_to_before(sessions):
    run = run_in_memory(_params(sessions), root=ROOT)
    assert outcome_digest(run.result) == BEFORE[sessions]


_WORDS = ["node", "version", "20", "24", "runs", "services", "run", "the", "a", "on", "x"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_WORDS), max_size=8).map(" ".join), min_size=1,
                max_size=12),
       st.lists(st.integers(0, 11), max_size=12), st.lists(st.sampled_from(_WORDS), max_size=5))
def test_pooled_views_equal_rank_bm25(texts, picks, query):
    """Any selection of pooled documents, in any order, repeats included, scored with its
    own statistics while the pool also holds documents outside it and later arrivals."""
    pool = TokenPool()
    ids = [pool.add(t) for t in texts]
    chosen = [ids[i % len(ids)] for i in picks] or ids
    corpus = [pool.tokenize(texts[ids.index(i)]) for i in chosen]
    if not any(corpus):  # rank-bm25 cannot average over no words (nor can the index)
        return
    # The index reads its documents' postings a block at a time: blocks of 2 documents
    # as well as the default (one block here).
    with patch.object(bm25, "DOCUMENTS_PER_BLOCK", 2):
        blocked = Bm25Index.from_pool(pool, chosen)
    index = Bm25Index.from_pool(pool, chosen)
    pool.add("later arrival node node version")
    words = list(pool.words)
    question = " ".join(query)
    expected = BM25Okapi(corpus).get_scores(pool.tokenize(question)).tobytes()
    assert index.scores(question).tobytes() == expected
    assert blocked.scores(question).tobytes() == expected
    assert index.vocabulary == frozenset(w for doc in corpus for w in doc) <= set(words)
    assert blocked.vocabulary == index.vocabulary


def test_a_document_is_tokenized_once_across_days_and_stores():
    calls = []

    def counting(text):
        calls.append(text)
        return text.split()

    pool = TokenPool(counting)
    day1 = [pool.add(t) for t in ["a b", "b c"]]
    day2 = [pool.add(t) for t in ["a b", "b c", "c d"]]
    other_store = [pool.add(t) for t in ["c d", "a b"]]
    assert calls == ["a b", "b c", "c d"]
    assert [Bm25Index.from_pool(pool, ids).size for ids in (day1, day2, other_store)] == [2, 3, 2]


def test_a_view_that_outlives_its_call_does_not_stop_the_pool_growing():
    """A frame holding a view of the pool's arrays (a Dask worker's stack sampler, a kept
    traceback) once made the next arrival fail with BufferError."""
    texts = ["node version graph", "graph edge", "edge node node", "version two"]
    plain = TokenPool()
    plain_ids = [plain.add(t) for t in texts]
    pool = TokenPool()
    ids = [pool.add(t) for t in texts[:2]]
    lingering = [memoryview(a) for a in (pool._starts, pool._word_ids, pool._counts,
                                        pool._lengths)]
    ids += [pool.add(t) for t in texts[2:]]
    assert ids == plain_ids and lingering
    query = "node graph version"
    assert Bm25Index.from_pool(pool, ids).scores(query).tobytes() == \
        Bm25Index.from_pool(plain, plain_ids).scores(query).tobytes()


def test_index_cache_keeps_only_the_current_days_views(corpus):
    p = _params(30)
    scenario = build_scenario(read_scenario_spec(ROOT / p.scenario.file), corpus.files,
                              p.scenario.shape())
    records = EXTRACTORS[p.extractor](scenario)
    indexes = IndexCache()
    for day in scenario.probe_days:
        memory = Memory(scenario, records, day, indexes)
        memory.search("transcript", "bm25", "Which Node version?", 3)
        assert {key[1] for key in indexes._bm25} == {day}
    assert len(indexes.pool("plain")) == len(scenario.exchanges_through(max(scenario.probe_days)))
