"""The whole bench in one process, without DVC: for `membench bench` and fast tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from membench.core.bench import BenchResult, Progress, run_bench
from membench.core.extract import EXTRACTORS, FactRecord
from membench.core.model import Scenario
from membench.core.policies import Policy
from membench.core.scenario import build_scenario
from membench.corpus import Corpus, read_corpus
from membench.params import Params
from membench.policy_set import build_policies
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
                  progress: Progress | None = None) -> InMemoryRun:
    s = params.scenario
    counter = load_token_counter(vocabulary)
    spec = read_scenario_spec(root / s.file)
    corpus = read_corpus(s.corpus.dir, s.corpus.glob, list(s.corpus.exclude))
    scenario = build_scenario(spec, corpus.files, s.shape())
    records = EXTRACTORS[params.extractor](scenario)
    policies = build_policies(params.policies)
    result = run_bench(scenario, records, policies, counter.count, progress=progress)
    return InMemoryRun(corpus, scenario, records, policies, result)
