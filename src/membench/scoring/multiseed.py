"""The bench over many seeds: one seed's row can be an accident of which filler lines were
drawn, so the same scenario shape is rebuilt per seed and the outcome counts compared.

Tokens are not counted here (the multi-seed table holds outcome counts only), which keeps
one seed at about a second of pure computation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from membench.extraction.extractors import TurnVectorMap, extractor_for
from membench.extraction.settings import ExtractSettings
from membench.memory.policies import PolicySettings, build_policies, without_embeddings
from membench.scenario.build import CorpusText, ScenarioShape
from membench.scenario.sources import ScenarioSource, build_any
from membench.scoring.bench import no_tokens, run_bench
from membench.scoring.results import OUTCOMES, Counts, ResultsTable


@dataclass(frozen=True)
class SeedInputs:
    """Everything one seed's run needs besides the seed itself."""
    spec: ScenarioSource
    corpus: tuple[CorpusText, ...]
    shape: ScenarioShape
    settings: PolicySettings
    extractor: str
    extraction: ExtractSettings | None = None  # params' extract, for a configurable extractor
    # user turn vectors, for an extractor that compares meanings: every seed draws its
    # turns from the same story, so the embed_turns stage's vectors cover them
    turn_vectors: TurnVectorMap | None = None


def counts_for_seed(inputs: SeedInputs, seed: int) -> Counts:
    scenario = build_any(inputs.spec, inputs.corpus, replace(inputs.shape, seed=seed))
    records = extractor_for(inputs.extractor, inputs.extraction, inputs.turn_vectors)(scenario)
    # Dense policies need every seed's texts embedded (about 15 s a seed on 2 cores);
    # the multi-seed table covers the lexical and stored-memory policies only.
    policies = without_embeddings(build_policies(inputs.settings))
    result = run_bench(scenario, records, policies, no_tokens, keep_contexts=False)
    return ResultsTable(result).counts([p.id for p in policies])


@dataclass(frozen=True)
class Spread:
    policy: str
    form: str
    outcome: str
    mean: float
    low: int
    high: int


def spread(per_seed: Sequence[Counts]) -> list[Spread]:
    """Mean, min and max of every outcome count over the seeds, in the first seed's order."""
    if not per_seed:
        raise ValueError("multiseed.seeds: no seed to summarize")
    rows = []
    for policy, forms in per_seed[0].items():
        for form in forms:
            for outcome in OUTCOMES:
                values = [c[policy][form][outcome] for c in per_seed]
                rows.append(Spread(policy, form, outcome, round(sum(values) / len(values), 2),
                                   min(values), max(values)))
    return rows


def counts_from_json(data: Mapping, policy_ids: Sequence[str]) -> dict[int, Counts]:
    """The multiseed stage's file, seed -> counts, in the order the seeds were listed."""
    try:
        per_seed = {int(entry["seed"]): entry["counts"] for entry in data["runs"]}
    except (KeyError, TypeError, ValueError):
        raise ValueError("the multi-seed file is malformed: rerun the multiseed stage") from None
    for seed, counts in per_seed.items():
        if set(counts) != set(policy_ids):
            raise ValueError(f"the multi-seed counts for seed {seed} are for other policies: "
                             "rerun the multiseed stage")
    if not per_seed:
        raise ValueError("the multi-seed file holds no seed: rerun the multiseed stage")
    # JSON files are written with sorted keys; give the counts back in report row order.
    return {seed: {p: counts[p] for p in policy_ids} for seed, counts in per_seed.items()}
