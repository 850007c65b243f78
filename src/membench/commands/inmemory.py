"""The whole bench in one process, without DVC: for `membench bench` and fast tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from membench.extraction.extractors import FactRecord, extractor_for, reads_turn_vectors
from membench.io.corpus import Corpus, read_corpus
from membench.io.scenario_file import read_scenario_source
from membench.io.vocabulary import load_token_counter
from membench.memory.indexing import embedding_texts
from membench.memory.policies import (
    Policy,
    build_policies,
    embedded_stores,
    without_embeddings,
)
from membench.params import Params
from membench.plugins import CORE_KINDS, load_plugins
from membench.retrieval.embedding_cache import text_sha256
from membench.retrieval.retrievers import IndexCache
from membench.scenario.model import Scenario
from membench.scenario.sources import build_any
from membench.scoring.bench import BenchResult, Progress, run_bench


@dataclass(frozen=True)
class InMemoryRun:
    corpus: Corpus
    scenario: Scenario
    records: list[FactRecord]
    policies: list[Policy]
    result: BenchResult


def run_in_memory(params: Params, root: Path = Path("."), vocabulary: Path | None = None,
                  progress: Progress | None = None, dense: bool = False,
                  keep_contexts: bool = True) -> InMemoryRun:
    """With dense=False the policies that need embeddings are left out (no model load, fast);
    keep_contexts=False leaves the rows' contexts empty (a long story's run then holds one
    probe day's contexts at a time)."""
    s = params.scenario
    counter = load_token_counter(vocabulary)
    spec = read_scenario_source(root / s.file)
    corpus = read_corpus(s.corpus.source, s.corpus.glob, s.corpus.exclude, base=root)
    scenario = build_any(spec, corpus.files, s.shape())
    load_plugins(*CORE_KINDS)
    turn_vectors = None
    if reads_turn_vectors(params.extractor, params.extraction):
        turn_vectors = _embedded(list(dict.fromkeys(e.user for e in scenario.exchanges)),
                                 params, progress)
    records = extractor_for(params.extractor, params.extraction, turn_vectors)(scenario)
    policies = build_policies(params.policies)
    if not dense:
        policies = without_embeddings(policies)
    vectors = None
    if dense:
        vectors = _embedded(embedding_texts(scenario, records, embedded_stores(policies)),
                            params, progress)
    result = run_bench(scenario, records, policies, counter.count_lines,
                       IndexCache(vectors=vectors), progress=progress,
                       keep_contexts=keep_contexts)
    return InMemoryRun(corpus, scenario, records, policies, result)


def _embedded(texts: list[str], params: Params, progress: Progress | None) -> dict:
    """text SHA-256 -> grid vector, embedded here (the in-memory run has no cache)."""
    from membench.retrieval import embedding

    model = embedding.load_model(params.embedding.model)
    matrix = embedding.embed(texts, model, batch_size=params.embedding.batch_size,
                             progress=progress is not None)
    return {text_sha256(text): row for text, row in zip(texts, matrix, strict=True)}
