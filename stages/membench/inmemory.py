"""The whole bench in one process, without DVC: for `membench bench` and fast tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from membench.core.bench import BenchResult, Progress, run_bench
from membench.core.embedding_cache import text_sha256
from membench.core.extract import EXTRACTORS, FactRecord
from membench.core.indexing import embedding_texts
from membench.core.model import Scenario
from membench.core.policies import (
    Policy,
    build_policies,
    embedded_stores,
    without_embeddings,
)
from membench.core.retrievers import IndexCache
from membench.core.scenario import build_scenario
from membench.corpus import Corpus, read_corpus
from membench.params import Params
from membench.plugins import load_plugins
from membench.scenario_file import read_scenario_spec
from membench.vocabulary import load_token_counter


@dataclass(frozen=True)
class InMemoryRun:
    corpus: Corpus
    scenario: Scenario
    records: list[FactRecord]
    policies: list[Policy]
    result: BenchResult


def run_in_memory(params: Params, root: Path = Path("."), vocabulary: Path | None = None,
                  progress: Progress | None = None, dense: bool = False) -> InMemoryRun:
    """With dense=False the policies that need embeddings are left out (no model load, fast)."""
    s = params.scenario
    counter = load_token_counter(vocabulary)
    spec = read_scenario_spec(root / s.file)
    corpus = read_corpus(s.corpus.source, s.corpus.glob, s.corpus.exclude, base=root)
    scenario = build_scenario(spec, corpus.files, s.shape())
    load_plugins()
    records = EXTRACTORS[params.extractor](scenario)
    policies = build_policies(params.policies)
    if not dense:
        policies = without_embeddings(policies)
    vectors = None
    if dense:
        from membench import embedding

        texts = embedding_texts(scenario, records, embedded_stores(policies))
        model = embedding.load_model(params.embedding.model)
        matrix = embedding.embed(texts, model, batch_size=params.embedding.batch_size,
                                 progress=progress is not None)
        vectors = {text_sha256(text): row for text, row in zip(texts, matrix, strict=True)}
    result = run_bench(scenario, records, policies, counter.count_all,
                       IndexCache(vectors=vectors), progress=progress)
    return InMemoryRun(corpus, scenario, records, policies, result)
