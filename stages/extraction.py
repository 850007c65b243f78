"""Stage extraction: how well each extractor extracts (against the gold labels), what its
errors do to the profile policies, and the noisy extractor's error-rate sweep beside the
extraction-free policies. Writes one JSON file the plots and report stages read. With
llm_extractor.run, a model is measured as an extractor too: its answers come from the
committed response cache, or from the model params name (docs/model.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from membench.commands.common import (
    PARAMS_FILE,
    EmbeddingsFile,
    OutcomesFile,
    OutFile,
    ParamsFile,
    ScenarioDir,
    TurnsFile,
    fails_cleanly,
    progress,
)
from membench.commands.model_calls import model_answers
from membench.commands.parameters import read_params
from membench.execution.executor import executor
from membench.extraction.extractors import extractor_for
from membench.extraction.llm import LlmExtractSettings, llm_extraction
from membench.io.embedding_files import vectors_from_table
from membench.io.inputs import read_parquet, read_scenario
from membench.io.model_cache import cache_text, read_cache
from membench.io.outputs import staged_outputs
from membench.io.written_datasets import read_written
from membench.memory.policies import build_policies
from membench.retrieval.retrievers import IndexCache
from membench.scoring.extraction import evaluate_extractors, reference_counts, sweep

# Always reported, beside the configured one: the gold reference, the real extractor, and
# the noisy one at extract.noise's rates (every error class present, each blamed apart).
EVALUATED = ("perfect", "consolidating", "noisy")
LLM = "llm"  # the model as extractor, under this name in the report (membench.extraction.llm)

CacheFile = Annotated[Path, typer.Option(
    "--cache", help="The LLM extractor's response cache (JSON Lines), read and extended; "
                    "commit it.")]


def _sweep(built, policies, params, references) -> dict:
    """The sweep's rates and seeds as units of membench.execution."""
    units = len(params.rates) * len(params.seeds)
    with executor("extraction sweep", units, progress) as where:
        return sweep(built, policies, params, references,
                     map_units=lambda function, inputs, units: where.map(
                         function, inputs, units, label="extraction sweep",
                         name=lambda unit: f"rate {unit[0]}, seed {unit[1]}"))


@fails_cleanly
def extraction(scenario: ScenarioDir, turns: TurnsFile, embeddings: EmbeddingsFile,
               outcomes: OutcomesFile, cache: CacheFile, out: OutFile,
               params: ParamsFile = PARAMS_FILE) -> None:
    """Extraction quality, its effect on the profile policies, and the error-rate sweep."""
    p = read_params(params)
    built = read_scenario(scenario)
    turn_vectors = vectors_from_table(read_parquet(turns), p.embedding.model)
    names = list(dict.fromkeys((*EVALUATED, p.extractor)))
    extracted = {name: extractor_for(name, p.extraction, turn_vectors)(built)
                 for name in names}
    responses = read_cache(cache)
    llm = None
    if p.llm_extractor.run:
        settings = LlmExtractSettings(p.llm_extractor.max_tokens,
                                      p.llm_extractor.memories_shown, p.model.seed)
        with model_answers(p.model, responses, cache, "llm extractor") as ask:
            llm = llm_extraction(built, settings, ask)
        extracted[LLM] = llm.records
    indexes = IndexCache(vectors=vectors_from_table(read_parquet(embeddings),
                                                    p.embedding.model))
    policies = build_policies(p.policies)
    measured = read_written(outcomes, columns=["policy", "outcome"])
    references = reference_counts(zip(measured["policy"].to_pylist(),
                                      measured["outcome"].to_pylist()))
    data = {"configured": p.extractor,
            "extractors": evaluate_extractors(built, extracted, policies, indexes),
            "llm": None if llm is None else {"model": p.model.name, **llm.summary()},
            "sweep": _sweep(built, policies, p.extraction_sweep, references)}
    with staged_outputs() as outputs:
        outputs.json(out, data)
        outputs.text(cache, cache_text(responses))
    typer.echo(f"extraction: {', '.join(extracted)} evaluated; sweep of "
               f"{len(data['sweep']['runs'])} runs", err=True)
