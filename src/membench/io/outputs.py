"""Writes a stage's outputs all-or-nothing: every file goes to a temporary sibling and is
renamed into place only when the whole stage succeeded."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


class StagedOutputs:
    def __init__(self) -> None:
        self._pending: list[tuple[Path, Path]] = []

    def _temporary(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.partial")
        self._pending.append((temporary, path))
        return temporary

    def parquet(self, path: Path, table: pa.Table) -> None:
        # Fixed writer options: same table, same bytes (pyarrow pins its version in the footer).
        pq.write_table(table, self._temporary(path), compression="zstd", compression_level=3,
                       write_statistics=True, use_dictionary=True)

    def text(self, path: Path, text: str) -> None:
        self._temporary(path).write_text(text, encoding="utf-8")

    def json(self, path: Path, data: Any) -> None:
        self.text(path, json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")

    def bytes(self, path: Path, data: bytes) -> None:
        self._temporary(path).write_bytes(data)


@contextmanager
def staged_outputs() -> Iterator[StagedOutputs]:
    staged = StagedOutputs()
    try:
        yield staged
    except BaseException:
        for temporary, _ in staged._pending:
            temporary.unlink(missing_ok=True)
        raise
    for temporary, final in staged._pending:
        os.replace(temporary, final)
