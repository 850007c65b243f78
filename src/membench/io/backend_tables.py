"""Parquet schemas of the backends stage's tables (docs/schemas.md documents them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

import pyarrow as pa

from membench.backends.at_rest import AtRestRow
from membench.backends.parity import ParityRow
from membench.backends.replay import RankingRow
from membench.io.tables import _rows, _table, result_from_tables, stored_table
from membench.scoring.bench import OutcomeRow


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


def outcomes_from_table(table: pa.Table) -> tuple[OutcomeRow, ...]:
    """The policies stage's outcomes of either format (the in-memory side of the parity
    check): its own reader, without the stored-tokens table."""
    return result_from_tables(table, stored_table([])).outcomes
