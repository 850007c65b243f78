"""What extraction does to the profile policies: each extractor's quality, the profile
policies' outcome counts under it, which error class changed which probe, and the sweep of
the noisy extractor's error rate beside the extraction-free references."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from membench.extraction.extractors import FactRecord, perfect_extractor
from membench.extraction.noisy import noisy_extractor
from membench.extraction.params import SweepParams
from membench.extraction.quality import ERROR_CLASSES, blame, measure
from membench.extraction.settings import NoiseSettings
from membench.memory.policies import Policy
from membench.retrieval.retrievers import IndexCache
from membench.scenario.model import Scenario
from membench.scoring.bench import OutcomeRow, no_tokens, run_bench

# The sweep's references: retrieval over the transcript, which no extractor touches.
REFERENCES = ("bm25_transcript", "dense_transcript", "hybrid_transcript")
SWEPT = ("profile", "profile_bm25_unextracted")
MEASURES = ("current", "conflict", "leaked")  # both probe forms together


def profile_policies(policies: Sequence[Policy]) -> list[Policy]:
    """The policies that keep the extracted profile (their rows depend on the extractor)."""
    return [p for p in policies if "profile" in p.stores]


def _outcomes(scenario: Scenario, records: Sequence[FactRecord], policies: Sequence[Policy],
              indexes: IndexCache) -> list[OutcomeRow]:
    # Only outcomes are compared: each row's context is dropped once it is classified.
    return list(run_bench(scenario, records, policies, no_tokens, indexes,
                          keep_contexts=False).outcomes)


def combined(rows: Sequence[OutcomeRow], policy: str) -> dict[str, int]:
    """Counts of each measured outcome over both forms."""
    return {m: sum(r.policy == policy and r.outcome == m for r in rows) for m in MEASURES}


def _probe(row: OutcomeRow) -> tuple:
    """One probe of one policy (format 2 may ask several of a fact on a day and form)."""
    return row.policy, row.form, row.day, row.fact_key, row.probe_id


def extractor_report(scenario: Scenario, records: Sequence[FactRecord],
                     policies: Sequence[Policy], indexes: IndexCache,
                     baseline: Sequence[OutcomeRow]) -> dict:
    """Quality against gold, the profile policies' counts, and per policy and error class
    the probes whose outcome differs from the perfect extractor's (and how many of them
    lost the current answer)."""
    quality = measure(scenario, records)
    rows = _outcomes(scenario, records, policies, indexes)
    perfect = {_probe(r): r.outcome for r in baseline}
    effects = {p.id: {c: {"changed": 0, "current_lost": 0} for c in (*ERROR_CLASSES, "other")}
               for p in policies}
    for r in rows:
        if not r.fact_key:  # format 2's abstention probes: no fact for an error to hit
            continue
        before = perfect[_probe(r)]
        if before == r.outcome:
            continue
        cause = blame(quality.events, r.fact_key, r.day) or "other"
        effects[r.policy][cause]["changed"] += 1
        effects[r.policy][cause]["current_lost"] += before == "current"
    return {"quality": quality.as_json(),
            "policies": {p.id: combined(rows, p.id) for p in policies},
            "effects": effects}


def evaluate_extractors(scenario: Scenario, extracted: dict[str, Sequence[FactRecord]],
                        policies: Sequence[Policy], indexes: IndexCache) -> dict:
    """extractor name -> extractor_report, every one against the perfect extractor. Each
    record set gets its own index cache: the stores it indexes differ."""
    chosen = profile_policies(policies)
    baseline = _outcomes(scenario, perfect_extractor(scenario), chosen, indexes.sibling())
    return {name: extractor_report(scenario, records, chosen, indexes.sibling(), baseline)
            for name, records in extracted.items()}


def reference_counts(outcomes: Iterable[tuple[str, str]]) -> dict[str, dict[str, int]]:
    """The references' measured counts over both forms, from the run's (policy, outcome)
    pairs: two columns of the outcomes, not their contexts (gigabytes at a thousand
    sessions)."""
    counts: dict[str, dict[str, int]] = {}
    for policy, outcome in outcomes:
        if policy in REFERENCES:
            measured = counts.setdefault(policy, dict.fromkeys(MEASURES, 0))
            if outcome in measured:
                measured[outcome] += 1
    return {p: counts[p] for p in REFERENCES if p in counts}


def sweep_run(inputs: tuple[Scenario, tuple[Policy, ...]], unit: tuple[float, int]
              ) -> dict[str, dict[str, int]]:
    """One rate and seed of the sweep: the swept policies' counts (a unit that can run
    anywhere: membench.execution)."""
    scenario, swept = inputs
    rate, seed = unit
    rows = _outcomes(scenario, noisy_extractor(scenario, NoiseSettings.at_rate(rate, seed)),
                     swept, IndexCache())
    return {p.id: combined(rows, p.id) for p in swept}


def sweep(scenario: Scenario, policies: Sequence[Policy], params: SweepParams,
          references: Mapping[str, dict[str, int]], map_units: Callable | None = None
          ) -> dict:
    """The noisy extractor at each rate and seed: the swept policies' counts, and the
    references' counts from the run (reference_counts; flat: no extractor changes them).
    map_units runs the units where it likes and returns their results in order."""
    swept = tuple(p for p in policies if p.id in SWEPT)
    units = [(rate, seed) for rate in params.rates for seed in params.seeds]
    counts = (map_units or _in_order)(sweep_run, (scenario, swept), units)
    runs = [{"rate": rate, "seed": seed, "counts": c} for (rate, seed), c in zip(units, counts)]
    return {"rates": list(params.rates), "seeds": list(params.seeds), "runs": runs,
            "references": {p: dict(references[p]) for p in REFERENCES if p in references}}


def _in_order(function: Callable, inputs, units: Sequence) -> list:
    return [function(inputs, unit) for unit in units]
