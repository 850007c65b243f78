"""Stage corpus: snapshots the filler corpus into the pipeline.

The corpus source may live outside the repository (a directory, or "stdlib"), where
DVC cannot track it, so this stage is declared always_changed and writes the files it
read; later stages rerun only when that snapshot's bytes change."""

from __future__ import annotations

import hashlib

import typer

from membench.commands.common import PARAMS_FILE, OutFile, ParamsFile, fails_cleanly
from membench.commands.parameters import read_params
from membench.io.corpus import read_corpus
from membench.io.outputs import staged_outputs
from membench.io.tables import corpus_table


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
