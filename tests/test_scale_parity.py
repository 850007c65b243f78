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

import numpy as np
import pytest
from bench_digest import outcome_digest
from rank_bm25 import BM25Okapi

from membench.commands.common import read_params
from membench.commands.inmemory import run_in_memory
from membench.extraction.extractors import EXTRACTORS
from membench.io.corpus import read_corpus
from membench.io.scenario_file import read_scenario_spec
from membench.memory.policies import build_policies, searches, without_embeddings
from membench.memory.stores import Memory
from membench.retrieval.bm25 import on_score_grid
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
