"""`membench import FORMAT SRC --out DIR`: a public benchmark file as format-2 scenarios.

Writes one scenario file per source item that kept a question, and `manifest.json`
(source SHA-256, counts, every dropped question with its reason). Same file, same bytes.
The optional DVC pipeline imports/dvc.yaml runs it with `--params imports/params.yaml`,
whose `import` section names the format and the source file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from membench.commands.common import OutFile, fails_cleanly
from membench.importers.model import IMPORTERS, SourceItemError
from membench.importers.run import ImportRun
from membench.io.import_files import READERS, ImportFileError, file_sha256, write_import
from membench.params import load_import_params
from membench.plugins import load_plugins


def _source(name: str | None, source: Path | None, params: Path | None) -> tuple[str, Path]:
    if params is not None:
        if name is not None or source is not None:
            raise ImportFileError("give FORMAT and SRC, or --params, not both")
        chosen = load_import_params(params, set(IMPORTERS))
        return chosen.format, Path(chosen.source)
    if name is None or source is None:
        raise ImportFileError("give FORMAT and SRC (or --params naming them)")
    if name not in IMPORTERS:
        raise ImportFileError(f"unknown format {name!r}; known: {', '.join(IMPORTERS)}")
    return name, source


@fails_cleanly
def import_(
    out: OutFile,
    name: Annotated[str | None, typer.Argument(
        metavar="FORMAT", help="locomo, longmemeval or letta (and any plugin's).")] = None,
    source: Annotated[Path | None, typer.Argument(
        metavar="SRC", help="The benchmark file as downloaded.")] = None,
    params: Annotated[Path | None, typer.Option(
        "--params", help="Read FORMAT and SRC from this file's `import` section "
                         "(imports/params.yaml).")] = None,
) -> None:
    """Convert a public memory benchmark (LoCoMo, LongMemEval, Letta's leaderboard) into
    format-2 scenarios and a manifest in --out (docs/importers.md)."""
    load_plugins("importers")
    name, source = _source(name, source, params)
    importer = IMPORTERS[name]
    if not source.is_file():
        raise ImportFileError(f"{source}: no such file")
    sha256, size = file_sha256(source)
    run = ImportRun(name, importer, source.name, sha256, size)
    try:
        written = write_import(out, run.scenarios(READERS[importer.reads](source)), run.manifest)
    except SourceItemError as error:
        raise ImportFileError(f"{source}: {error}") from None
    counts = run.manifest()["counts"]
    typer.echo(f"import {name}: {len(written)} scenarios, {counts['probes']} probes, "
               f"{counts['dropped']} dropped (listed in {out / 'manifest.json'})", err=True)
