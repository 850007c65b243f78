"""The reader's tables: the probes it read (from the outcomes table) and its answers
(docs/schemas.md, answers.parquet)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import pyarrow as pa
import pyarrow.compute as pc

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

READ_COLUMNS = ["policy", "form", "day", "fact_key", "question", "context", "injected_tokens",
                "outcome"]


@dataclass(frozen=True)
class ReaderInput:
    items: list[ReaderItem]  # the reader's policies' rows, in the table's order
    policies: frozenset[str]  # every policy the table holds


def reader_items(batches: Iterable[pa.RecordBatch], policies: Sequence[str],
                 max_context_tokens: int) -> ReaderInput:
    """The outcomes table's rows as the reader reads them, a batch at a time: only the
    reader's policies' rows are kept, and a context only where it is sent (at most
    max_context_tokens), so a long story's whole transcripts are never all held."""
    wanted = pa.array(sorted(set(policies)), pa.string())
    items: list[ReaderItem] = []
    seen: set[str] = set()
    for batch in batches:
        seen.update(pc.unique(batch.column("policy")).to_pylist())
        chosen = batch.filter(pc.is_in(batch.column("policy"), value_set=wanted))
        columns = chosen.select(READ_COLUMNS).to_pydict()
        for values in zip(*(columns[c] for c in READ_COLUMNS), strict=True):
            item = ReaderItem(*values)
            if item.injected_tokens > max_context_tokens:  # never sent: not kept
                item = replace(item, context="")
            items.append(item)
    return ReaderInput(items, frozenset(seen))


def answers_table(rows: Sequence[AnswerRow]) -> pa.Table:
    return pa.Table.from_pylist([row.__dict__ for row in rows], schema=ANSWERS_SCHEMA)
