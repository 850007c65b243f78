"""Extraction quality on format 2, where the gold is in the facts (a version's turns, a
deletion's turn), not in Exchange.fact_key. Hand-made records on the hand-made story
(tests/fixtures/format2/story.json), each count computed by hand."""

from __future__ import annotations

import json
from pathlib import Path

from params_yaml import PARAMS

from membench.extraction.extractors import EXTRACTORS, FactRecord, RecordAction
from membench.extraction.gold import gold_units
from membench.extraction.quality import measure
from membench.io.scenario_file import read_scenario_source
from membench.memory.policies import POLICIES
from membench.retrieval.retrievers import IndexCache
from membench.scenario.build import ScenarioShape
from membench.scenario.format2 import parse_format2
from membench.scenario.given import build_given
from membench.scoring.extraction import evaluate_extractors

FIXTURE = Path(__file__).parent / "fixtures" / "format2" / "story.json"
SHAPE = ScenarioShape(seed=42, sessions=30, exchanges_per_session=3, probe_days=(30,),
                      lines_per_reply=4)
# The story's exchanges: 0 S1:1 Lisbon, 2 S1:3 cat, 3 S1:4 phone, 4 S2:1 Miso,
# 5 S2:2 forget the phone, 7 S3:1 Porto (the city's update).


def story() -> dict:
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    # a probe of the city before it changes, so losing its first value shows
    data["probes"].append({"id": "city-2", "question": "Where does Ana live?",
                           "form": "literal", "session": 2, "expects": {"fact": "city"}})
    return data


def build(data: dict):
    return build_given((parse_format2(data),), [], SHAPE)


def hand(scenario, *writes: tuple[str, int] | tuple[str, int, str]) -> list[FactRecord]:
    """Records as a real extractor makes them: its own keys, the turn's words."""
    by_index = {e.index: e for e in scenario.exchanges}
    return [FactRecord(key, RecordAction.DELETE if rest else RecordAction.SET,
                       None if rest else by_index[i].user, by_index[i].day, i, by_index[i].user)
            for key, i, *rest in writes]


def effects(scenario, records) -> dict:
    profile = POLICIES["profile"](PARAMS.policies)
    report = evaluate_extractors(scenario, {"hand": records}, [profile], IndexCache())["hand"]
    return {c: v["changed"] for c, v in report["effects"]["profile"].items() if v["changed"]}


def test_gold_units_come_from_the_facts():
    units = gold_units(build(story()))
    assert [(u.fact_key, u.kind.value, u.exchanges, u.update) for u in units] == [
        ("city", "statement", (0,), False), ("phone", "statement", (3,), False),
        ("cat_name", "statement", (2, 4), False), ("phone", "deletion", (5,), False),
        ("city", "statement", (7,), True)]


def test_a_restatement_after_a_deletion_is_a_first_statement_again():
    data = story()
    data["sessions"][3]["turns"].append(
        {"id": "S4:2", "speaker": "Ana", "text": "You may keep my new number, 555-0199."})
    data["facts"][2]["versions"].append({"turns": ["S4:2"], "value": "555-0199",
                                         "answers": []})
    phone = [u for u in gold_units(build(data)) if u.fact_key == "phone"]
    assert [(u.kind.value, u.update) for u in phone] == [
        ("statement", False), ("deletion", False), ("statement", False)]


def test_the_perfect_extractor_is_exact_even_with_a_turn_stating_two_facts():
    data = story()
    # S1:3 also states a second fact alone, and a multi-turn version ends on S2:1
    data["facts"].append({"key": "pet", "versions": [
        {"turns": ["S1:3"], "value": "a cat", "answers": ["cat"]}]})
    scenario = build(data)
    q = measure(scenario, EXTRACTORS["perfect"](scenario)).as_json()
    assert (q["detection_precision"], q["detection_recall"]) == (1.0, 1.0)
    assert (q["detected"], q["gold"], q["gold_found"]) == (6, 6, 6)
    assert (q["updates"], q["update_accuracy"], q["deletion_recall"]) == (1, 1.0, 1.0)
    assert q["missed_updates"] == q["false_merges"] == q["missed_facts"] == 0
    assert q["false_deletions"] == 0


def test_a_missed_fact_and_a_missed_update_by_hand():
    scenario = build(story())
    # Lisbon kept; the cat's first turn skipped, its second kept; the phone never
    # extracted (nor its deletion); Porto added beside Lisbon instead of over it
    records = hand(scenario, ("m1", 0), ("m2", 4), ("m3", 7))
    q = measure(scenario, records)
    assert (q.detected, q.detected_gold, q.gold, q.gold_found) == (3, 3, 5, 3)
    assert q.as_json()["detection_recall"] == 0.6
    assert (q.updates, q.updates_correct, q.missed_updates) == (1, 0, 1)
    assert (q.missed_facts, q.deletions, q.deletions_recalled) == (1, 1, 0)
    assert sorted((e.day, e.fact_key, e.error) for e in q.events) == [
        (1, "phone", "missed_fact"),
        (2, "cat_name", "missed_fact"),  # found from S2:1, but S1:3 is lost: partial
        (3, "city", "missed_update")]
    # the profile: Lisbon beside Porto (conflict), the cat partial; both blamed
    assert effects(scenario, records) == {"missed_update": 1, "missed_fact": 1}


def test_a_false_merge_by_hand():
    scenario = build(story())
    # the cat overwrites the city's memory (the city is lost until Porto is stated)
    records = hand(scenario, ("m1", 0), ("m1", 2), ("m1", 4), ("m2", 3), ("m2", 5, "delete"),
                   ("m3", 7))
    q = measure(scenario, records)
    assert (q.detected, q.gold_found, q.false_merges, q.missed_facts) == (6, 5, 1, 0)
    assert (q.updates, q.updates_correct, q.missed_updates) == (1, 0, 0)
    assert (q.deletions_recalled, q.false_deletions) == (1, 0)
    assert [(e.day, e.fact_key, e.error) for e in q.events] == [
        (1, "city", "false_merge"), (2, "cat_name", "missed_fact")]
    # city-2 goes missing; by day 4 Porto is the profile's only city, as with perfect
    # and the cat's second turn overwrites its first: partial, blamed as a missed fact
    assert effects(scenario, records) == {"false_merge": 1, "missed_fact": 1}


def test_each_scenario_of_a_benchmark_is_replayed_with_its_own_memory(tmp_path):
    for sid in ("alpha", "beta"):
        (tmp_path / f"{sid}.json").write_text(json.dumps({**story(), "id": sid}),
                                              encoding="utf-8")
    (tmp_path / "manifest.json").write_text("{}", encoding="utf-8")
    scenario = build_given(read_scenario_source(tmp_path).specs, [], SHAPE, joined=True)
    q = measure(scenario, EXTRACTORS["perfect"](scenario)).as_json()
    assert (q["gold"], q["detection_precision"], q["detection_recall"]) == (10, 1.0, 1.0)
    # beta's first memory written with alpha's key would be alpha's memory in one replay
    n = len(scenario.exchanges) // 2
    records = hand(scenario, ("m1", 0), ("m1", n))
    assert measure(scenario, records).false_merges == 0
