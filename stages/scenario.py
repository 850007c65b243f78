"""Stage scenario: builds the seeded relationship from the story file and the corpus."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import typer

from membench.commands.common import PARAMS_FILE, CorpusSnapshot, OutFile, ParamsFile, fails_cleanly
from membench.commands.parameters import read_parameters_and_corpus
from membench.io.outputs import staged_outputs
from membench.io.scenario_file import read_scenario_source, scenario_sha256
from membench.io.tables import scenario_tables
from membench.scenario.given_manifest import format2_manifest
from membench.scenario.sources import build_any
from membench.scenario.spec import ScenarioSpec


@fails_cleanly
def scenario(corpus: CorpusSnapshot, out: OutFile, params: ParamsFile = PARAMS_FILE) -> None:
    """Build the sessions, exchanges, fact versions and probes."""
    p, files = read_parameters_and_corpus(params, corpus)
    spec_path = Path(p.scenario.file)
    source = read_scenario_source(spec_path)
    built = build_any(source, files, p.scenario.shape())
    metadata = pq.read_schema(corpus).metadata or {}
    manifest = {
        "seed": built.seed,
        "sessions": built.sessions,
        "exchanges_per_session": built.exchanges_per_session,
        "exchanges": len(built.exchanges),
        "facts": len(built.facts),
        "probes": len(built.probes),
        "probe_days": list(built.probe_days),
        "scenario_file": spec_path.as_posix(),
        "scenario_file_sha256": scenario_sha256(spec_path),
        "corpus_root": metadata.get(b"membench.corpus_root", b"").decode(),
        "corpus_glob": metadata.get(b"membench.corpus_glob", b"").decode(),
        "corpus_sha256": metadata.get(b"membench.corpus_sha256", b"").decode(),
        "corpus_files": len(files),
        "lines_per_reply": p.scenario.lines_per_reply,
        **format2_manifest(source, built),  # nothing for a format-1 story
        # the story's user, when it names one: the policies stage's partition
        **({"user": source.user} if isinstance(source, ScenarioSpec) and source.user else {}),
    }
    with staged_outputs() as outputs:
        for name, table in scenario_tables(built).items():
            outputs.parquet(out / f"{name}.parquet", table)
        outputs.json(out / "manifest.json", manifest)
    typer.echo(f"scenario: {built.sessions} sessions, {len(built.exchanges)} exchanges, "
               f"{len(built.facts)} facts, {len(built.probes)} probes", err=True)
