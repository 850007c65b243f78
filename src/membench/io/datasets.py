"""Parquet datasets partitioned by seed and user, hive-style (`seed=7/user=u001/part-0.parquet`),
for the tables that grow with the users: a reader takes one user's rows without opening the
others', and pandas, DuckDB, polars and pyarrow.dataset read the directory as one table
(docs/schemas.md shows how).

The partition columns live only in the directory names, as hive readers expect (a column
both in the files and in the path is a type conflict for pyarrow's discovery). The files'
schema is also written to `_common_metadata` at the root, so a dataset with no rows (a
single-user story) still says what its rows would be; hive readers skip files starting
with `_`."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from urllib.parse import quote, unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

PARTITIONING = pa.schema([pa.field("seed", pa.int64(), nullable=False),
                          pa.field("user", pa.string(), nullable=False)])
METADATA_FILE = "_common_metadata"
PART_FILE = "part-0.parquet"
_PARTITION = re.compile(rf"seed=(-?\d+)/user=([^/]+)/{re.escape(PART_FILE)}")


def partition_dir(seed: int, user: str) -> str:
    """The partition's directory, relative to the dataset's root: the user's name
    percent-encoded (a name may hold `/` or `=`), as pyarrow and DuckDB decode it."""
    return f"seed={seed}/user={quote(user, safe='')}"


def user_partitions(tables: Iterable[pa.Table], seed: int) -> Iterator[tuple[str, pa.Table]]:
    """(partition directory, one user's rows without the `user` column) for each user of
    the tables, by user: each user's rows in the tables' order. Tables, not one, and a
    user's rows are copied only when that user is written: the users stage's rows are
    never all copied into one table."""
    pieces: dict[str, list[tuple[pa.Table, pa.Array | None]]] = {}
    for table in tables:
        counts = pc.value_counts(table.column("user")).to_pylist()
        if len(counts) == 1:  # one user's unit: the whole table, no copy
            pieces.setdefault(counts[0]["values"], []).append((table, None))
            continue
        order = pc.sort_indices(table, [("user", "ascending")])  # stable: rows keep order
        start = 0  # the users' runs, in the sort's order (UTF-8 bytes: code points, as str)
        for counted in sorted(counts, key=lambda counted: counted["values"]):
            rows = order.slice(start, counted["counts"])
            pieces.setdefault(counted["values"], []).append((table, rows))
            start += counted["counts"]
    for user in sorted(pieces):
        taken = [table if rows is None else table.take(rows) for table, rows in pieces.pop(user)]
        yield partition_dir(seed, user), pa.concat_tables(taken).combine_chunks().drop_columns(
            ["user"])


def without_partitioning(schema: pa.Schema) -> pa.Schema:
    """The schema of the files: the rows' schema less the columns in directory names."""
    return pa.schema([field for field in schema if field.name not in PARTITIONING.names])


def dataset_partitions(root: Path) -> list[tuple[int, str, Path]]:
    """(seed, user, file) of every partition, by seed then user; one-line errors for a
    missing dataset, a file where the directory should be, and a stray partition."""
    if not root.exists():
        raise FileNotFoundError(f"input {root} is missing: run the stage that writes it first")
    if not (root / METADATA_FILE).is_file():
        raise ValueError(f"{root} is not a dataset membench wrote (no {METADATA_FILE}): delete "
                         "it and rerun the stage that writes it")
    found = []
    for file in root.rglob("*"):
        relative = file.relative_to(root).as_posix()
        if file.is_dir() or relative == METADATA_FILE:
            continue
        matched = _PARTITION.fullmatch(relative)
        if matched is None:
            raise ValueError(f"{root} holds {relative}, which is not a partition "
                             f"(seed=<int>/user=<name>/{PART_FILE}): rerun the stage that "
                             "writes it")
        found.append((int(matched.group(1)), unquote(matched.group(2)), file))
    return sorted(found)


def read_user_batches(root: Path, schema: pa.Schema,
                      batch_rows: int) -> Iterator[pa.RecordBatch]:
    """The dataset's rows a batch at a time, each with its partition's `user` put back
    (batches of `schema`), partitions by seed then user: at least one batch, empty for no
    rows, so a reader still sees the schema."""
    files_schema = without_partitioning(schema)
    partitions = dataset_partitions(root)
    stored = pq.read_schema(root / METADATA_FILE)
    if not stored.equals(files_schema, check_metadata=False):
        raise ValueError(f"{root} does not have the expected schema: rerun the stage that "
                         "writes it")
    position = schema.get_field_index("user")
    yielded = False
    for _, user, file in partitions:
        for batch in pq.ParquetFile(file).iter_batches(batch_size=batch_rows):
            users = pa.array([user] * batch.num_rows, pa.string())
            columns = batch.columns
            columns.insert(position, users)
            yield pa.RecordBatch.from_arrays(columns, schema=schema)
            yielded = True
    if not yielded:
        yield pa.RecordBatch.from_pylist([], schema=schema)
