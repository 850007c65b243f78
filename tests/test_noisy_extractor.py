"""Each error class of the noisy extractor, alone at rate 1, on one probe whose outcome is
known by hand; and the quality measure names the same errors."""

from __future__ import annotations

from dataclasses import replace

import pytest
from params_yaml import PARAMS

from membench.extraction.extractors import extractor_for
from membench.extraction.quality import measure
from membench.extraction.settings import NoiseSettings
from membench.memory.policies import POLICIES
from membench.scoring.bench import run_bench


def _profile_outcome(scenario, records, fact: str, day: int) -> str:
    profile = POLICIES["profile"](PARAMS.policies)
    rows = run_bench(scenario, records, [profile], lambda texts: [0] * len(texts)).outcomes
    return next(r.outcome for r in rows if (r.fact_key, r.day, r.form) == (fact, day, "literal"))


def _noisy(scenario, **rates):
    noise = replace(NoiseSettings.at_rate(0.0, seed=3), **rates)
    return extractor_for("noisy", replace(PARAMS.extraction, noise=noise))(scenario)


@pytest.mark.parametrize("rates,fact,day,expected", [
    # Node 20 then Node 24 (day 22): the change stored beside the old value.
    ({"missed_updates": 1.0}, "node_version", 30, "conflict"),
    # "Please forget my phone number" (day 20) ignored: the number stays in the profile.
    ({"missed_deletions": 1.0}, "phone_number", 30, "leaked"),
    # "Always tabs, not spaces" (day 4) never extracted.
    ({"missed_facts": 1.0}, "indentation", 10, "missing"),
    # The region (day 1) is overwritten by the Postgres version (day 2), the newest memory.
    ({"false_merges": 1.0}, "deploy_region", 10, "missing"),
])
def test_each_error_class_has_its_known_effect(default_run, rates, fact, day, expected):
    scenario = default_run.scenario
    assert _profile_outcome(scenario, extractor_for("perfect")(scenario), fact, day) in (
        "current", "clean")
    assert _profile_outcome(scenario, _noisy(scenario, **rates), fact, day) == expected


def test_rate_zero_is_the_perfect_extractor(default_run):
    scenario = default_run.scenario
    assert _noisy(scenario) == extractor_for("perfect")(scenario)


def test_errors_only_grow_with_the_rate(default_run):
    """The draws do not depend on the rates: one seed's errors at 0.1 are among its 0.3's."""
    scenario = default_run.scenario
    low, high = (measure(scenario, _noisy(scenario, missed_deletions=r, missed_updates=r))
                 for r in (0.1, 0.3))
    assert low.missed_updates <= high.missed_updates
    assert low.deletions_recalled >= high.deletions_recalled


def test_quality_names_the_errors(default_run):
    scenario = default_run.scenario
    q = measure(scenario, _noisy(scenario, missed_updates=1.0))
    assert (q.updates, q.updates_correct, q.missed_updates, q.false_merges) == (9, 0, 9, 0)
    q = measure(scenario, _noisy(scenario, false_merges=1.0))
    assert q.false_merges > 0 and {e.error for e in q.events} == {"false_merge"}
    q = measure(scenario, _noisy(scenario, missed_deletions=1.0))
    assert (q.deletions, q.deletions_recalled) == (2, 0)


def test_each_extractor_is_scored_on_its_own_stores(default_run):
    """One run's index cache holds its record set's stores: the report of a second
    extractor must equal that extractor run alone, not reuse the first one's indexes."""
    from membench.memory.policies import build_policies, without_embeddings
    from membench.retrieval.retrievers import IndexCache
    from membench.scoring.extraction import evaluate_extractors, profile_policies

    scenario = default_run.scenario
    policies = without_embeddings(profile_policies(build_policies(PARAMS.policies)))
    noisy = _noisy(scenario, missed_facts=0.5)
    report = evaluate_extractors(scenario, {"noisy": noisy}, policies, IndexCache())
    alone = run_bench(scenario, noisy, policies, lambda texts: [0] * len(texts)).outcomes
    for policy in policies:
        expected = {m: sum(r.policy == policy.id and r.outcome == m for r in alone)
                    for m in report["noisy"]["policies"][policy.id]}
        assert report["noisy"]["policies"][policy.id] == expected
