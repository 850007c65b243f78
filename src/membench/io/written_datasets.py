"""Datasets read in the order they were written: the policies stage's outcomes and
contexts (docs/schemas.md), partitioned by seed and user hive-style as the users stage's
(membench.io.datasets), under `data/outcomes.parquet/` and `data/contexts.parquet/`
(directories, as Spark names its datasets).

Their `_common_metadata` holds the files' schema and the partitions in the order their
rows were written (by day: a format-2 story's scenarios one after another), so that a
reader sees one table, its rows in the order the stage made them, and row *i* of the
contexts is row *i* of the outcomes across partitions as within one. Hive readers
(pandas, DuckDB, polars) see the same rows with `seed` and `user` columns added."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from membench.io.datasets import METADATA_FILE, PART_FILE, dataset_partitions, partition_dir

PARTITIONS_KEY = b"membench.partitions"  # JSON list of partition directories, as written
DEFAULT_USER = "user"  # a story that names no user: its user as the transcript calls them


def with_written_order(schema: pa.Schema, partitions: list[str]) -> pa.Schema:
    """The schema _common_metadata holds: the files', and the partitions in order."""
    return schema.with_metadata({**(schema.metadata or {}),
                                 PARTITIONS_KEY: json.dumps(partitions).encode()})


def outcome_partition(seed: int, user: str | None, segments: tuple = ()):
    """day -> the partition a probe day's rows go to: the format-2 scenario the day is in
    (each is one user's conversation), else the story's user, named or not."""
    default = partition_dir(seed, user or DEFAULT_USER)
    spans = [(first, last, partition_dir(seed, sid)) for sid, first, last in segments]

    def of(day: int) -> str:
        return next((where for first, last, where in spans if first <= day <= last), default)
    return of


def written_files(root: Path) -> tuple[pa.Schema, list[Path]]:
    """The files' schema and each partition's file in the order written; one-line errors
    naming the dataset for a missing one, an older membench's single file, no list of
    partitions, and a partition missing or stray."""
    schema = written_schema(root)
    found = {file for _, _, file in dataset_partitions(root)}
    metadata = schema.metadata or {}
    if PARTITIONS_KEY not in metadata:
        raise ValueError(f"{root} does not list its partitions in {METADATA_FILE}: rerun the "
                         "stage that writes it")
    listed = [root / relative / PART_FILE for relative in json.loads(metadata[PARTITIONS_KEY])]
    missing = [file for file in listed if file not in found]
    stray = sorted(found - set(listed))
    if missing or stray:
        which = (missing or stray)[0].parent.relative_to(root).as_posix()
        raise ValueError(f"{root}: partition {which} is {'missing' if missing else 'not listed'}"
                         f" in {METADATA_FILE}: rerun the stage that writes it")
    return schema, listed


def written_schema(root: Path) -> pa.Schema:
    """The files' schema (no partition columns), with the order in its metadata."""
    if root.is_file():
        raise ValueError(f"{root} is a single file, written by an older membench: delete it "
                         "and rerun the policies stage")
    if not root.exists():
        raise FileNotFoundError(f"input {root} is missing: run the stage that writes it first")
    try:
        return pq.read_schema(root / METADATA_FILE)
    except FileNotFoundError:
        raise ValueError(f"{root} is not a dataset membench wrote (no {METADATA_FILE}): "
                         "delete it and rerun the stage that writes it") from None
    except pa.ArrowInvalid as error:
        raise ValueError(f"{root / METADATA_FILE} is corrupt: delete {root} and rerun the "
                         f"stage that writes it ({_first_line(error)})") from error


def read_written(root: Path, columns: list[str] | None = None) -> pa.Table:
    """The dataset's rows as one table of the files' columns, in the order written."""
    schema, files = written_files(root)
    tables = [_read_file(file, schema, columns) for file in files]
    if not tables:
        return schema.empty_table() if columns is None else schema.empty_table().select(columns)
    return pa.concat_tables(tables)


def row_groups(root: Path) -> Iterator[tuple[pq.ParquetFile, int]]:
    """(file, row group) of every row group, in the order written: one at a time."""
    schema, files = written_files(root)
    for file in files:
        parquet = _open(file, schema)
        for group in range(parquet.metadata.num_row_groups):
            yield parquet, group


def written_rows(root: Path) -> int:
    return sum(parquet.metadata.row_group(group).num_rows for parquet, group in row_groups(root))


def _read_file(file: Path, schema: pa.Schema, columns: list[str] | None) -> pa.Table:
    # one file, not a directory: no partition columns discovered from its path
    parquet = _open(file, schema)
    try:
        return parquet.read(columns=columns)
    except pa.ArrowInvalid as error:
        raise corrupt_input(file, error) from error


def _open(file: Path, schema: pa.Schema) -> pq.ParquetFile:
    """The file, if it is Parquet with the dataset's schema (a partition from another
    release, or copied in, is refused in one line)."""
    try:
        parquet = pq.ParquetFile(file)
    except pa.ArrowInvalid as error:
        raise corrupt_input(file, error) from error
    if not parquet.schema_arrow.equals(schema, check_metadata=False):
        raise ValueError(f"{file} does not have the expected schema (its dataset's "
                         f"{METADATA_FILE}): rerun the stage that writes it")
    return parquet


def corrupt_input(file: Path, error: Exception) -> ValueError:
    """pyarrow's own error: the bytes are not the Parquet file written (a corrupt DVC cache
    entry checked out, a truncated copy), said in one line naming the file (read_parquet's
    too)."""
    return ValueError(f"input {file} is corrupt or not Parquet ({_first_line(error)}): "
                      "delete it and run `dvc repro` to recompute it")


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else repr(error)
