"""The policies stage's two datasets from outcome rows, with row groups cut where a test
wants them (as the stage writes them: the same row groups in both), in one partition or
in one per probe day."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow.parquet as pq

from membench.io.datasets import METADATA_FILE, PART_FILE, partition_dir
from membench.io.tables import outcomes_table, split_outcomes
from membench.io.written_datasets import with_written_order
from membench.scoring.bench import OutcomeRow


def write_outcome_files(rows: Sequence[OutcomeRow], directory: Path,
                        row_group_size: int | None = None,
                        user_per_day: bool = False) -> tuple[Path, Path]:
    paths = directory / "outcomes.parquet", directory / "contexts.parquet"
    days = list(dict.fromkeys(row.day for row in rows)) if user_per_day else [None]
    partitions = [partition_dir(7, "user" if day is None else f"day {day}") for day in days]
    for root in paths:
        root.mkdir(parents=True)
    schemas = []
    for day, partition in zip(days, partitions, strict=True):
        chosen = [row for row in rows if day is None or row.day == day]
        for table, root in zip(split_outcomes(outcomes_table(chosen)), paths, strict=True):
            (root / partition).mkdir(parents=True)
            pq.write_table(table, root / partition / PART_FILE, row_group_size=row_group_size)
            schemas.append(table.schema)
    for root, schema in zip(paths, schemas, strict=False):
        pq.write_metadata(with_written_order(schema, partitions), root / METADATA_FILE)
    return paths
