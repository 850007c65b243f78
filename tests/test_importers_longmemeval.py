"""The LongMemEval importer on membench's example in LongMemEval's documented layout
(imports/examples/longmemeval-example.json)."""

from __future__ import annotations

import re

import pytest
from format2_layout import imported

from membench.importers.longmemeval import EARLIER_VALUE, convert, longmemeval_date
from membench.importers.model import SourceItemError


@pytest.fixture(scope="module")
def example(repo_root):
    return imported("longmemeval", repo_root / "imports/examples/longmemeval-example.json")


def test_one_scenario_per_question_with_its_haystack(example):
    scenarios, manifest = example
    assert sorted(scenarios) == ["longmemeval-ex001", "longmemeval-ex002", "longmemeval-ex003",
                                 "longmemeval-ex004_abs"]
    s = scenarios["longmemeval-ex001"]
    assert [x["date"] for x in s["sessions"]] == ["2023-05-01T09:00", "2023-05-10T18:30",
                                                  "2023-05-20T11:15"]
    assert s["sessions"][1]["turns"][0] == {
        "id": "answer_ex001_1:1", "speaker": "user",
        "text": "I just bought a Canyon road bike and need a helmet."}
    fact, = s["facts"]
    assert fact["versions"] == [{"turns": ["answer_ex001_1:1"], "value": "Canyon",
                                 "answers": ["Canyon"]}]
    probe, = s["probes"]
    assert probe["session"] == 3 and probe["expects"] == {"fact": "q-ex001"}
    assert probe["tags"] == {"category": "single-session-user",
                             "question_type": "single-session-user"}
    assert manifest["counts"]["questions"] == 5 and manifest["counts"]["probes"] == 4


def test_a_knowledge_update_is_a_changed_fact_in_date_order(example):
    s = example[0]["longmemeval-ex002"]
    # the file lists the newer answer session first; the scenario replays by date
    assert [x["date"] for x in s["sessions"]] == ["2023-05-02T08:00", "2023-05-05T12:00",
                                                  "2023-06-15T20:00"]
    fact, = s["facts"]
    assert fact["versions"] == [
        {"turns": ["answer_ex002_1:1"], "value": EARLIER_VALUE, "answers": []},
        {"turns": ["answer_ex002_2:1"], "value": "6 hours", "answers": ["6 hours"]}]
    assert example[1]["counts"]["changed_facts"] == 1


def test_multi_session_evidence_is_one_version_with_every_marked_turn(example):
    fact, = example[0]["longmemeval-ex003"]["facts"]
    assert fact["versions"] == [{"turns": ["answer_ex003_1:1", "answer_ex003_2:1"],
                                 "value": "2", "answers": ["2"]}]


def test_abstention_questions_expect_nothing(example):
    s = example[0]["longmemeval-ex004_abs"]
    probe, = s["probes"]
    assert probe["expects"] == {"nothing": True} and s["facts"] == []
    assert probe["evidence"] == ["answer_ex004_1:1"]
    assert probe["tags"]["category"] == "abstention"


def test_a_question_without_marked_evidence_is_dropped(example):
    assert example[1]["dropped"] == [{
        "item": "ex005", "question": "question", "category": "temporal-reasoning",
        "reason": "no turn marked has_answer in its answer sessions"}]


@pytest.mark.parametrize(("text", "iso"), [
    ("2023/05/20 (Sat) 02:21", "2023-05-20T02:21"), ("2023/5/2", "2023-05-02"),
    ("May 20, 2023", None), (None, None)])
def test_longmemeval_dates_become_iso(text, iso):
    assert longmemeval_date(text) == iso


def _question(**changes):
    item = {"question_id": "q1", "question_type": "single-session-user", "question": "?",
            "answer": "x", "haystack_session_ids": ["s1", "s1"],
            "haystack_dates": ["2023/01/02 (Mon) 10:00", "2023/01/01 (Sun) 10:00"],
            "haystack_sessions": [[{"role": "user", "content": "a", "has_answer": True}],
                                  [{"role": "user", "content": "b"}]],
            "answer_session_ids": ["s1", "s9"]}
    item.update(changes)
    return item


def test_a_repeated_session_id_gets_distinct_turn_ids_and_missing_ones_are_noted():
    converted = convert(0, _question())
    turns = [t["id"] for x in converted.scenario["sessions"] for t in x["turns"]]
    assert turns == ["s1:1", "s1@2:1"]  # the later-dated copy comes first, by date
    assert converted.scenario["facts"][0]["versions"][0]["turns"] == ["s1@2:1"]
    assert converted.notes == ["q1: answer session s9 is not in the haystack"]


def test_an_unreadable_date_keeps_the_file_order_undated():
    converted = convert(0, _question(haystack_dates=["soon", "later"]))
    assert [t["id"] for x in converted.scenario["sessions"] for t in x["turns"]] == ["s1:1",
                                                                                     "s1@2:1"]
    assert all("date" not in x for x in converted.scenario["sessions"])
    assert "sessions kept in the file's order" in converted.notes[0]


@pytest.mark.parametrize(("changes", "message"), [
    ({"haystack_dates": ["2023/01/01"]}, ("item 4 (q1): haystack_session_ids (2), "
                                          "haystack_dates (1) and haystack_sessions (2) differ")),
    ({"question_type": 3}, "item 4 (q1).question_type: expected the question type, got int"),
    ({"haystack_sessions": [[{"role": "user"}], []]},
     "item 4 (q1).haystack_sessions[0][0]: missing field 'content'"),
])
def test_a_malformed_question_is_an_error_naming_it(changes, message):
    with pytest.raises(SourceItemError, match="^" + re.escape(message)):
        convert(4, _question(**changes))
