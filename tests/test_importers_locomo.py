"""The LoCoMo importer on membench's own example in LoCoMo's layout
(imports/examples/locomo10-example.json): what is kept, what is dropped and why."""

from __future__ import annotations

import re

import pytest
from format2_layout import imported, layout_problems

from membench.importers.locomo import CATEGORIES, convert, locomo_date
from membench.importers.model import SourceItemError


@pytest.fixture(scope="module")
def example(repo_root):
    return imported("locomo", repo_root / "imports/examples/locomo10-example.json")


def _probe(scenario, question_index):
    label = scenario["source"]["sample_id"]
    return next(p for p in scenario["probes"] if p["id"] == f"{label}-q{question_index:04d}")


def test_one_scenario_per_conversation_replayed_in_order(example):
    scenarios, manifest = example
    assert sorted(scenarios) == ["locomo-ex-1", "locomo-ex-2"]
    s = scenarios["locomo-ex-1"]
    assert s["scoring"] == "evidence" and s["title"] == "LoCoMo ex-1 (Ada and Ben)"
    # session_3 is empty and session_5 has only a date: three sessions replayed
    assert [(x["number"], x.get("date")) for x in s["sessions"]] == [
        (1, "2024-03-03T09:05"), (2, "2024-03-17T18:40"), (3, "2024-04-05T20:00")]
    assert [t["id"] for t in s["sessions"][2]["turns"]] == ["D4:1", "D4:2"]
    assert s["sessions"][0]["turns"][2]["text"].endswith(
        "[shares a photo of a wooden shelf on a wall]")
    assert "ex-1: session_3 has no turns; left out" in manifest["notes"]
    assert s["source"]["file_sha256"] == manifest["source"]["sha256"]


def test_every_question_with_existing_evidence_is_kept(example):
    scenarios, manifest = example
    s = scenarios["locomo-ex-1"]
    facts = {f["key"]: f for f in s["facts"]}
    assert all(p["session"] == 3 for p in s["probes"])  # asked after the last session
    temporal = _probe(s, 3)
    assert temporal["tags"] == {"category": "temporal"}
    version = facts[temporal["expects"]["fact"]]["versions"]
    assert version == [{"turns": ["D2:2"], "value": "2019", "answers": ["2019"]}]
    multi = facts[_probe(s, 2)["expects"]["fact"]]["versions"][0]
    assert multi["turns"] == ["D1:2", "D4:2"] and _probe(s, 2)["tags"]["category"] == "multi-hop"
    assert facts[_probe(s, 5)["expects"]["fact"]]["versions"][0]["turns"] == ["D1:3"]
    assert manifest["counts"]["probes_by_category"] == {
        "adversarial": 2, "multi-hop": 1, "open-domain": 1, "single-hop": 3, "temporal": 2}
    assert manifest["counts"]["questions"] == 12 and manifest["counts"]["probes"] == 9


def test_adversarial_questions_are_abstention_probes(example):
    s = example[0]["locomo-ex-1"]
    with_evidence, without = _probe(s, 6), _probe(s, 7)
    assert with_evidence["expects"] == {"nothing": True}
    assert with_evidence["evidence"] == ["D4:1"]
    assert without["expects"] == {"nothing": True} and "evidence" not in without
    assert with_evidence["tags"] == {"category": "adversarial"}


def test_dropped_questions_are_listed_with_their_reason(example):
    dropped = example[1]["dropped"]
    assert dropped == [
        {"item": "ex-1", "question": "qa[4]", "category": "open-domain",
         "reason": "no evidence turns"},
        {"item": "ex-1", "question": "qa[8]", "category": "single-hop",
         "reason": "evidence id 'D9:9' names no turn of the conversation"},
        {"item": "ex-1", "question": "qa[9]", "category": None,
         "reason": "unknown category 7 (LoCoMo has 1-5)"}]
    assert example[1]["counts"]["dropped_by_category"] == {
        "open-domain": 1, "single-hop": 1, "unknown": 1}


def test_unambiguous_evidence_spellings_are_normalised_and_listed(example):
    found = {(n["item"], n["found"], n["used"]) for n in example[1]["normalised"]}
    assert found == {("ex-1", "D:2:1", "D2:1"), ("ex-1", "D1:2; D4:2", "D1:2"),
                     ("ex-1", "D1:2; D4:2", "D4:2"), ("ex-2", "d2:01", "D2:1")}
    s = example[0]["locomo-ex-2"]
    fact = next(f for f in s["facts"] if f["key"] == "q-ex-2-0001")
    assert fact["versions"][0]["turns"] == ["D2:1"]


def test_category_names_follow_locomos_evaluation_code():
    assert CATEGORIES == {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
                          5: "adversarial"}


@pytest.mark.parametrize(("text", "iso"), [
    ("1:56 pm on 8 May, 2023", "2023-05-08T13:56"), ("12:09 am on 13 September, 2023",
                                                     "2023-09-13T00:09"),
    ("12:30 pm on 1 Jan, 2024", "2024-01-01T12:30"), ("noon on 8 May", None),
    ("13:00 pm on 8 May, 2023", None)])
def test_locomo_dates_become_iso(text, iso):
    assert locomo_date(text) == iso


def _conversation(**changes):
    item = {"sample_id": "x", "conversation": {
        "speaker_a": "A", "speaker_b": "B", "session_1": [
            {"speaker": "A", "dia_id": "D1:1", "text": "I live in Rome."},
            {"speaker": "B", "dia_id": "D1:1", "text": "Same id again."},
            {"speaker": "A", "dia_id": "D1:2", "text": "I like tea."}]},
        "qa": [{"question": "Where?", "answer": "Rome", "evidence": ["D1:1"], "category": 4},
               {"question": "Drink?", "answer": "tea", "evidence": ["D1:2"], "category": 4}]}
    item.update(changes)
    return item


def test_a_repeated_turn_id_keeps_both_turns_but_is_no_evidence():
    converted = convert(0, _conversation())
    s = converted.scenario
    assert [t["id"] for t in s["sessions"][0]["turns"]] == ["D1:1", "D1:1#2", "D1:2"]
    assert layout_problems(s) == []
    assert [d.reason for d in converted.dropped] == ["evidence id 'D1:1' names several turns"]
    assert [p["id"] for p in s["probes"]] == ["x-q0001"]


@pytest.mark.parametrize(("item", "message"), [
    ([], "item 3: expected a conversation object, got list"),
    ({"sample_id": "x", "qa": []}, "item 3 (x): missing field 'conversation'"),
    (_conversation(qa={"question": "?"}), "item 3 (x).qa: expected a list of questions"),
    (_conversation(conversation={"session_1": [{"speaker": "A", "dia_id": "D1:1"}]}),
     "item 3 (x).conversation.session_1[0]: missing field 'text'"),
    (_conversation(qa=[{"answer": "Rome", "evidence": [], "category": 4}]),
     "item 3 (x).qa[0]: missing field 'question'"),
])
def test_a_malformed_item_is_an_error_naming_it(item, message):
    with pytest.raises(SourceItemError, match="^" + re.escape(message)):
        convert(3, item)


def test_a_category_given_as_text_is_read_as_its_number():
    qa = [{"question": "Drink?", "answer": "tea", "evidence": ["D1:2"], "category": "4"}]
    converted = convert(0, _conversation(qa=qa))
    assert converted.scenario["probes"][0]["tags"] == {"category": "single-hop"}
