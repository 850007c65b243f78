"""A stage's inputs, read with one clear error when the stage that writes them has not run."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from membench.io.tables import (
    CONTEXT_COLUMN,
    OUTCOMES_FORMAT2_SCHEMA,
    OUTCOMES_SCHEMA,
    scenario_from_tables,
)
from membench.io.written_datasets import (
    corrupt_input,
    read_written,
    row_groups,
    written_schema,
)
from membench.scenario.model import Scenario


def read_parquet(path: Path, columns: list[str] | None = None):
    if not path.is_file():
        raise FileNotFoundError(f"input {path} is missing: run the stage that writes it first")
    try:
        return pq.read_table(path, columns=columns)
    except (OSError, pa.ArrowInvalid) as error:
        if isinstance(error, OSError) and error.errno is not None:
            raise  # the machine's (a permission, a disk), not the file's content
        raise corrupt_input(path, error) from error


BATCH_ROWS = 1 << 20  # rows of a large table read at once


def read_contexts(path: Path, rows: Iterable[int]) -> dict[int, str]:
    """The contexts dataset's `context` of the given rows (the outcomes' rows: the two go
    row for row, in the order written), reading only the row groups that hold them, one
    at a time: the peak is one row group's contexts (at most about 64 Mi characters as
    the policies stage writes them), never the column's (gigabytes at a thousand
    sessions: whole transcripts)."""
    wanted = sorted(set(rows))
    found: dict[int, str] = {}
    if not wanted:
        return found
    position, start = 0, 0
    for file, group in row_groups(path):
        end = start + file.metadata.row_group(group).num_rows
        mine = []
        while position < len(wanted) and wanted[position] < end:
            mine.append(wanted[position])
            position += 1
        if mine:
            column = file.read_row_group(group, columns=["context"]).column("context")
            taken = column.take(pa.array([row - start for row in mine], pa.int64()))
            found.update(zip(mine, taken.to_pylist(), strict=True))
        start = end
    if position < len(wanted):
        raise ValueError(f"{path} has {start} rows, not the outcomes' {wanted[-1] + 1} or "
                         "more: rerun the policies stage")
    return found


def read_outcomes(path: Path, contexts: Path | None = None,
                  contexts_of: frozenset[str] = frozenset()) -> pa.Table:
    """The policies stage's outcomes (a dataset) as one table with a `context` column (the in-memory
    outcomes_table's schema) that holds the injected text only on rows whose outcome is in
    `contexts_of` (the report's stale traces), read from the contexts file by
    read_contexts; "" on the rest. The contexts file is not opened when there is none to
    read."""
    if CONTEXT_COLUMN in written_schema(path).names:
        raise ValueError(f"{path} holds contexts: it was written by an older membench; "
                         "rerun the policies stage")
    table = read_written(path)
    kept: dict[int, str] = {}
    if contexts_of:
        if contexts is None:
            raise ValueError("the contexts file is needed to read contexts")
        wanted = pa.array(sorted(contexts_of), pa.string())
        mask = pc.is_in(table.column("outcome"), value_set=wanted)
        kept = read_contexts(contexts, pc.indices_nonzero(mask).to_pylist())
    full = OUTCOMES_FORMAT2_SCHEMA if "probe_id" in table.schema.names else OUTCOMES_SCHEMA
    column = pa.array([kept.get(row, "") for row in range(table.num_rows)],
                      full.field(CONTEXT_COLUMN).type)
    return table.add_column(full.get_field_index(CONTEXT_COLUMN),
                            full.field(CONTEXT_COLUMN), column)


def read_json(path: Path) -> Any:
    if not path.is_file():
        raise FileNotFoundError(f"input {path} is missing: run the stage that writes it first")
    return json.loads(path.read_text(encoding="utf-8"))


def read_scenario(directory: Path) -> Scenario:
    """The scenario stage's tables and manifest, as the Scenario they were written from."""
    manifest = read_json(directory / "manifest.json")
    return scenario_from_tables(read_parquet(directory / "exchanges.parquet"),
                                read_parquet(directory / "facts.parquet"),
                                read_parquet(directory / "probes.parquet"),
                                seed=manifest["seed"], manifest=manifest)
