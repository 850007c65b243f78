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
