"""Stage multiseed: the bench over `multiseed.seeds`, outcome counts per seed.

One stage loops the seeds rather than a `foreach` stage per seed: each extra stage would
pay its own process start, params and corpus read (about as long as a seed's run), and
the cold `dvc repro` must stay within twice its single-seed time. The corpus snapshot is
read once and sent once to wherever the seeds run (membench.execution); results keep the
params' seed order, so the file is the same bytes wherever they ran."""

from __future__ import annotations

from pathlib import Path

import typer

from membench.commands.common import (
    PARAMS_FILE,
    CorpusSnapshot,
    OutFile,
    ParamsFile,
    TurnsFile,
    fails_cleanly,
    progress,
)
from membench.commands.parameters import read_parameters_and_corpus
from membench.execution.executor import executor
from membench.extraction.extractors import reads_turn_vectors
from membench.io.embedding_files import vectors_from_table
from membench.io.inputs import read_parquet
from membench.io.outputs import staged_outputs
from membench.io.scenario_file import read_scenario_source
from membench.scenario.sources import seed_matters
from membench.scoring.multiseed import SeedInputs, counts_for_seed


def run_seeds(inputs: SeedInputs, seeds: tuple[int, ...]) -> list:
    """Each seed a unit (membench.execution), its counts in the seeds' order."""
    with executor("multiseed", len(seeds), progress) as units:
        return units.map(counts_for_seed, inputs, seeds, label="multiseed")


@fails_cleanly
def multiseed(corpus: CorpusSnapshot, turns: TurnsFile, out: OutFile,
              params: ParamsFile = PARAMS_FILE) -> None:
    """Run the bench (without token counts) over every seed in multiseed.seeds."""
    p, files = read_parameters_and_corpus(params, corpus)
    vectors = vectors_from_table(read_parquet(turns), p.embedding.model) \
        if reads_turn_vectors(p.extractor, p.extraction) else None
    inputs = SeedInputs(read_scenario_source(Path(p.scenario.file)), tuple(files),
                        p.scenario.shape(), p.policies, p.extractor, p.extraction, vectors)
    seeds = p.multiseed.seeds
    if seed_matters(inputs.spec):
        counts = run_seeds(inputs, seeds)
    else:  # every session given: each seed builds the same scenario, so run it once
        counts = run_seeds(inputs, seeds[:1]) * len(seeds)
    data = {"seeds": list(seeds),
            "runs": [{"seed": seed, "counts": c} for seed, c in zip(seeds, counts)]}
    with staged_outputs() as outputs:
        outputs.json(out, data)
    typer.echo(f"multiseed: {len(seeds)} seeds", err=True)
