"""`membench corpus-snapshot`: makes a shippable corpus archive from a directory (how
data/corpus/ was made). Not a pipeline stage: its output is committed input."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Annotated

import typer

from membench.commands.common import PARAMS_FILE, ParamsFile, fails_cleanly
from membench.commands.parameters import read_params
from membench.io.corpus import ARCHIVE_SUFFIXES, selected_files, write_archive
from membench.io.outputs import staged_outputs


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
