"""The record-key recency reader keeps the newest line of each record key, in linear time:
equal to the pairwise definition (a line goes when a later line has its key)."""

from __future__ import annotations

from fractions import Fraction
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from membench.memory.recency import RECORD_KEY, newest_per_group
from membench.retrieval.retrievers import Document


def _pairwise(keys: dict[int, str], documents: list[Document]) -> list[Document]:
    return [d for d in documents
            if not any(o.source > d.source and d.source in keys
                       and keys[d.source] == keys.get(o.source) for o in documents)]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 12), max_size=20),
       st.dictionaries(st.integers(0, 12), st.sampled_from(["a/x", "a/y", "b/x"]), max_size=10))
def test_the_newest_line_per_key_equals_the_pairwise_definition(sources, keys):
    documents = [Document(source, f"line {i}") for i, source in enumerate(sources)]
    records = [SimpleNamespace(exchange_index=index, key=key) for index, key in keys.items()]
    memory = SimpleNamespace(records=records, exchanges=[])
    kept = newest_per_group(memory, documents, RECORD_KEY, Fraction(1, 2))
    assert kept == _pairwise(keys, documents)


def test_a_reader_keeps_no_day_memory_alive_and_pickles_without_it(repo_root):
    """Its memos live as long as the day's memory: a worker's units no longer keep the last
    day's stores, and the policies sent to a cluster after a unit no longer carry them."""
    import gc
    import pickle
    import weakref

    from membench.commands.parameters import read_params
    from membench.extraction.extractors import EXTRACTORS
    from membench.io.corpus import read_corpus
    from membench.io.scenario_file import read_scenario_spec
    from membench.memory.policies import POLICIES
    from membench.memory.stores import Memory
    from membench.plugins import load_plugins
    from membench.retrieval.retrievers import IndexCache
    from membench.scenario.build import build_scenario

    load_plugins()
    p = read_params(repo_root / "params.yaml")
    s = p.scenario
    corpus = read_corpus(s.corpus.source, s.corpus.glob, s.corpus.exclude, base=repo_root)
    scenario = build_scenario(read_scenario_spec(repo_root / s.file), corpus.files,
                              s.shape())
    records = EXTRACTORS["perfect"](scenario)
    readers = [POLICIES[name](p.policies) for name in ("fact_log_latest",
                                                       "bm25_transcript_latest")]
    unused = [len(pickle.dumps(reader)) for reader in readers]
    memory = Memory(scenario, records, scenario.probe_days[-1], IndexCache())
    question = scenario.probes[-1].question
    first = [reader.inject(memory, question) for reader in readers]
    assert [reader.inject(memory, question) for reader in readers] == first
    assert [len(pickle.dumps(reader)) for reader in readers] == unused
    copies = [pickle.loads(pickle.dumps(reader)) for reader in readers]
    assert [copy.inject(memory, question) for copy in copies] == first
    gone = weakref.ref(memory)
    del memory
    gc.collect()
    assert gone() is None
