"""Stage corpus: snapshots the filler corpus into the pipeline; and `corpus-snapshot`,
which makes a shippable archive from a directory (how data/corpus/ was made).

The corpus source may live outside the repository (a directory, or "stdlib"), where
DVC cannot track it, so this stage is declared always_changed and writes the files it
read; later stages rerun only when that snapshot's bytes change."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Annotated

import typer

from membench.corpus import ARCHIVE_SUFFIXES, read_corpus, selected_files, write_archive
from membench.outputs import staged_outputs
from membench.stages.common import (
    PARAMS_FILE,
    OutFile,
    ParamsFile,
    fails_cleanly,
    read_params,
)
from membench.tables import corpus_table


@fails_cleanly
def corpus(out: OutFile, params: ParamsFile = PARAMS_FILE) -> None:
    """Read the source files that fill the assistant's replies."""
    c = read_params(params).scenario.corpus
    snapshot = read_corpus(c.source, c.glob, c.exclude)
    hashes = [hashlib.sha256("\n".join(f.lines).encode()).hexdigest() for f in snapshot.files]
    table = corpus_table(snapshot.files, hashes).replace_schema_metadata({
        "membench.corpus_root": snapshot.source,
        "membench.corpus_glob": c.glob,
        "membench.corpus_sha256": snapshot.sha256,
    })
    with staged_outputs() as outputs:
        outputs.parquet(out, table)
    typer.echo(f"corpus: {len(snapshot.files)} files from {snapshot.source} "
               f"(sha256 {snapshot.sha256[:12]})", err=True)


def _archive_path(value: Path) -> Path:
    if not value.name.endswith(ARCHIVE_SUFFIXES):
        raise typer.BadParameter(f"{value} must end in {' or '.join(ARCHIVE_SUFFIXES)}")
    return value


@fails_cleanly
def corpus_snapshot(
    out: Annotated[Path, typer.Option("--out", help="Archive to write (.tar.gz).",
                                      callback=_archive_path)],
    source: Annotated[str, typer.Option(
        "--source", help='Directory to snapshot, or "stdlib" for the running Python\'s.')] = "stdlib",
    params: ParamsFile = PARAMS_FILE,
) -> None:
    """Write the files scenario.corpus's glob and exclude select from SOURCE as a
    reproducible .tar.gz (same files, same bytes), for use as scenario.corpus.source."""
    c = read_params(params).scenario.corpus
    files = selected_files(source, c.glob, c.exclude)
    data = write_archive(files)
    with staged_outputs() as outputs:
        outputs.bytes(out, data)
    typer.echo(f"corpus-snapshot: {len(files)} files, {len(data)} bytes, "
               f"sha256 {hashlib.sha256(data).hexdigest()} -> {out}", err=True)
