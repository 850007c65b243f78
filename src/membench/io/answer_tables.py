"""The reader's tables: the probes it read (from the outcomes table) and its answers
(docs/schemas.md, answers.parquet)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from membench.io.inputs import read_contexts
from membench.io.written_datasets import read_written
from membench.scoring.answers import AnswerRow, ReaderItem

ANSWERS_SCHEMA = pa.schema([
    pa.field("policy", pa.string(), nullable=False),
    pa.field("form", pa.string(), nullable=False),
    pa.field("day", pa.int32(), nullable=False),
    pa.field("fact_key", pa.string(), nullable=False),
    pa.field("context_outcome", pa.string(), nullable=False),
    pa.field("answer_outcome", pa.string(), nullable=False),
    pa.field("answer", pa.string()),  # null: not asked (context over max_context_tokens)
])

# The outcome columns the reader reads whole; a context is read by read_contexts, and only
# where the reader sends it.
READ_COLUMNS = ["policy", "form", "day", "fact_key", "question", "injected_tokens", "outcome"]


@dataclass(frozen=True)
class ReaderInput:
    items: list[ReaderItem]  # the reader's policies' rows, in the table's order
    policies: frozenset[str]  # every policy the table holds


def reader_items(outcomes: Path, contexts: Path, policies: Sequence[str],
                 max_context_tokens: int) -> ReaderInput:
    """The outcomes table's rows as the reader reads them: only the reader's policies'
    rows, and a context only where it is sent (at most max_context_tokens), read from
    the contexts file's row groups that hold one (read_contexts): a long story's whole
    transcripts are never all held."""
    table = read_written(outcomes, READ_COLUMNS)
    chosen = pc.is_in(table.column("policy"), value_set=pa.array(sorted(set(policies)),
                                                                  pa.string()))
    rows = pc.indices_nonzero(chosen).to_pylist()
    values = table.filter(chosen).to_pydict()
    tokens = values["injected_tokens"]
    sent = read_contexts(contexts, (row for row, count in zip(rows, tokens, strict=True)
                                        if count <= max_context_tokens))
    items = [ReaderItem(policy, form, day, fact_key, question, sent.get(row, ""),
                        count, outcome)
             for row, policy, form, day, fact_key, question, count, outcome in zip(
                 rows, *(values[name] for name in READ_COLUMNS), strict=True)]
    return ReaderInput(items, frozenset(pc.unique(table.column("policy")).to_pylist()))


def answers_table(rows: Sequence[AnswerRow]) -> pa.Table:
    return pa.Table.from_pylist([row.__dict__ for row in rows], schema=ANSWERS_SCHEMA)
