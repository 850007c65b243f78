"""Parquet schemas of the backends stage's tables (docs/schemas.md documents them)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from membench.backends.at_rest import AtRestRow
from membench.backends.parity import ParityRow, ProbeKey, context_digest
from membench.backends.replay import RankingRow
from membench.io.tables import (
    CONTEXTS_FORMAT2_SCHEMA,
    CONTEXTS_SCHEMA,
    OUTCOMES_FILE_FORMAT2_SCHEMA,
    OUTCOMES_FILE_SCHEMA,
    _rows,
    _table,
)
from membench.io.written_datasets import read_written, row_groups, written_rows, written_schema


def _list(item: pa.DataType) -> pa.DataType:
    return pa.list_(pa.field("item", item, nullable=False))


BACKEND_PARITY_SCHEMA = pa.schema([
    pa.field("backend", pa.string(), nullable=False),
    pa.field("policy", pa.string(), nullable=False),
    pa.field("day", pa.int32(), nullable=False),
    pa.field("fact_key", pa.string(), nullable=False),
    pa.field("form", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("outcome", pa.string(), nullable=False),
    pa.field("memory_outcome", pa.string(), nullable=False),
    pa.field("same_outcome", pa.bool_(), nullable=False),
    pa.field("same_context", pa.bool_(), nullable=False),
])

BACKEND_RANKINGS_SCHEMA = pa.schema([
    pa.field("backend", pa.string(), nullable=False),
    pa.field("store", pa.string(), nullable=False),
    pa.field("retriever", pa.string(), nullable=False),
    pa.field("day", pa.int32(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("k", pa.int32(), nullable=False),
    pa.field("exact", _list(pa.int32()), nullable=False),
    pa.field("native", _list(pa.int32()), nullable=False),
    pa.field("same", pa.bool_(), nullable=False),
])

BACKEND_AT_REST_SCHEMA = pa.schema([
    pa.field("backend", pa.string(), nullable=False),
    pa.field("store", pa.string(), nullable=False),
    pa.field("remedy", pa.string(), nullable=False),
    pa.field("day", pa.int32(), nullable=False),
    pa.field("fact_key", pa.string(), nullable=False),
    pa.field("form", pa.string(), nullable=False),
    pa.field("places", _list(pa.string()), nullable=False),
    pa.field("files", _list(pa.string()), nullable=False),
])


def parity_table(rows: Sequence[ParityRow]) -> pa.Table:
    return _table(BACKEND_PARITY_SCHEMA, [asdict(r) for r in rows])


def rankings_table(rows: Sequence[RankingRow]) -> pa.Table:
    return _table(BACKEND_RANKINGS_SCHEMA, [
        {**asdict(r), "exact": list(r.exact), "native": list(r.native),
         "same": r.exact == r.native} for r in rows])


def at_rest_table(rows: Sequence[AtRestRow]) -> pa.Table:
    return _table(BACKEND_AT_REST_SCHEMA, [
        {**asdict(r), "places": list(r.places), "files": list(r.files)} for r in rows])


def at_rest_from_table(table: pa.Table) -> list[AtRestRow]:
    return [AtRestRow(**{**row, "places": tuple(row["places"]), "files": tuple(row["files"])})
            for row in _rows(table, BACKEND_AT_REST_SCHEMA, "backend at-rest table")]


def memory_index_from_parquet(outcomes: Path, contexts: Path, policies: Iterable[str]
                              ) -> dict[ProbeKey, tuple[str, bytes]]:
    """parity.memory_index of the policies stage's outcomes, their contexts read a row
    group at a time (at most about 64 Mi context characters as the policies stage writes
    them; a batch of rows could hold thousands of whole transcripts): at a thousand
    sessions the contexts are gigabytes once decoded."""
    schema, context_schema = written_schema(outcomes), written_schema(contexts)
    format2 = "probe_id" in schema.names
    for path, found, expected in (
            (outcomes, schema, OUTCOMES_FILE_FORMAT2_SCHEMA if format2 else OUTCOMES_FILE_SCHEMA),
            (contexts, context_schema, CONTEXTS_FORMAT2_SCHEMA if format2 else CONTEXTS_SCHEMA)):
        if not found.equals(expected, check_metadata=False):
            raise ValueError(f"{path} does not have the expected schema: rerun the policies "
                             "stage")
    columns = ["policy", "day", "question", "outcome"] + (["probe_id"] * format2)
    table = read_written(outcomes, columns)
    context_rows = written_rows(contexts)
    if context_rows != table.num_rows:
        raise ValueError(f"{contexts} has {context_rows} rows and {outcomes} "
                         f"{table.num_rows}: rerun the policies stage")
    chosen = pc.is_in(table.column("policy"), value_set=pa.array(sorted(set(policies)),
                                                                  pa.string()))
    index: dict[ProbeKey, tuple[str, bytes]] = {}
    start = 0
    for file, group in row_groups(contexts):  # one row group's contexts at a time
        end = start + file.metadata.row_group(group).num_rows
        mask = chosen.slice(start, end - start)
        rows = table.slice(start, end - start).filter(mask)
        context = file.read_row_group(group, columns=["context"]).column("context").filter(mask)
        probe_ids = (rows.column("probe_id").to_pylist() if format2
                     else [None] * rows.num_rows)
        for policy, day, question, outcome, text, probe_id in zip(
                rows.column("policy").to_pylist(), rows.column("day").to_pylist(),
                rows.column("question").to_pylist(), rows.column("outcome").to_pylist(),
                context.to_pylist(), probe_ids, strict=True):
            index[(policy, day, probe_id, question)] = (outcome, context_digest(text))
        start = end
    return index
