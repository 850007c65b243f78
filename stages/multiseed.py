"""Stage multiseed: the bench over `multiseed.seeds`, outcome counts per seed.

One stage loops the seeds rather than a `foreach` stage per seed: each extra stage would
pay its own process start, params and corpus read (about as long as a seed's run), and
the cold `dvc repro` must stay within twice its single-seed time. The corpus snapshot is
read once and shared with worker processes by fork; results keep the params' seed order,
so the file is the same bytes whatever the worker count."""

from __future__ import annotations

import multiprocessing
import os
import tempfile
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import typer

from membench.cleanup import interrupts
from membench.cleanup.private_temp import die_with_parent, private_dir, remove
from membench.commands.common import (
    PARAMS_FILE,
    CorpusSnapshot,
    OutFile,
    ParamsFile,
    TurnsFile,
    fails_cleanly,
)
from membench.commands.parameters import read_parameters_and_corpus
from membench.extraction.extractors import reads_turn_vectors
from membench.io.embedding_files import vectors_from_table
from membench.io.inputs import read_parquet
from membench.io.outputs import staged_outputs
from membench.io.scenario_file import read_scenario_source
from membench.scenario.sources import seed_matters
from membench.scoring.multiseed import SeedInputs, counts_for_seed

_inputs: SeedInputs | None = None  # set in each worker by fork, read by _run


def _run(seed: int):
    assert _inputs is not None
    return counts_for_seed(_inputs, seed)


def _set_inputs(inputs: SeedInputs, parent: int, workdir: str) -> None:
    """In each worker: its inputs; killed with the stage (a SIGKILLed stage leaves no worker
    waiting on its queue); its temporary directories inside the stage's own `workdir`."""
    global _inputs
    interrupts.as_worker()
    die_with_parent(parent)
    tempfile.tempdir = workdir
    _inputs = inputs


def run_seeds(inputs: SeedInputs, seeds: tuple[int, ...], workers: int) -> list:
    workers = max(1, min(workers, len(seeds), os.cpu_count() or 1))
    if workers == 1 or "fork" not in multiprocessing.get_all_start_methods():
        return [counts_for_seed(inputs, seed) for seed in seeds]
    context = multiprocessing.get_context("fork")
    workdir = private_dir("multiseed")  # the workers' temporary directories, all removed
    try:
        with ProcessPoolExecutor(workers, mp_context=context, initializer=_set_inputs,
                                 initargs=(inputs, os.getpid(), str(workdir))) as pool:
            return list(pool.map(_run, seeds))
    except BrokenProcessPool as error:
        raise WorkerDiedError(f"a worker process died ({error}); nothing was written") from None
    finally:
        remove(workdir)


class WorkerDiedError(RuntimeError):
    """A seed's worker process ended abruptly (killed, out of memory)."""


@fails_cleanly
def multiseed(corpus: CorpusSnapshot, turns: TurnsFile, out: OutFile,
              params: ParamsFile = PARAMS_FILE) -> None:
    """Run the bench (without token counts) over every seed in multiseed.seeds."""
    try:
        _multiseed(corpus, turns, out, params)
    except WorkerDiedError as error:
        typer.echo(f"membench multiseed: error: {error}", err=True)
        raise typer.Exit(1) from None


def _multiseed(corpus: Path, turns: Path, out: Path, params: Path) -> None:
    p, files = read_parameters_and_corpus(params, corpus)
    vectors = vectors_from_table(read_parquet(turns), p.embedding.model) \
        if reads_turn_vectors(p.extractor, p.extraction) else None
    inputs = SeedInputs(read_scenario_source(Path(p.scenario.file)), tuple(files),
                        p.scenario.shape(), p.policies, p.extractor, p.extraction, vectors)
    seeds = p.multiseed.seeds
    if seed_matters(inputs.spec):
        counts = run_seeds(inputs, seeds, p.multiseed.workers)
    else:  # every session given: each seed builds the same scenario, so run it once
        counts = run_seeds(inputs, seeds[:1], 1) * len(seeds)
    data = {"seeds": list(seeds),
            "runs": [{"seed": seed, "counts": c} for seed, c in zip(seeds, counts)]}
    with staged_outputs() as outputs:
        outputs.json(out, data)
    typer.echo(f"multiseed: {len(seeds)} seeds", err=True)
