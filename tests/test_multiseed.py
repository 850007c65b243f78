"""Multi-seed runs: the per-seed counts equal the full bench's, spreads and verdicts are
computed from the counts, and the worker count does not change a byte."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
from membench.stages.multiseed import run_seeds

from membench.io.scenario_file import read_scenario_spec
from membench.reporting.findings import FINDINGS, verdicts
from membench.reporting.seeds_tables import seeds_section
from membench.scenario.build import build_scenario
from membench.scoring import multiseed
from membench.scoring.bench import run_bench
from membench.scoring.multiseed import SeedInputs, counts_for_seed, counts_from_json, spread
from membench.scoring.results import ResultsTable


@pytest.fixture(scope="module")
def inputs(default_run, default_params, repo_root) -> SeedInputs:
    p = default_params
    return SeedInputs(read_scenario_spec(repo_root / p.scenario.file), default_run.corpus.files,
                      p.scenario.shape(), p.policies, p.extractor)


@pytest.fixture(scope="module")
def ids(default_run) -> list[str]:
    return [p.id for p in default_run.policies]


def test_default_seed_counts_equal_the_full_bench(inputs, default_run, ids):
    """Skipping token counts does not change an outcome."""
    assert counts_for_seed(inputs, default_run.scenario.seed) == \
        ResultsTable(default_run.result).counts(ids)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_dask_workers_give_the_in_process_result(inputs, monkeypatch, workers):
    seeds = (3, 5)
    monkeypatch.setenv("MEMBENCH_WORKERS", "0")
    here = run_seeds(inputs, seeds)
    monkeypatch.setenv("MEMBENCH_WORKERS", workers)
    assert run_seeds(inputs, seeds) == here


def _counts(ids, current: int) -> dict:
    live = {"current": current, "conflict": 0, "stale": 37 - current, "missing": 0,
            "leaked": 0, "clean": 3}
    return {p: {"literal": dict(live), "paraphrase": dict(live)} for p in ids}


def test_spread_is_mean_min_max(ids):
    rows = spread([_counts(ids, 30), _counts(ids, 34), _counts(ids, 35)])
    row = next(r for r in rows if r.policy == ids[0] and r.form == "literal"
               and r.outcome == "current")
    assert (row.mean, row.low, row.high) == (33.0, 30, 35)


def test_a_finding_that_fails_on_one_seed_is_named(default_run, ids):
    default = ResultsTable(default_run.result).counts(ids)
    broken = copy.deepcopy(default)
    broken["profile"]["literal"]["leaked"], broken["profile"]["literal"]["clean"] = 1, 2
    result = {v.finding.id: v for v in verdicts(ResultsTable(default_run.result), default,
                                                  {42: default, 7: broken})}
    assert result["profile_exact"].failing_seeds == (7,)
    assert result["profile_exact"].default is True
    assert result["short_term"].failing_seeds == ()
    text = "\n\n".join(seeds_section(ResultsTable(default_run.result), ids, 42, {42: default, 7: broken}))
    assert "| 1 of 2 | 7 |" in text
    assert "Not on every seed: `profile_exact` (1 of 2)" in text


def test_every_finding_holds_on_the_default_seed(default_run, ids):
    default = ResultsTable(default_run.result).counts(ids)
    assert [f.id for f in FINDINGS if f.holds and not f.holds(default)] == []


def test_stale_multiseed_file_is_refused(default_run, ids):
    data = {"seeds": [1], "runs": [{"seed": 1, "counts": _counts(ids[:-1], 30)}]}
    with pytest.raises(ValueError, match="rerun the multiseed stage"):
        counts_from_json(data, ids)
    with pytest.raises(ValueError, match="malformed"):
        counts_from_json({"runs": [{"counts": {}}]}, ids)


def test_the_seed_reaches_the_scenario(inputs, default_run, ids, monkeypatch):
    """counts_for_seed(s) runs the bench on exactly the scenario build_scenario makes with
    seed s: the same facts, probes and fact exchanges, other filler code. Seed 1's filler
    removes the default seed's stale BM25 hit."""
    ran = []

    def spy(scenario, *args, **kwargs):
        ran.append(scenario)
        return run_bench(scenario, *args, **kwargs)

    monkeypatch.setattr(multiseed, "run_bench", spy)
    other = counts_for_seed(inputs, 1)
    expected = build_scenario(inputs.spec, inputs.corpus, replace(inputs.shape, seed=1))
    assert ran == [expected]
    default = default_run.scenario
    assert (expected.seed, default.seed) == (1, 42)
    assert (expected.facts, expected.probes) == (default.facts, default.probes)
    assert [e for e in expected.exchanges if e.fact_key] == \
        [e for e in default.exchanges if e.fact_key]
    assert expected.exchanges != default.exchanges
    before = ResultsTable(default_run.result).counts(ids)
    assert (before["bm25_transcript"]["literal"]["stale"],
            other["bm25_transcript"]["literal"]["stale"]) == (1, 0)
    assert other["profile"] == before["profile"]
