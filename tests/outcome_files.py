"""The policies stage's two files from outcome rows, with row groups cut where a test
wants them (as the stage writes them: the same row groups in both)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow.parquet as pq

from membench.io.tables import outcomes_table, split_outcomes
from membench.scoring.bench import OutcomeRow


def write_outcome_files(rows: Sequence[OutcomeRow], directory: Path,
                        row_group_size: int | None = None) -> tuple[Path, Path]:
    paths = directory / "outcomes.parquet", directory / "contexts.parquet"
    for table, path in zip(split_outcomes(outcomes_table(rows)), paths, strict=True):
        pq.write_table(table, path, row_group_size=row_group_size)
    return paths
