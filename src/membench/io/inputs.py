"""A stage's inputs, read with one clear error when the stage that writes them has not run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
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
