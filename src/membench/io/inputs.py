"""A stage's inputs, read with one clear error when the stage that writes them has not run."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from membench.io.tables import scenario_from_tables
from membench.scenario.model import Scenario


def read_parquet(path: Path, columns: list[str] | None = None):
    if not path.is_file():
        raise FileNotFoundError(f"input {path} is missing: run the stage that writes it first")
    try:
        return pq.read_table(path, columns=columns)
    except (OSError, pa.ArrowInvalid) as error:
        if isinstance(error, OSError) and error.errno is not None:
            raise  # the machine's (a permission, a disk), not the file's content
        # pyarrow's own: the bytes are not the Parquet file written (a corrupt DVC cache
        # entry checked out, a truncated copy), said in one line naming the file.
        reason = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        raise ValueError(f"input {path} is corrupt or not Parquet ({reason}): delete it and "
                         "run `dvc repro` to recompute it") from error


BATCH_ROWS = 1 << 20  # rows of a large table read at once


def read_batches(path: Path, batch_rows: int = BATCH_ROWS,
                 columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
    """A table a batch at a time (a reader that folds it never holds it whole), at least
    one batch (empty for no rows, so its schema is still seen); a missing or corrupt file
    is read_parquet's one-line error."""
    if not path.is_file():
        raise FileNotFoundError(f"input {path} is missing: run the stage that writes it first")
    try:
        reader = pq.ParquetFile(path)
    except (OSError, pa.ArrowInvalid):
        read_parquet(path)  # raises the error read_parquet gives for these bytes
        raise
    if reader.metadata.num_rows == 0:
        schema = reader.schema_arrow
        if columns is not None:
            schema = pa.schema([schema.field(name) for name in columns])
        yield pa.RecordBatch.from_pylist([], schema=schema)
        return
    yield from reader.iter_batches(batch_size=batch_rows, columns=columns)


def read_contexts(path: Path, rows: Iterable[int]) -> dict[int, str]:
    """The outcomes' `context` of the given rows, reading only the row groups that hold
    them, one at a time: the peak is one row group's contexts (at most about 64 Mi
    characters as the policies stage writes them), never the column's (gigabytes at a
    thousand sessions: whole transcripts)."""
    wanted = sorted(set(rows))
    found: dict[int, str] = {}
    if not wanted:
        return found
    file = pq.ParquetFile(path)
    position, start = 0, 0
    for group in range(file.metadata.num_row_groups):
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
    return found


def read_outcomes(path: Path, contexts_of: frozenset[str] = frozenset()) -> pa.Table:
    """The policies stage's outcomes without the bulk of their contexts (gigabytes once
    decoded at a thousand sessions): every column, but `context` holds the injected text
    only on rows whose outcome is in `contexts_of` (the report's stale traces), "" on the
    rest, read by read_contexts."""
    schema = pq.read_schema(path) if path.is_file() else pa.schema([])
    names = schema.names
    if "context" not in names:
        return read_parquet(path)  # missing, or not outcomes: read_parquet says so
    table = read_parquet(path, [name for name in names if name != "context"])
    kept: dict[int, str] = {}
    if contexts_of:
        wanted = pa.array(sorted(contexts_of), pa.string())
        mask = pc.is_in(table.column("outcome"), value_set=wanted)
        kept = read_contexts(path, pc.indices_nonzero(mask).to_pylist())
    contexts = pa.array([kept.get(row, "") for row in range(table.num_rows)],
                        schema.field("context").type)
    return table.add_column(names.index("context"), schema.field("context"), contexts)


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
