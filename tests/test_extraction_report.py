"""The sweep's bands and crossover, the extraction params, and the recency readers."""

from __future__ import annotations

from dataclasses import replace

import pytest
from params_yaml import PARAMS

from membench.extraction.params import SweepParams
from membench.memory.policies import POLICIES
from membench.params import ParamsError, parse_params
from membench.reporting.extraction_tables import crossover, extraction_metrics, sweep_bands
from membench.reporting.recency_tables import recency_effects
from membench.scoring.extraction import reference_counts, sweep


def _sweep(currents: dict[float, list[int]], reference: int) -> dict:
    runs = [{"rate": rate, "seed": seed, "counts": {"profile": {
        "current": c, "conflict": 0, "leaked": 0}}}
        for rate, values in currents.items() for seed, c in enumerate(values)]
    return {"rates": list(currents), "seeds": [0, 1], "runs": runs,
            "references": {"dense_transcript": {"current": reference, "conflict": 3,
                                                "leaked": 1},
                           "bm25_transcript": {"current": reference - 10, "conflict": 0,
                                               "leaked": 0}}}


def test_crossover_is_the_first_rate_whose_mean_is_not_above_the_best_reference():
    data = _sweep({0.0: [74, 74], 0.1: [60, 40], 0.2: [50, 44], 0.3: [30, 30]}, 47)
    assert crossover(data, "profile") == 0.2  # means 74, 50, 47, 30
    assert crossover(_sweep({0.0: [74, 74], 0.5: [60, 60]}, 47), "profile") is None
    bands = {(b["rate"], b["policy"], b["measure"]): b for b in sweep_bands(data)}
    assert bands[(0.1, "profile", "current")] | {} == {
        "rate": 0.1, "policy": "profile", "measure": "current", "mean": 50.0, "low": 40,
        "high": 60, "kind": "profile"}
    assert bands[(0.3, "dense_transcript", "current")]["mean"] == 47.0  # flat reference


def test_the_sweep_run_is_perfect_at_rate_zero_and_worse_at_one(default_run):
    data = sweep(default_run.scenario, default_run.policies, SweepParams((0.0, 1.0), (1,)),
                 reference_counts((r.policy, r.outcome) for r in default_run.result.outcomes))
    at = {r["rate"]: r["counts"]["profile"] for r in data["runs"]}
    assert at[0.0]["current"] == 74 and at[1.0]["current"] < 10
    assert set(data["references"]) == {"bm25_transcript"}  # the in-memory run has no dense
    metrics = extraction_metrics({"extractors": {}, "sweep": data})
    assert metrics["sweep"]["crossover_rate"]["profile"] == 1.0


@pytest.mark.parametrize("section,key,value,named", [
    ("extract", "consolidation", {"similarity": "cosine"}, "extract.consolidation.similarity"),
    ("extract", "noise", {"missed_facts": 1.5}, "extract.noise.missed_facts"),
    ("extract", "noise", {"typo": 0.1}, "extract.noise.typo"),
    ("extraction_sweep", "rates", [0.3, 0.1], "extraction_sweep.rates"),
    ("policies", "same_topic_threshold", -1, "policies.same_topic_threshold"),
])
def test_bad_extraction_params_name_the_param(repo_root, section, key, value, named):
    import yaml

    data = yaml.safe_load((repo_root / "params.yaml").read_text())
    # a table's value goes over params.yaml's (every key must be present)
    data[section][key] = {**data[section][key], **value} if isinstance(value, dict) else value
    with pytest.raises(ParamsError, match=named.replace(".", r"\.")):
        parse_params(data, {"perfect", "consolidating", "noisy"})


def test_recency_readers_resolve_the_fact_logs_conflicts(default_run):
    effects = recency_effects(default_run.result.outcomes)
    log = effects["fact_log_latest"]
    assert log["base_conflicts"] > 0 and log["conflicts_to_current"] == log["base_conflicts"]
    assert log["current_lost"] == 0
    assert "bm25_transcript_latest" in effects


def test_a_wrong_grouping_loses_the_current_answer(default_run):
    """At threshold 0 every retrieved line is one topic: only the newest survives."""
    from membench.retrieval.retrievers import IndexCache
    from membench.scoring.bench import run_bench

    reader = POLICIES["bm25_transcript_latest"](
        replace(PARAMS.policies, same_topic_threshold=0.0))
    base = POLICIES["bm25_transcript"](PARAMS.policies)
    rows = run_bench(default_run.scenario, default_run.records, [base, reader],
                     lambda texts: [0] * len(texts), IndexCache()).outcomes
    assert recency_effects(rows)["bm25_transcript_latest"]["current_lost"] > 0
    assert all(len(r.retrieved) == 1 for r in rows if r.policy == "bm25_transcript_latest")
