"""Stage corpus: snapshots the filler corpus into the pipeline.

The corpus may live outside the repository (the running Python's stdlib by default),
where DVC cannot track it, so this stage is declared always_changed and writes the
files it read; later stages rerun only when that snapshot's bytes change."""

from __future__ import annotations

import hashlib
from pathlib import Path

import typer

from membench.corpus import read_corpus
from membench.outputs import staged_outputs
from membench.stages.common import PARAMS_OPTION, fails_cleanly, read_params
from membench.tables import corpus_table

CORPUS_PATH = Path("data/corpus.parquet")


@fails_cleanly
def corpus(params: Path = PARAMS_OPTION,
           out: Path = typer.Option(CORPUS_PATH, help="Snapshot of the corpus (Parquet).")) -> None:
    """Read the source files that fill the assistant's replies."""
    c = read_params(params).scenario.corpus
    snapshot = read_corpus(c.dir, c.glob, list(c.exclude))
    hashes = [hashlib.sha256("\n".join(f.lines).encode()).hexdigest() for f in snapshot.files]
    table = corpus_table(snapshot.files, hashes).replace_schema_metadata({
        "membench.corpus_root": str(snapshot.root),
        "membench.corpus_glob": c.glob,
        "membench.corpus_sha256": snapshot.sha256,
    })
    with staged_outputs() as outputs:
        outputs.parquet(out, table)
    typer.echo(f"corpus: {len(snapshot.files)} files under {snapshot.root} "
               f"(sha256 {snapshot.sha256[:12]})", err=True)
