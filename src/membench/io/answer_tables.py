"""The reader's tables: the probes it read (from the outcomes table) and its answers
(docs/schemas.md, answers.parquet)."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

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


def reader_items(outcomes: pa.Table) -> list[ReaderItem]:
    """The outcomes table's rows as the reader reads them, in the table's order."""
    columns = outcomes.select(READ_COLUMNS).to_pydict()
    return [ReaderItem(*values) for values in zip(*(columns[c] for c in READ_COLUMNS),
                                                  strict=True)]


def answers_table(rows: Sequence[AnswerRow]) -> pa.Table:
    return pa.Table.from_pylist([row.__dict__ for row in rows], schema=ANSWERS_SCHEMA)
