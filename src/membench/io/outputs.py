"""Writes a stage's outputs all-or-nothing: every file goes to a temporary sibling and is
renamed into place only when the whole stage succeeded."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from membench.cleanup.interrupts import deferred
from membench.cleanup.private_temp import track_file, untrack_file
from membench.io.datasets import METADATA_FILE, PART_FILE
from membench.io.written_datasets import with_written_order


class OutputError(OSError):
    """An output that cannot be written (a full disk, a read-only directory), naming the file:
    pyarrow's own error names neither the file nor, in one line, the cause."""

    def __init__(self, path: Path, cause: OSError) -> None:
        reason = os.strerror(cause.errno) if cause.errno else str(cause)
        super().__init__(f"cannot write {path}: {reason}")
        self.errno = cause.errno


# Fixed writer options: same table, same bytes (pyarrow pins its version in the footer).
PARQUET_OPTIONS: dict[str, Any] = {"compression": "zstd", "compression_level": 3,
                                   "write_statistics": True, "use_dictionary": True}


class StagedOutputs:
    def __init__(self) -> None:
        self._pending: list[tuple[Path, Path]] = []

    def _write(self, path: Path, write: Callable[[Path], object]) -> None:
        try:
            write(self._staged(path))
        except OSError as error:
            raise OutputError(path, error) from error

    def _staged(self, path: Path) -> Path:
        temporary = path.with_name(f".{path.name}.partial")
        path.parent.mkdir(parents=True, exist_ok=True)
        self._pending.append((temporary, path))
        track_file(temporary.absolute())  # removed by the reaper if SIGKILL cuts in
        return temporary

    def parquet(self, path: Path, table: pa.Table) -> None:
        self._write(path, lambda temporary: pq.write_table(table, temporary, **PARQUET_OPTIONS))

    def parquet_stream(self, path: Path, tables: Iterable[pa.Table]) -> int:
        """Writes tables of one schema as they are made, each its own row groups, and returns
        the rows written: the caller holds one table at a time, never the whole file's. One
        table written this way gives the bytes `parquet` gives. Errors of the code making
        the tables are its own; only the writer's are this file's."""
        return self.parquet_streams([path], ((table,) for table in tables))

    def parquet_streams(self, paths: Sequence[Path],
                        tables: Iterable[Sequence[pa.Table]]) -> int:
        """parquet_stream into several files at once, one table for each at every step
        (files whose rows go together, cut into the same row groups); returns the rows
        written to the first."""
        temporaries = []
        for path in paths:
            try:
                temporaries.append(self._staged(path))
            except OSError as error:
                raise OutputError(path, error) from error
        writers = _Writers(paths, temporaries)
        try:
            for step in tables:
                writers.write(step)
        finally:
            writers.close()
        if not writers.opened:
            raise ValueError(f"no table to write to {paths[0]} (give an empty one for no "
                             "rows)")
        return writers.rows

    def dataset_streams(self, roots: Sequence[Path],
                        steps: Iterable[tuple[str, Sequence[pa.Table]]]) -> int:
        """parquet_streams into datasets partitioned alike (membench.io.written_datasets):
        at every step one table for each root and the partition they go to, a partition's
        steps together. Each root's _common_metadata lists the partitions in the order
        written. Returns the rows written to the first root."""
        temporaries = []
        for root in roots:
            try:
                temporary = self._staged(root)
                _empty_dir(temporary)
            except OSError as error:
                raise OutputError(root, error) from error
            temporaries.append(temporary)
        order: list[str] = []
        schemas: list[pa.Schema] = []
        writers: _Writers | None = None
        rows = 0
        try:
            for partition, step in steps:
                if not order or partition != order[-1]:
                    if partition in order:
                        raise ValueError(f"the rows of partition {partition} of {roots[0]} "
                                         "do not come together")
                    if writers is not None:
                        writers.close()
                        rows += writers.rows
                    order.append(partition)
                    paths = [temporary / partition / PART_FILE for temporary in temporaries]
                    for root, path in zip(roots, paths, strict=True):
                        try:
                            path.parent.mkdir(parents=True)
                        except OSError as error:
                            raise OutputError(root, error) from error
                    writers = _Writers(roots, paths)
                schemas = schemas or [table.schema for table in step]
                for root, table, schema in zip(roots, step, schemas, strict=True):
                    if not table.schema.equals(schema, check_metadata=False):
                        raise ValueError(f"partition {partition} of {root} does not have "
                                         "the schema of the first")
                writers.write(step)
        finally:
            if writers is not None:
                writers.close()
        if writers is None:
            raise ValueError(f"no table to write to {roots[0]} (give an empty one for no "
                             "rows)")
        rows += writers.rows
        for root, temporary, schema in zip(roots, temporaries, schemas, strict=True):
            try:
                pq.write_metadata(with_written_order(schema, order), temporary / METADATA_FILE)
            except OSError as error:
                raise OutputError(root, error) from error
        return rows

    def dataset(self, root: Path, schema: pa.Schema,
                partitions: Iterable[tuple[str, pa.Table]]) -> int:
        """A partitioned dataset (membench.io.datasets), a directory staged whole: the files'
        schema in its _common_metadata, then each partition's rows; returns the rows."""
        rows = 0

        def write(temporary: Path) -> None:
            nonlocal rows
            _empty_dir(temporary)
            pq.write_metadata(schema, temporary / METADATA_FILE)
            for relative, table in partitions:
                if not table.schema.equals(schema, check_metadata=False):
                    raise ValueError(f"partition {relative} of {root} does not have the "
                                     f"dataset's schema")
                (temporary / relative).mkdir(parents=True)
                pq.write_table(table, temporary / relative / PART_FILE, **PARQUET_OPTIONS)
                rows += table.num_rows

        self._write(root, write)
        return rows

    def text(self, path: Path, text: str) -> None:
        self._write(path, lambda temporary: temporary.write_text(text, encoding="utf-8"))

    def json(self, path: Path, data: Any) -> None:
        self.text(path, json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")

    def bytes(self, path: Path, data: bytes) -> None:
        self._write(path, lambda temporary: temporary.write_bytes(data))

    def discard(self) -> None:
        """Removes every temporary file; one that cannot be removed (a read-only directory,
        where it could not be made either) must not hide the error that stopped the stage."""
        for temporary, _ in self._pending:
            with suppress(OSError):
                if temporary.is_dir():
                    shutil.rmtree(temporary)
                else:
                    temporary.unlink(missing_ok=True)
            untrack_file(temporary.absolute())


@contextmanager
def staged_outputs() -> Iterator[StagedOutputs]:
    staged = StagedOutputs()
    try:
        yield staged
    except BaseException:
        with deferred():  # a signal now does not leave a temporary file behind
            staged.discard()
        raise
    with deferred():  # every output renamed into place, or (an error) none left partial
        for temporary, final in staged._pending:
            try:
                _replace(temporary, final)
            except OSError as error:
                staged.discard()
                raise OutputError(final, error) from error
            untrack_file(temporary.absolute())


def _replace(temporary: Path, final: Path) -> None:
    """os.replace, also where a directory replaces or is replaced (rename cannot replace a
    directory that holds files, nor a file by a directory or the other way round, as when
    an earlier release wrote a single file where a dataset now goes): the old one is moved
    aside, then removed, file or directory."""
    if not (final.exists() and (temporary.is_dir() or final.is_dir())):
        os.replace(temporary, final)
        return
    old = final.with_name(f".{final.name}.old")
    track_file(old.absolute())  # removed by the reaper if SIGKILL cuts in
    _discard(old)
    os.replace(final, old)
    os.replace(temporary, final)
    _discard(old)
    untrack_file(old.absolute())


def _empty_dir(temporary: Path) -> None:
    """A dataset's staging directory, made empty: a killed run's, if the reaper missed it."""
    shutil.rmtree(temporary, ignore_errors=True)
    temporary.mkdir()


def _discard(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


class _Writers:
    """One ParquetWriter per file, each opened at its first table; closed together (every
    one, even when one fails), errors naming the output."""

    def __init__(self, names: Sequence[Path], paths: Sequence[Path]) -> None:
        self._names, self._paths = names, paths
        self._writers: list[pq.ParquetWriter | None] = [None] * len(paths)
        self.rows = 0
        self._closed = False

    @property
    def opened(self) -> bool:
        return self._writers[0] is not None

    def write(self, step: Sequence[pa.Table]) -> None:
        for index, (name, table) in enumerate(zip(self._names, step, strict=True)):
            try:
                if self._writers[index] is None:
                    self._writers[index] = pq.ParquetWriter(self._paths[index], table.schema,
                                                            **PARQUET_OPTIONS)
                self._writers[index].write_table(table)
            except OSError as error:
                raise OutputError(name, error) from error
        self.rows += step[0].num_rows

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        failed: OutputError | None = None
        for name, writer in zip(self._names, self._writers, strict=True):
            if writer is not None:
                try:
                    writer.close()
                except OSError as error:  # the others are closed all the same
                    failed = failed or OutputError(name, error)
        if failed is not None:
            raise failed
